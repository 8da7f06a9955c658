// corral::Dataset: an immutable labelled sparse matrix in CSR form.
//
// Rows are samples; row r's features are index()[row_ptr[r] .. row_ptr[r+1]) with values in
// value() at the same positions, indices strictly increasing within a row. Labels are floats
// (binary -1/+1 or 0/1, class ids, regression targets).
//
// Thread safety: immutable after construction, so any number of threads may read it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace corral {

// One sample's features: parallel spans of strictly increasing indices and their values.
struct SparseRow {
  std::span<const std::uint32_t> index;
  std::span<const float> value;

  std::size_t nnz() const { return index.size(); }
};

class Dataset {
 public:
  Dataset() = default;

  // Takes ownership of CSR arrays. Checks their shapes and index bounds and throws
  // corral::Error (kBadInput) naming `name` when they are inconsistent.
  Dataset(std::vector<std::uint64_t> row_ptr, std::vector<std::uint32_t> index,
          std::vector<float> value, std::vector<float> label, std::size_t num_features,
          std::string name = "dataset");

  std::size_t rows() const { return label_.size(); }
  std::size_t num_features() const { return num_features_; }
  std::size_t nnz() const { return index_.size(); }
  const std::string& name() const { return name_; }

  SparseRow Row(std::size_t r) const {
    const std::size_t begin = row_ptr_[r];
    const std::size_t count = row_ptr_[r + 1] - begin;
    return {std::span(index_).subspan(begin, count), std::span(value_).subspan(begin, count)};
  }
  float Label(std::size_t r) const { return label_[r]; }

  std::span<const std::uint64_t> row_ptr() const { return row_ptr_; }
  std::span<const std::uint32_t> index() const { return index_; }
  std::span<const float> value() const { return value_; }
  std::span<const float> labels() const { return label_; }

  // Largest number of non-zeros in any row (sizes per-worker gradient buffers).
  std::size_t max_row_nnz() const { return max_row_nnz_; }

  // A copy of rows [begin, end). The copy's memory is first touched by the calling thread,
  // which is how a worker places its shard on its own NUMA node.
  Dataset Slice(std::size_t begin, std::size_t end) const;

  // The same rows seen with a larger feature dimension (so a test set agrees with its train
  // set when it never reaches the highest index). Throws if `num_features` is smaller.
  Dataset WithNumFeatures(std::size_t num_features) const&;
  Dataset WithNumFeatures(std::size_t num_features) &&;

 private:
  std::vector<std::uint64_t> row_ptr_{0};
  std::vector<std::uint32_t> index_;
  std::vector<float> value_;
  std::vector<float> label_;
  std::size_t num_features_ = 0;
  std::size_t max_row_nnz_ = 0;
  std::string name_ = "dataset";
};

}  // namespace corral
