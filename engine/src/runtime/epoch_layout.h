// --shuffle epoch: a worker's rows copied into its epoch's visiting order, then read in order.
//
// Why: on sparse data one SGD step is a few dozen multiply-adds, so it costs what it reads.
// Visiting a shard through a random index misses the cache on nearly every row (and its
// label), one dependent miss per step even with prefetching. Copying the rows into the epoch's
// permuted layout first is one pass whose reads are independent (the memory system overlaps
// them) and whose writes stream; the steps then read the copy as a stream. The visiting order
// and the random draws are those of --shuffle index, so every sample sequence, and every
// result, is the same bit for bit. The price is memory: one copy of the worker's shard,
// allocated once before training (never per epoch) and first touched by the worker.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <corral/dataset.h>
#include <corral/kinds.h>
#include <corral/limits.h>

namespace corral::internal {

// Rows gathered in order: a row's start is prefetched this many rows ahead of its copy.
inline constexpr std::size_t kGatherAhead = 16;

// dst row k = src row order[k], for CSR arrays given as row offsets and any number of entry
// arrays (index, value): `dst_begin` and each destination array are already sized like the
// source's. `order` is a permutation of the source's rows.
template <typename... Entry>
void GatherRows(std::span<const std::uint64_t> src_begin, std::span<const std::uint32_t> order,
                std::span<std::uint64_t> dst_begin, std::pair<const Entry*, Entry*>... entries) {
  std::uint64_t at = 0;
  dst_begin[0] = 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (k + kGatherAhead < order.size()) {
      const std::uint64_t ahead = src_begin[order[k + kGatherAhead]];
      (__builtin_prefetch(entries.first + ahead), ...);
    }
    const std::uint32_t r = order[k];
    const std::uint64_t first = src_begin[r];
    const std::uint64_t count = src_begin[r + 1] - first;
    ((std::memcpy(entries.second + at, entries.first + first, count * sizeof(Entry))), ...);
    at += count;
    dst_begin[k + 1] = at;
  }
}

// A worker's rows in storage order and their copy in the current epoch's order.
// Thread safety: owner-only (built and permuted by its worker, on the worker's thread).
class EpochLayout {
 public:
  // Keeps `stored` (the worker's shard) and allocates the permuted copy, filled in storage
  // order until the first Permute. On the worker's thread (first touch).
  void Build(Dataset stored) {
    stored_ = std::move(stored);
    auto copy = std::make_shared<Arrays>();
    copy->value.assign(stored_.value().begin(), stored_.value().end());
    copy->label.assign(stored_.labels().begin(), stored_.labels().end());
    if (stored_.is_dense()) {
      view_ = Dataset::WrapDense(copy->value, copy->label, stored_.num_features(), copy, stored_.name());
    } else {
      copy->row_ptr.assign(stored_.row_ptr().begin(), stored_.row_ptr().end());
      copy->index.assign(stored_.index().begin(), stored_.index().end());
      const CsrView csr{.row_ptr = copy->row_ptr,
                        .index = copy->index,
                        .value = copy->value,
                        .label = copy->label,
                        .num_features = stored_.num_features()};
      view_ = Dataset::WrapSparse(csr, copy, stored_.name()).WithRatings(stored_.ratings_shared());
    }
    copy_ = std::move(copy);
  }

  bool active() const { return copy_ != nullptr; }
  // The rows as the worker reads them: after Permute(order), row k is stored row order[k].
  const Dataset& view() const { return view_; }
  // The memory the copy takes beyond the stored shard.
  std::uint64_t CopyBytes() const {
    if (copy_ == nullptr) return 0;
    return copy_->row_ptr.size() * sizeof(std::uint64_t) + copy_->index.size() * sizeof(std::uint32_t) +
           (copy_->value.size() + copy_->label.size()) * sizeof(float);
  }

  // Lays the copy out in `order` (a permutation of the stored rows): no allocation. The copy's
  // arrays are ours and not const; view() sees them through const spans.
  void Permute(std::span<const std::uint32_t> order) {
    Arrays& c = *copy_;
    const std::span<const float> labels = stored_.labels();
    for (std::size_t k = 0; k < order.size(); ++k) c.label[k] = labels[order[k]];
    if (stored_.is_dense()) {
      const std::size_t f = stored_.num_features();
      for (std::size_t k = 0; k < order.size(); ++k) {
        if (k + kGatherAhead < order.size()) {
          __builtin_prefetch(stored_.value().data() + order[k + kGatherAhead] * f);
        }
        std::memcpy(c.value.data() + k * f, stored_.value().data() + order[k] * f, f * sizeof(float));
      }
      return;
    }
    GatherRows<std::uint32_t, float>(stored_.row_ptr(), order, c.row_ptr,
                                     {stored_.index().data(), c.index.data()},
                                     {stored_.value().data(), c.value.data()});
  }

 private:
  struct Arrays {
    std::vector<std::uint64_t> row_ptr;
    std::vector<std::uint32_t> index;
    std::vector<float> value;
    std::vector<float> label;
  };
  Dataset stored_;
  std::shared_ptr<Arrays> copy_;  // view_ keeps it alive too
  Dataset view_;
};

// The bytes of a data set's arrays: what one more copy of it takes.
inline double DataBytes(const Dataset& data) {
  return static_cast<double>(data.row_ptr().size()) * sizeof(std::uint64_t) +
         static_cast<double>(data.is_dense() ? 0 : data.index().size()) * sizeof(std::uint32_t) +
         static_cast<double>(data.value().size() + data.labels().size()) * sizeof(float);
}

// The visiting order a run uses: `requested`, or index when epoch's copies (one per worker,
// `data_bytes` in all) would not fit beside the loaded set and the workers' shards (three
// copies in all) in `limit_bytes` (MemoryLimitBytes). `note` says why it fell back.
inline Shuffle ResolveShuffle(Shuffle requested, double data_bytes, double limit_bytes,
                              std::string& note) {
  note.clear();
  if (requested != Shuffle::kEpoch || 3 * data_bytes <= limit_bytes) return requested;
  note = "index: --shuffle epoch needs " + FormatBytes(data_bytes) +
         " more (a copy of the data), and the data set, its shards and that copy exceed the " +
         FormatBytes(limit_bytes) + " this process may use";
  return Shuffle::kIndex;
}

}  // namespace corral::internal
