// corral::Dataset: an immutable labelled matrix, sparse (CSR) or dense (row-major).
//
// Sparse: row r's features are index()[row_ptr[r] .. row_ptr[r+1]) with values in value() at
// the same positions, indices strictly increasing within a row. Dense: value() holds
// rows x num_features floats row-major; Row(r) still returns a SparseRow whose index span is
// 0 .. num_features-1 (one shared array), so every model written for sparse rows runs on dense
// data unchanged, and DenseRow(r) gives the plain values. Labels are floats (binary -1/+1 or
// 0/1, class ids, regression targets, ratings). A set may carry a weight per row (WithWeights):
// the factor on that sample's loss in training and in the objective (--weights); without one
// every row weighs 1.
//
// Storage: the arrays are spans over memory kept alive by a shared owner: vectors the dataset
// was built from, a memory-mapped cache file, or (through Wrap*) a caller's own arrays. So a
// copy of a Dataset is cheap (it shares the memory), and loading a cache copies nothing.
// Slice() and Gather() are the explicit copies: their memory is first touched by the calling
// thread, which is how a worker places its shard on its own NUMA node.
//
// Thread safety: immutable after construction, so any number of threads may read it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <corral/ratings_info.h>

namespace corral {

namespace detail {
struct DatasetAccess;  // the loaders' way around re-validating arrays they just built
}  // namespace detail

// One sample's features: parallel spans of strictly increasing indices and their values.
struct SparseRow {
  std::span<const std::uint32_t> index;
  std::span<const float> value;

  std::size_t nnz() const { return index.size(); }
};

// Borrowed CSR arrays, for Dataset::WrapSparse.
struct CsrView {
  std::span<const std::uint64_t> row_ptr;  // rows + 1 offsets, starting at 0
  std::span<const std::uint32_t> index;
  std::span<const float> value;
  std::span<const float> label;
  std::size_t num_features = 0;
};

class Dataset {
 public:
  Dataset();

  // Takes ownership of CSR arrays. Checks their shapes and index bounds and throws
  // corral::Error (kBadInput) naming `name` when they are inconsistent.
  Dataset(std::vector<std::uint64_t> row_ptr, std::vector<std::uint32_t> index,
          std::vector<float> value, std::vector<float> label, std::size_t num_features,
          std::string name = "dataset");

  // A dense set: `values` holds labels.size() x num_features floats, row-major.
  static Dataset Dense(std::vector<float> values, std::vector<float> labels,
                       std::size_t num_features, std::string name = "dataset");

  // Views arrays that `owner` keeps alive (no copy); validated like the constructors.
  static Dataset WrapSparse(const CsrView& csr, std::shared_ptr<const void> owner,
                            std::string name);
  static Dataset WrapDense(std::span<const float> values, std::span<const float> labels,
                           std::size_t num_features, std::shared_ptr<const void> owner,
                           std::string name);

  // The same rows, marked as ratings with this id mapping. Throws kBadInput unless every row
  // is exactly {user, num_users + item} with value 1 and num_features = num_users + num_items.
  Dataset WithRatings(std::shared_ptr<const RatingsInfo> info) const;

  std::size_t rows() const { return label_.size(); }
  std::size_t num_features() const { return num_features_; }
  // Stored entries (explicit zeros included); rows x num_features for a dense set.
  std::size_t nnz() const { return value_.size(); }
  const std::string& name() const { return name_; }
  bool is_dense() const { return dense_; }
  // The id mapping of a ratings set, else nullptr.
  const RatingsInfo* ratings() const { return ratings_.get(); }
  const std::shared_ptr<const RatingsInfo>& ratings_shared() const { return ratings_; }

  SparseRow Row(std::size_t r) const {
    const std::size_t begin = row_ptr_[r];
    const std::size_t count = row_ptr_[r + 1] - begin;
    // Dense rows all share the column array 0..F-1, so their index span starts at 0.
    return {index_.subspan(dense_ ? 0 : begin, count), value_.subspan(begin, count)};
  }
  // A dense row's values. \pre is_dense()
  std::span<const float> DenseRow(std::size_t r) const {
    return value_.subspan(r * num_features_, num_features_);
  }
  float Label(std::size_t r) const { return label_[r]; }
  // Row r's weight: its factor on the sample's loss (1 in a set without weights).
  float Weight(std::size_t r) const { return weight_.empty() ? 1.0f : weight_[r]; }
  // One weight per row, or empty when the set has none (every row weighs 1).
  std::span<const float> weights() const { return weight_; }
  bool weighted() const { return !weight_.empty(); }

  // The same rows with these weights, one per row, finite and >= 0 (viewed, not copied;
  // `owner` keeps them alive). Throws corral::Error (kBadInput, naming `source`, and the row
  // for a bad value) for a count other than rows(), or a weight below 0, NaN or infinite. An
  // empty span removes the weights.
  Dataset WithWeights(std::span<const float> weights, std::shared_ptr<const void> owner,
                      const std::string& source) const;
  Dataset WithWeights(std::vector<float> weights, const std::string& source) const;

  // rows + 1 offsets into value() (r x num_features for a dense set).
  std::span<const std::uint64_t> row_ptr() const { return row_ptr_; }
  // Column of every stored value. A dense set has no such array: this is the shared
  // 0..num_features-1 (value k's column is k % num_features).
  std::span<const std::uint32_t> index() const { return index_; }
  std::span<const float> value() const { return value_; }
  std::span<const float> labels() const { return label_; }

  // Largest number of stored entries in any row (sizes per-worker gradient buffers).
  std::size_t max_row_nnz() const { return max_row_nnz_; }

  // Copies and views keep each row's weight beside it.
  // A copy of rows [begin, end), first touched by the calling thread.
  Dataset Slice(std::size_t begin, std::size_t end) const;
  // Rows [begin, end) without a copy: they share this set's memory (and keep it alive); only
  // the row offsets are new (8 bytes a row; a dense set's column array too). For reading in
  // place where a copy buys nothing (every reader on one NUMA node). Throws kBadConfig for a
  // range out of bounds.
  Dataset Rows(std::size_t begin, std::size_t end) const;
  // A copy of the given rows in the given order (repeats allowed), first touched by the
  // calling thread. Throws kBadConfig for a row out of range.
  Dataset Gather(std::span<const std::size_t> rows) const;

  // The same rows seen with a larger feature dimension (so a test set agrees with its train
  // set when it never reaches the highest index). Throws if `num_features` is smaller. A
  // dense set is copied with zero columns appended; kBadInput when that copy would not fit in
  // memory (<corral/limits.h>).
  Dataset WithNumFeatures(std::size_t num_features) const&;
  Dataset WithNumFeatures(std::size_t num_features) &&;

 private:
  friend struct detail::DatasetAccess;
  void Validate() const;
  void ComputeMaxRowNnz();
  void SetDenseShape(std::size_t rows, std::size_t num_features);

  std::shared_ptr<const void> owner_;    // keeps value_, label_ (and sparse arrays) alive
  std::shared_ptr<const void> layout_;   // dense: row offsets and the column array; Rows(): offsets
  std::shared_ptr<const RatingsInfo> ratings_;
  std::shared_ptr<const void> weight_owner_;  // keeps weight_ alive (a caller's, or a copy's)
  std::span<const std::uint64_t> row_ptr_;
  std::span<const std::uint32_t> index_;
  std::span<const float> value_;
  std::span<const float> label_;
  std::span<const float> weight_;  // empty: every row weighs 1
  std::size_t num_features_ = 0;
  std::size_t max_row_nnz_ = 0;
  bool dense_ = false;
  std::string name_ = "dataset";
};

}  // namespace corral
