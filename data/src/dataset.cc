// corral::Dataset: CSR validation, slicing and re-dimensioning.
#include <corral/dataset.h>

#include <algorithm>
#include <string>
#include <utility>

#include <corral/error.h>

namespace corral {
namespace {

[[noreturn]] void ThrowBadInput(const std::string& name, const std::string& what) {
  throw Error(ErrorCode::kBadInput, name + ": " + what);
}

}  // namespace

Dataset::Dataset(std::vector<std::uint64_t> row_ptr, std::vector<std::uint32_t> index,
                 std::vector<float> value, std::vector<float> label, std::size_t num_features,
                 std::string name)
    : row_ptr_(std::move(row_ptr)),
      index_(std::move(index)),
      value_(std::move(value)),
      label_(std::move(label)),
      num_features_(num_features),
      name_(std::move(name)) {
  // Every reader and every kernel trusts these invariants without re-checking them, so a
  // hand-built or corrupted CSR must fail here rather than read out of bounds later.
  const std::size_t rows = label_.size();
  if (row_ptr_.size() != rows + 1) {
    ThrowBadInput(name_, "row_ptr has " + std::to_string(row_ptr_.size()) +
                             " entries, expected rows + 1 = " + std::to_string(rows + 1));
  }
  if (row_ptr_[0] != 0) {
    ThrowBadInput(name_, "row_ptr[0] is " + std::to_string(row_ptr_[0]) + ", expected 0");
  }
  if (index_.size() != value_.size()) {
    ThrowBadInput(name_, "index has " + std::to_string(index_.size()) + " entries but value has " +
                             std::to_string(value_.size()) + ", expected the same count");
  }
  if (row_ptr_.back() != index_.size()) {
    ThrowBadInput(name_, "row_ptr ends at " + std::to_string(row_ptr_.back()) +
                             ", expected the number of non-zeros " +
                             std::to_string(index_.size()));
  }
  for (std::size_t r = 0; r < rows; ++r) {
    const std::uint64_t begin = row_ptr_[r];
    const std::uint64_t end = row_ptr_[r + 1];
    if (end < begin) {
      ThrowBadInput(name_, "row_ptr decreases at row " + std::to_string(r) + " (" +
                               std::to_string(end) + " after " + std::to_string(begin) +
                               "), expected non-decreasing offsets");
    }
    // The last row's end equals index_.size(), so a non-decreasing row_ptr keeps every row in
    // bounds; checking before reading means a bad row_ptr never reads past index_.
    if (end > index_.size()) {
      ThrowBadInput(name_, "row " + std::to_string(r) + " ends at " + std::to_string(end) +
                               ", beyond the " + std::to_string(index_.size()) + " non-zeros");
    }
    max_row_nnz_ = std::max<std::size_t>(max_row_nnz_, end - begin);
    for (std::uint64_t k = begin; k < end; ++k) {
      if (index_[k] >= num_features_) {
        ThrowBadInput(name_, "row " + std::to_string(r) + " has feature index " +
                                 std::to_string(index_[k]) + ", expected < num_features " +
                                 std::to_string(num_features_));
      }
      if (k > begin && index_[k] <= index_[k - 1]) {
        ThrowBadInput(name_, "row " + std::to_string(r) + " has feature index " +
                                 std::to_string(index_[k]) + " after " +
                                 std::to_string(index_[k - 1]) +
                                 ", expected strictly increasing indices");
      }
    }
  }
}

Dataset Dataset::Slice(std::size_t begin, std::size_t end) const {
  if (begin > end || end > rows()) {
    throw Error(ErrorCode::kBadConfig,
                name_ + ": cannot slice rows [" + std::to_string(begin) + ", " +
                    std::to_string(end) + "), expected begin <= end <= " +
                    std::to_string(rows()));
  }
  // The source is already valid, so the copy is assembled directly instead of re-validated:
  // a shard copy is on every worker's start-up path.
  Dataset out;
  const std::uint64_t base = row_ptr_[begin];
  const std::uint64_t stop = row_ptr_[end];
  out.row_ptr_.resize(end - begin + 1);
  for (std::size_t r = begin; r <= end; ++r) {
    out.row_ptr_[r - begin] = row_ptr_[r] - base;
  }
  out.index_.assign(index_.begin() + base, index_.begin() + stop);
  out.value_.assign(value_.begin() + base, value_.begin() + stop);
  out.label_.assign(label_.begin() + begin, label_.begin() + end);
  out.num_features_ = num_features_;
  out.name_ = name_;
  for (std::size_t r = 0; r + 1 < out.row_ptr_.size(); ++r) {
    out.max_row_nnz_ =
        std::max<std::size_t>(out.max_row_nnz_, out.row_ptr_[r + 1] - out.row_ptr_[r]);
  }
  return out;
}

Dataset Dataset::WithNumFeatures(std::size_t num_features) const& {
  Dataset copy = *this;
  return std::move(copy).WithNumFeatures(num_features);
}

Dataset Dataset::WithNumFeatures(std::size_t num_features) && {
  if (num_features < num_features_) {
    throw Error(ErrorCode::kBadInput,
                name_ + ": cannot narrow the feature dimension from " +
                    std::to_string(num_features_) + " to " + std::to_string(num_features) +
                    ", expected at least " + std::to_string(num_features_));
  }
  num_features_ = num_features;
  return std::move(*this);
}

}  // namespace corral
