// corral::Dataset: storage, validation, copies (slice, gather) and re-dimensioning.
#include <corral/dataset.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <utility>

#include <corral/error.h>
#include <corral/limits.h>

#include "data/src/dataset_access.h"

namespace corral {
namespace {

[[noreturn]] void ThrowBadInput(const std::string& name, const std::string& what) {
  throw Error(ErrorCode::kBadInput, name + ": " + what);
}

// The row offsets of an empty sparse set: one zero, so row_ptr() always has rows + 1 entries.
constexpr std::uint64_t kEmptyRowPtr[1] = {0};

// Vectors a dataset owns; the spans point into them. Moving a vector keeps its buffer, so the
// spans taken after the move stay valid for the holder's lifetime.
struct OwnedCsr {
  std::vector<std::uint64_t> row_ptr;
  std::vector<std::uint32_t> index;
  std::vector<float> value;
  std::vector<float> label;
  std::vector<float> weight;  // empty for a set without weights
};

// A dense set's row offsets (r * F) and its one column array 0..F-1, shared by every row.
struct DenseLayout {
  std::vector<std::uint64_t> row_ptr;
  std::vector<std::uint32_t> columns;
};

}  // namespace

Dataset::Dataset() : row_ptr_(kEmptyRowPtr) {}

Dataset::Dataset(std::vector<std::uint64_t> row_ptr, std::vector<std::uint32_t> index,
                 std::vector<float> value, std::vector<float> label, std::size_t num_features,
                 std::string name)
    : num_features_(num_features), name_(std::move(name)) {
  auto owned = std::make_shared<OwnedCsr>(
      OwnedCsr{std::move(row_ptr), std::move(index), std::move(value), std::move(label)});
  row_ptr_ = owned->row_ptr;
  index_ = owned->index;
  value_ = owned->value;
  label_ = owned->label;
  owner_ = std::move(owned);
  Validate();
  ComputeMaxRowNnz();
}

Dataset Dataset::Dense(std::vector<float> values, std::vector<float> labels,
                       std::size_t num_features, std::string name) {
  auto owned = std::make_shared<OwnedCsr>(OwnedCsr{{}, {}, std::move(values), std::move(labels)});
  const std::span<const float> value = owned->value;
  const std::span<const float> label = owned->label;
  return WrapDense(value, label, num_features, std::move(owned), std::move(name));
}

Dataset Dataset::WrapSparse(const CsrView& csr, std::shared_ptr<const void> owner,
                            std::string name) {
  Dataset d;
  d.owner_ = std::move(owner);
  d.row_ptr_ = csr.row_ptr;
  d.index_ = csr.index;
  d.value_ = csr.value;
  d.label_ = csr.label;
  d.num_features_ = csr.num_features;
  d.name_ = std::move(name);
  d.Validate();
  d.ComputeMaxRowNnz();
  return d;
}

Dataset detail::DatasetAccess::WrapParsedSparse(const CsrView& csr,
                                                 std::shared_ptr<const void> owner,
                                                 std::string name) {
  Dataset d;
  d.owner_ = std::move(owner);
  d.row_ptr_ = csr.row_ptr;
  d.index_ = csr.index;
  d.value_ = csr.value;
  d.label_ = csr.label;
  d.num_features_ = csr.num_features;
  d.name_ = std::move(name);
  d.ComputeMaxRowNnz();
  return d;
}

Dataset Dataset::WrapDense(std::span<const float> values, std::span<const float> labels,
                           std::size_t num_features, std::shared_ptr<const void> owner,
                           std::string name) {
  Dataset d;
  d.name_ = std::move(name);
  CheckFeatureCount(num_features, ErrorCode::kBadInput, d.name_);
  // Division instead of rows * F: a hostile shape must not overflow into a match.
  const bool shape_ok = num_features == 0
                            ? values.empty()
                            : values.size() % num_features == 0 &&
                                  values.size() / num_features == labels.size();
  if (!shape_ok) {
    ThrowBadInput(d.name_, "dense set has " + std::to_string(values.size()) + " values for " +
                               std::to_string(labels.size()) + " rows of " +
                               std::to_string(num_features) +
                               " features, expected rows x features");
  }
  d.owner_ = std::move(owner);
  d.value_ = values;
  d.label_ = labels;
  d.SetDenseShape(labels.size(), num_features);
  return d;
}

void Dataset::SetDenseShape(std::size_t rows, std::size_t num_features) {
  auto layout = std::make_shared<DenseLayout>();
  layout->row_ptr.resize(rows + 1);
  for (std::size_t r = 0; r <= rows; ++r) layout->row_ptr[r] = r * num_features;
  // No row reads the column array of an empty set, and its width is only a number then: a
  // header declaring 0 rows of 2^32 features must not cost 16 GB.
  if (rows > 0) {
    layout->columns.resize(num_features);
    std::iota(layout->columns.begin(), layout->columns.end(), std::uint32_t{0});
  }
  row_ptr_ = layout->row_ptr;
  index_ = layout->columns;
  layout_ = std::move(layout);
  num_features_ = num_features;
  dense_ = true;
  max_row_nnz_ = rows == 0 ? 0 : num_features;
}

void Dataset::Validate() const {
  // Every reader and every kernel trusts these invariants without re-checking them, so a
  // hand-built, wrapped or corrupted CSR must fail here rather than read out of bounds later.
  const std::size_t rows = label_.size();
  CheckFeatureCount(num_features_, ErrorCode::kBadInput, name_);
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
  // Fast pass without building messages; the loop below, which names the first problem,
  // runs only when this one found something. Validation is on every load's path.
  const std::uint64_t* offsets = row_ptr_.data();
  const std::uint32_t* columns = index_.data();
  const std::uint64_t stored = index_.size();
  const std::uint64_t limit = num_features_;
  bool ok = true;
  for (std::size_t r = 0; r < rows && ok; ++r) {
    const std::uint64_t begin = offsets[r];
    const std::uint64_t end = offsets[r + 1];
    if (end < begin || end > stored) {
      ok = false;
      break;
    }
    std::uint64_t previous_plus_one = 0;  // strictly increasing: column >= previous + 1
    bool row_ok = true;
    for (std::uint64_t k = begin; k < end; ++k) {
      const std::uint64_t c = columns[k];
      row_ok &= (c >= previous_plus_one) & (c < limit);
      previous_plus_one = c + 1;
    }
    ok = row_ok;
  }
  if (ok) return;
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

void Dataset::ComputeMaxRowNnz() {
  max_row_nnz_ = 0;
  for (std::size_t r = 0; r + 1 < row_ptr_.size(); ++r) {
    max_row_nnz_ = std::max<std::size_t>(max_row_nnz_, row_ptr_[r + 1] - row_ptr_[r]);
  }
}

Dataset Dataset::WithRatings(std::shared_ptr<const RatingsInfo> info) const {
  if (info == nullptr) return *this;
  const RatingsInfo& m = *info;
  const auto fail = [&](const std::string& what) { ThrowBadInput(name_, "ratings: " + what); };
  if (dense_) fail("a dense set cannot hold ratings, expected a sparse set");
  if (m.user_ids.size() != m.num_users || m.item_ids.size() != m.num_items ||
      m.known_users > m.num_users || m.known_items > m.num_items) {
    fail("the id mapping's sizes disagree, expected " + std::to_string(m.num_users) +
         " user ids and " + std::to_string(m.num_items) + " item ids");
  }
  if (num_features_ != m.num_users + m.num_items) {
    fail("num_features is " + std::to_string(num_features_) + ", expected num_users + num_items = " +
         std::to_string(m.num_users + m.num_items));
  }
  for (std::size_t r = 0; r < rows(); ++r) {
    const SparseRow row = Row(r);
    if (row.nnz() != 2 || row.index[0] >= m.num_users || row.index[1] < m.num_users ||
        row.value[0] != 1.0f || row.value[1] != 1.0f) {
      fail("row " + std::to_string(r) + " is not {user, num_users + item} with values 1");
    }
  }
  Dataset out = *this;
  out.ratings_ = std::move(info);
  return out;
}

Dataset Dataset::Slice(std::size_t begin, std::size_t end) const {
  if (begin > end || end > rows()) {
    throw Error(ErrorCode::kBadConfig,
                name_ + ": cannot slice rows [" + std::to_string(begin) + ", " +
                    std::to_string(end) + "), expected begin <= end <= " +
                    std::to_string(rows()));
  }
  std::vector<std::size_t> order(end - begin);
  std::iota(order.begin(), order.end(), begin);
  return Gather(order);
}

Dataset Dataset::Rows(std::size_t begin, std::size_t end) const {
  if (begin > end || end > rows()) {
    throw Error(ErrorCode::kBadConfig,
                name_ + ": cannot view rows [" + std::to_string(begin) + ", " +
                    std::to_string(end) + "), expected begin <= end <= " +
                    std::to_string(rows()));
  }
  Dataset out = *this;  // shares owner_ (the arrays), ratings_ and the name
  const std::uint64_t first = row_ptr_[begin];
  const std::uint64_t last = row_ptr_[end];
  out.label_ = label_.subspan(begin, end - begin);
  if (!weight_.empty()) out.weight_ = weight_.subspan(begin, end - begin);
  out.value_ = value_.subspan(first, last - first);
  if (dense_) {
    out.SetDenseShape(end - begin, num_features_);
  } else {
    auto offsets = std::make_shared<std::vector<std::uint64_t>>(end - begin + 1);
    for (std::size_t r = begin; r <= end; ++r) (*offsets)[r - begin] = row_ptr_[r] - first;
    out.row_ptr_ = *offsets;
    out.index_ = index_.subspan(first, last - first);
    out.layout_ = std::move(offsets);
    out.ComputeMaxRowNnz();
  }
  return out;
}

Dataset Dataset::Gather(std::span<const std::size_t> rows_wanted) const {
  for (std::size_t r : rows_wanted) {
    if (r >= rows()) {
      throw Error(ErrorCode::kBadConfig, name_ + ": cannot gather row " + std::to_string(r) +
                                             ", expected a row below " + std::to_string(rows()));
    }
  }
  // The source is already valid, so the copy is assembled directly instead of re-validated:
  // a shard copy is on every worker's start-up path. Every vector is allocated and written
  // here, by the calling thread, so its pages land on that thread's NUMA node.
  auto owned = std::make_shared<OwnedCsr>();
  owned->label.resize(rows_wanted.size());
  if (!weight_.empty()) owned->weight.resize(rows_wanted.size());
  std::size_t total = 0;
  for (std::size_t r : rows_wanted) total += row_ptr_[r + 1] - row_ptr_[r];
  owned->value.resize(total);
  if (!dense_) {
    owned->index.resize(total);
    owned->row_ptr.resize(rows_wanted.size() + 1);
    owned->row_ptr[0] = 0;
  }
  std::uint64_t at = 0;
  for (std::size_t i = 0; i < rows_wanted.size(); ++i) {
    const std::size_t r = rows_wanted[i];
    const SparseRow row = Row(r);
    std::copy(row.value.begin(), row.value.end(), owned->value.begin() + static_cast<std::ptrdiff_t>(at));
    if (!dense_) {
      std::copy(row.index.begin(), row.index.end(),
                owned->index.begin() + static_cast<std::ptrdiff_t>(at));
      owned->row_ptr[i + 1] = at + row.nnz();
    }
    owned->label[i] = label_[r];
    if (!weight_.empty()) owned->weight[i] = weight_[r];
    at += row.nnz();
  }
  Dataset out;
  out.name_ = name_;
  out.ratings_ = ratings_;
  out.value_ = owned->value;
  out.label_ = owned->label;
  out.weight_ = owned->weight;
  if (dense_) {
    out.SetDenseShape(rows_wanted.size(), num_features_);
  } else {
    out.row_ptr_ = owned->row_ptr;
    out.index_ = owned->index;
    out.num_features_ = num_features_;
    out.ComputeMaxRowNnz();
  }
  out.owner_ = std::move(owned);
  return out;
}

Dataset Dataset::WithWeights(std::span<const float> weights, std::shared_ptr<const void> owner,
                             const std::string& source) const {
  Dataset out = *this;
  out.weight_ = {};
  out.weight_owner_ = nullptr;
  if (weights.empty()) return out;
  if (weights.size() != rows()) {
    ThrowBadInput(source, "has " + std::to_string(weights.size()) + " weights for the " +
                              std::to_string(rows()) + " rows of " + name_ +
                              ", expected one weight per row");
  }
  for (std::size_t r = 0; r < weights.size(); ++r) {
    const float w = weights[r];
    if (!(w >= 0.0f) || !std::isfinite(w)) {
      char text[32];
      std::snprintf(text, sizeof text, "%g", static_cast<double>(w));
      ThrowBadInput(source, "row " + std::to_string(r) + "'s weight is " + text + ", expected a finite number >= 0");
    }
  }
  out.weight_ = weights;
  out.weight_owner_ = std::move(owner);
  return out;
}

Dataset Dataset::WithWeights(std::vector<float> weights, const std::string& source) const {
  auto owned = std::make_shared<std::vector<float>>(std::move(weights));
  const std::span<const float> view = *owned;
  return WithWeights(view, std::move(owned), source);
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
  if (num_features == num_features_) return std::move(*this);
  if (ratings_ != nullptr) {
    throw Error(ErrorCode::kBadInput,
                name_ + ": cannot widen a ratings set, expected its own dimension num_users + "
                        "num_items = " + std::to_string(num_features_));
  }
  if (dense_) {
    CheckFeatureCount(num_features, ErrorCode::kBadInput, name_);
    CheckMemory({static_cast<double>(rows()), static_cast<double>(num_features), sizeof(float)},
                ErrorCode::kBadInput, name_,
                "the dense set with " + std::to_string(num_features) + " features");
    std::vector<float> values(rows() * num_features, 0.0f);
    for (std::size_t r = 0; r < rows(); ++r) {
      const std::span<const float> row = DenseRow(r);
      std::copy(row.begin(), row.end(),
                values.begin() + static_cast<std::ptrdiff_t>(r * num_features));
    }
    Dataset wide = Dense(std::move(values), {label_.begin(), label_.end()}, num_features, name_);
    wide.weight_ = weight_;
    wide.weight_owner_ = weight_owner_;
    return wide;
  }
  num_features_ = num_features;
  return std::move(*this);
}

}  // namespace corral
