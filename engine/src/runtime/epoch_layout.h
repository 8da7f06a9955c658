// --shuffle epoch: a worker's rows copied into its epoch's visiting order, then read in order.
//
// Why: on sparse data one SGD step is a few dozen multiply-adds, so it costs what it reads.
// Visiting a shard through a random index misses the cache on nearly every row (and its
// label), one dependent miss per step even with prefetching. Copying the rows into the epoch's
// permuted layout first is one pass whose reads are independent (the memory system overlaps
// them) and whose writes stream; the steps then read the copy as a stream. The visiting order
// and the random draws are those of --shuffle index, so every sample sequence, and every
// result, is the same bit for bit. The price is memory: one copy of the worker's shard,
// allocated once before training (never per epoch), in huge pages (huge_pages.h) and first
// touched by the worker.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <corral/dataset.h>
#include <corral/kinds.h>
#include <corral/limits.h>

#include "engine/src/runtime/huge_pages.h"
#include "engine/src/runtime/placement.h"

namespace corral::internal {

// Rows gathered in order: a row's offsets are prefetched 2 x kGatherAhead rows ahead of its
// copy and its entries (first and last line) kGatherAhead rows ahead, once its offsets are in
// cache: the reads are random, so the gather's speed is how many misses it keeps in flight.
inline constexpr std::size_t kGatherAhead = 16;

// A copy looks at the run's halt flag every this many rows: a stop (Ctrl-C, a time limit, a
// failed worker) must not wait for the copy of a large shard (TrainObserver::stop promises a
// tenth of a second; 4096 short rows take well under a millisecond). A worker stopped in its
// copy takes no step: its loop checks the same flag before the first one.
inline constexpr std::size_t kStopCheckRows = 4096;

// count entries from src to dst. Rows are short (a few dozen entries): a libc memcpy call per
// row cost as much as the SGD steps on the Zipf set (perf), so whole 32-byte blocks are moved
// with fixed-size copies the compiler inlines, and the rest one by one. The empty asm makes
// the index opaque: without it GCC recognises both loops as a memcpy and calls libc again.
template <typename T>
inline void CopyEntries(T* __restrict dst, const T* __restrict src, std::uint64_t count) {
  constexpr std::uint64_t kBlock = 32 / sizeof(T);
  std::uint64_t j = 0;
  for (; j + kBlock <= count; j += kBlock) {
    std::memcpy(dst + j, src + j, kBlock * sizeof(T));
    asm("" : "+r"(j));
  }
  for (; j < count; ++j) {
    dst[j] = src[j];
    asm("" : "+r"(j));
  }
}

// dst row k = src row order[k], for CSR arrays given as row offsets and any number of entry
// arrays (index, value): `dst_begin` has order.size() + 1 slots and each destination array
// room for `capacity` entries. `order` holds distinct source rows (a permutation of them, or a
// part of one). `row(k, r)` copies what else row r has (its label, ...), `prefetch_row(r)` asks
// for it ahead. Returns the rows laid out: all of `order`, or fewer when the next row's entries
// would exceed `capacity` (a window, EpochLayout::Window), or once `halt` (if given) is set (see
// kStopCheckRows), leaving the rest of dst as it was.
template <typename Row, typename PrefetchRow, typename... Entry>
std::size_t GatherRows(std::span<const std::uint64_t> src_begin, std::span<const std::uint32_t> order,
                       std::span<std::uint64_t> dst_begin, std::uint64_t capacity,
                       const std::atomic<bool>* halt, Row row, PrefetchRow prefetch_row,
                       std::pair<const Entry*, Entry*>... entries) {
  std::uint64_t at = 0;
  dst_begin[0] = 0;
  const std::size_t n = order.size();
  for (std::size_t k = 0; k < n; ++k) {
    // Relaxed, as the workers' own checks of halt: it carries no data.
    if (k % kStopCheckRows == 0 && halt != nullptr && halt->load(std::memory_order_relaxed)) return k;
    if (k + 2 * kGatherAhead < n) {
      const std::uint32_t far = order[k + 2 * kGatherAhead];
      __builtin_prefetch(src_begin.data() + far);
      prefetch_row(far);
    }
    if (k + kGatherAhead < n) {
      const std::uint32_t ahead = order[k + kGatherAhead];
      const std::uint64_t first = src_begin[ahead];
      const std::uint64_t last = src_begin[ahead + 1];
      if (last > first) {
        (__builtin_prefetch(entries.first + first), ...);
        (__builtin_prefetch(entries.first + last - 1), ...);
      }
    }
    const std::uint32_t r = order[k];
    const std::uint64_t first = src_begin[r];
    const std::uint64_t count = src_begin[r + 1] - first;
    if (count > capacity - at) return k;
    (CopyEntries(entries.second + at, entries.first + first, count), ...);
    row(k, r);
    at += count;
    dst_begin[k + 1] = at;
  }
  return n;
}

// The bytes of a data set's arrays: what one more copy of it takes.
inline double DataBytes(const Dataset& data) {
  return static_cast<double>(data.row_ptr().size()) * sizeof(std::uint64_t) +
         static_cast<double>(data.is_dense() ? 0 : data.index().size()) * sizeof(std::uint32_t) +
         static_cast<double>(data.value().size() + data.labels().size() + data.weights().size()) * sizeof(float);
}

// A worker's rows in storage order and their copy in the current epoch's order.
// Thread safety: owner-only (built and permuted by its worker, on the worker's thread).
class EpochLayout {
 public:
  // Takes the worker's shard as the stored rows (read in place: a view of the training set
  // on one NUMA node, the worker's own copy on several, RunPlan::copy_shards) and allocates
  // the permuted copy, filled in storage order until the first Permute. On the worker's
  // thread (first touch).
  void Build(const Dataset& shard) {
    stored_ = shard;
    view_ = Own(shard, copy_);
  }
  // The same with a copy of about `bytes` (at least the longest row): a window that holds a
  // stretch of the epoch's order at a time (Window), for a worker whose whole copy does not fit
  // in --memory-budget. On the worker's thread (first touch).
  void BuildWindow(const Dataset& shard, std::uint64_t bytes) {
    stored_ = shard;
    windowed_ = true;
    // Rows of average length fill the bytes (as DataBytes counts them, less the row offsets'
    // extra slot); a sparse window's entries take the longest row at least.
    const std::size_t rows = std::max<std::size_t>(shard.rows(), 1);
    const double per_row = DataBytes(shard) / static_cast<double>(rows);
    const double wanted = (static_cast<double>(bytes) - sizeof(std::uint64_t)) / per_row;
    const std::size_t fit = std::clamp<std::size_t>(static_cast<std::size_t>(std::max(wanted, 1.0)), 1, rows);
    if (shard.is_dense()) {
      view_ = Own(shard.Rows(0, std::min(fit, shard.rows())), copy_);
      return;
    }
    const std::uint64_t entries = shard.value().size();
    std::uint64_t longest = 0;
    for (std::size_t r = 0; r < shard.rows(); ++r) {
      longest = std::max<std::uint64_t>(longest, shard.row_ptr()[r + 1] - shard.row_ptr()[r]);
    }
    const std::uint64_t room = std::max(longest, entries * fit / rows);
    copy_ = std::make_shared<Arrays>();
    Arrays& a = *copy_;
    a.row_ptr.assign(fit + 1, 0);
    a.index.assign(room, 0);
    a.value.assign(room, 0.0f);
    a.label.assign(fit, 0.0f);
    if (shard.weighted()) a.weight.assign(fit, 1.0f);
    // A valid set until the first Window: the room spread over the rows, indices 0, 1, ... in
    // each (room <= fit * features: no row is longer than the features, nor is the mean).
    std::uint64_t at = 0;
    for (std::size_t k = 0; k < fit; ++k) {
      const std::uint64_t count = std::min<std::uint64_t>(room - at, shard.num_features());
      std::iota(a.index.begin() + static_cast<std::ptrdiff_t>(at),
                a.index.begin() + static_cast<std::ptrdiff_t>(at + count), 0u);
      at += count;
      a.row_ptr[k + 1] = at;
    }
    view_ = Wrap(a, shard, copy_);  // no ratings: only linear models read windows
  }

  bool active() const { return copy_ != nullptr; }
  // Whether the copy is a window (BuildWindow): the epoch's rows pass through it by Window.
  bool windowed() const { return windowed_; }
  // The rows as the worker reads them: after Permute(order), row k is stored row order[k].
  const Dataset& view() const { return view_; }
  // The memory the copy takes beyond the stored shard.
  std::uint64_t CopyBytes() const {
    return copy_ == nullptr ? 0 : static_cast<std::uint64_t>(DataBytes(view_));
  }

  // Lays the copy out in `order` (a permutation of the stored rows): no allocation. The copy's
  // arrays are ours and not const; view() sees them through const spans.
  void Permute(std::span<const std::uint32_t> order, const std::atomic<bool>* halt = nullptr) {
    Arrays& c = *copy_;
    const float* labels = stored_.labels().data();
    float* label = c.label.data();
    const float* weights = stored_.weights().data();
    float* weight = c.weight.data();
    if (stored_.is_dense()) {
      const std::size_t f = stored_.num_features();
      for (std::size_t k = 0; k < order.size(); ++k) {
        if (k % kStopCheckRows == 0 && halt != nullptr && halt->load(std::memory_order_relaxed)) return;
        if (k + kGatherAhead < order.size()) {
          __builtin_prefetch(stored_.value().data() + order[k + kGatherAhead] * f);
        }
        std::memcpy(c.value.data() + k * f, stored_.value().data() + order[k] * f, f * sizeof(float));
        label[k] = labels[order[k]];
        if (weight != nullptr) weight[k] = weights[order[k]];
      }
      return;
    }
    Gather(order, halt);
  }

  // \pre windowed(). Lays out the first rows of `order` (the rest of the epoch's order), as
  // many as the window holds, as view() rows 0, 1, ...; returns how many (at least one unless
  // `order` is empty or `halt` was set, which may also stop it early).
  std::size_t Window(std::span<const std::uint32_t> order, const std::atomic<bool>* halt) {
    if (!stored_.is_dense()) {
      return Gather(order.first(std::min(order.size(), view_.rows())), halt);
    }
    const std::size_t fit = std::min(order.size(), view_.rows());
    Permute(order.first(fit), halt);
    return halt != nullptr && halt->load(std::memory_order_relaxed) ? 0 : fit;
  }

 private:
  struct Arrays {
    HugeVector<std::uint64_t> row_ptr;
    HugeVector<std::uint32_t> index;
    HugeVector<float> value;
    HugeVector<float> label;
    HugeVector<float> weight;  // empty for a set without weights
  };
  std::size_t Gather(std::span<const std::uint32_t> order, const std::atomic<bool>* halt) {
    Arrays& c = *copy_;
    const float* labels = stored_.labels().data();
    float* label = c.label.data();
    const float* weights = stored_.weights().data();
    float* weight = c.weight.data();
    return GatherRows(
        stored_.row_ptr(), order, std::span(c.row_ptr).first(order.size() + 1), c.index.size(), halt,
        [&](std::size_t k, std::uint32_t r) {
          label[k] = labels[r];
          if (weight != nullptr) weight[k] = weights[r];
        },
        [&](std::uint32_t r) { __builtin_prefetch(labels + r); },
        std::pair<const std::uint32_t*, std::uint32_t*>{stored_.index().data(), c.index.data()},
        std::pair<const float*, float*>{stored_.value().data(), c.value.data()});
  }
  // A copy of `rows` in fresh `arrays` (huge pages where the kernel agrees), as a Dataset.
  static Dataset Own(const Dataset& rows, std::shared_ptr<Arrays>& arrays) {
    arrays = std::make_shared<Arrays>();
    Arrays& a = *arrays;
    a.value.assign(rows.value().begin(), rows.value().end());
    a.label.assign(rows.labels().begin(), rows.labels().end());
    a.weight.assign(rows.weights().begin(), rows.weights().end());
    if (rows.is_dense()) {
      return WithWeights(Dataset::WrapDense(a.value, a.label, rows.num_features(), arrays, rows.name()), a,
                         arrays);
    }
    a.row_ptr.assign(rows.row_ptr().begin(), rows.row_ptr().end());
    a.index.assign(rows.index().begin(), rows.index().end());
    return Wrap(a, rows, arrays).WithRatings(rows.ratings_shared());
  }
  // Sparse `a` as a Dataset with `like`'s features and name, keeping `owner` alive.
  static Dataset Wrap(const Arrays& a, const Dataset& like, std::shared_ptr<Arrays> owner) {
    const CsrView csr{.row_ptr = a.row_ptr,
                      .index = a.index,
                      .value = a.value,
                      .label = a.label,
                      .num_features = like.num_features()};
    return WithWeights(Dataset::WrapSparse(csr, owner, like.name()), a, owner);
  }
  // `rows` with a's weights when it has any (the copy's, checked when the set got them).
  static Dataset WithWeights(const Dataset& rows, const Arrays& a, std::shared_ptr<Arrays> owner) {
    if (a.weight.empty()) return rows;
    return rows.WithWeights(std::span<const float>(a.weight.data(), a.weight.size()), std::move(owner),
                            rows.name());
  }

  Dataset stored_;                // the worker's rows in storage order
  std::shared_ptr<Arrays> copy_;          // the epoch's copy (view_ keeps it alive too)
  Dataset view_;
  bool windowed_ = false;  // copy_ holds a window of the epoch (BuildWindow)
};

// A --memory-budget as its user likely spelled it: "128 MiB" for 128M, else FormatBytes.
inline std::string FormatBudget(std::uint64_t bytes) {
  for (const auto& [shift, unit] : {std::pair{40, " TiB"}, {30, " GiB"}, {20, " MiB"}, {10, " KiB"}}) {
    const std::uint64_t one = std::uint64_t{1} << shift;
    if (bytes % one == 0) return std::to_string(bytes / one) + unit;
  }
  return FormatBytes(static_cast<double>(bytes));
}

// The copies of the training set a run makes, each of `data_bytes` (one per worker in all):
// --shuffle epoch's re-laid-out rows (only by modes that re-lay out: `relays`), and the
// workers' shards when they span NUMA nodes (RunPlan::copy_shards). What does not fit is read
// where it lies; the notes say why (empty: everything asked for fits).
struct DataCopies {
  Shuffle shuffle;
  bool copy_shards;
  std::string shuffle_note;
  std::string shards_note;
  std::string auto_reason;  // --shuffle auto: why it chose what it did (empty: not auto)
  double bytes_left = std::numeric_limits<double>::infinity();  // of the budget, after these copies
  std::uint64_t window_bytes = 0;  // epoch in windows of this many bytes a worker (0: whole)
};

// --shuffle epoch in windows, where the whole copy does not fit in --memory-budget and the mode
// can read its rows through a window (RunPlan::window_bytes): the windows take half the budget
// (the rest is left to what else the run allocates: the model, the steps' buffers), an equal
// share each, up to kWindowBytes; below kMinWindowBytes a share is read in place instead
// (index). A window is laid out by the same gather as a whole copy and then read as a stream
// (measured on a 344 MB cache, 2 threads: windows of 8 MiB 3.5M samples/s, of 64 MiB 4.3M,
// the whole copy 4.0M).
inline constexpr double kWindowBytes = 64.0 * (1 << 20);
inline constexpr double kMinWindowBytes = 64.0 * (1 << 10);

// Without a budget (0), epoch needs the loaded set, its shard copies and the epoch's copy (three
// copies, counted whether or not the shards are copies) within `machine_bytes`
// (MemoryLimitBytes); shards are copied as asked. With a budget (--memory-budget) the copies
// alone must fit in it, the epoch's copy first: it is first-touched by its worker like a shard
// copy, so it keeps the reads on the worker's node and streams them too; then the shard copies.
//
// --shuffle auto resolves here, first: index when a worker's shard (data_bytes / workers) takes
// at most kAutoCacheFraction of its share of the cache (`cache`; unknown, bytes 0: epoch), else
// epoch with the fallbacks above. A shard that stays in the cache is read in place as fast as
// a stream, so epoch's copy is pure cost there (docs/algorithms.md, "Shuffling").
//
// Rows of at least kAutoStreamRowBytes (mean bytes a row, `row_bytes`) resolve to index whatever
// the shard's size: such a row is a stream of its own (the next row is asked for line by line
// while this one is read, DenseLinearStep), and the epoch's copy only adds a pass over the
// data. Measured on dense sets of 800 MB, 1 thread, index over epoch: rows of 2 KB 0.94x,
// 4 KB 1.15x, 8 KB 1.4x (docs/algorithms.md, "Dense rows against the bandwidth bound").
inline constexpr double kAutoCacheFraction = 0.25;
static_assert(kAutoCacheFraction == 0.25, "ResolveDataCopies' auto_reason, --shuffle's help and "
                                          "TrainConfig::shuffle say 'a quarter'");
inline constexpr double kAutoStreamRowBytes = 4096;
static_assert(kAutoStreamRowBytes == 4096, "--shuffle's help and TrainConfig::shuffle say '4 KiB'");

inline DataCopies ResolveDataCopies(Shuffle requested, bool relays, bool copy_shards,
                                    double data_bytes, std::uint64_t budget, double machine_bytes,
                                    const CacheShare& cache = {}, int workers = 1,
                                    bool windows = false, double row_bytes = 0) {
  DataCopies r{requested, copy_shards, {}, {}, {}, std::numeric_limits<double>::infinity()};
  // Without a budget, one more copy of the data fits when the loaded set, its shards and that
  // copy (three copies) fit in the memory the process may use.
  const bool another_copy_fits = 3 * data_bytes <= machine_bytes;
  if (requested == Shuffle::kAuto) {
    const double shard = data_bytes / std::max(workers, 1);
    const std::string cache_name =
        "the " + FormatBudget(static_cast<std::uint64_t>(cache.cache_bytes)) + " " + cache.level;
    const std::string share =
        cache.sharers > 1 ? "its " + FormatBudget(static_cast<std::uint64_t>(cache.bytes)) + " share of " + cache_name
                          : cache_name;
    if (row_bytes >= kAutoStreamRowBytes) {
      requested = Shuffle::kIndex;
      r.auto_reason = "rows of " + FormatBytes(row_bytes) + " (at least 4 KiB) stream on their own";
      // Read from each worker's copy in huge pages where it fits (ShardWorker::Build), as
      // epoch's copy would be: rows read in random order then miss the TLB far less.
      if (relays && !copy_shards && budget == 0 && another_copy_fits) {
        r.copy_shards = true;
        r.auto_reason += ", each worker's shard copied once into huge pages";
      } else if (relays && !copy_shards && budget > 0) {
        r.copy_shards = true;  // kept below if it fits in the budget, else dropped and said
        r.auto_reason += ", each worker's shard copied once into huge pages where the budget allows";
      }
    } else if (cache.bytes > 0 && shard <= kAutoCacheFraction * cache.bytes) {
      requested = Shuffle::kIndex;
      r.auto_reason = "shard " + FormatBytes(shard) + " fits a quarter of " + share;
    } else {
      requested = Shuffle::kEpoch;
      r.auto_reason = cache.bytes <= 0 ? "no cache size known"
                                       : "shard " + FormatBytes(shard) + " exceeds a quarter of " + share;
    }
    r.shuffle = requested;
  }
  const bool epoch = requested == Shuffle::kEpoch && relays;
  if (budget == 0) {
    if (epoch && !another_copy_fits) {
      r.shuffle = Shuffle::kIndex;
      r.shuffle_note = "index: --shuffle epoch needs " + FormatBytes(data_bytes) +
                       " more (a copy of the data), and the data set, its shards and that copy "
                       "exceed the " + FormatBytes(machine_bytes) + " this process may use";
    }
    return r;
  }
  const auto b = static_cast<double>(budget);
  const std::string within = " within --memory-budget " + FormatBudget(budget);
  const bool keep_epoch = !epoch || data_bytes <= b;
  const double window = std::min(b / 2 / std::max(workers, 1), kWindowBytes);
  if (!keep_epoch && windows && window >= kMinWindowBytes) {
    r.window_bytes = static_cast<std::uint64_t>(window);
    r.shuffle_note = "epoch in windows: each worker lays out " + FormatBytes(window) +
                     " of its rows at a time, since the whole copy of the data (" +
                     FormatBytes(data_bytes) + ") does not fit" + within;
  } else if (!keep_epoch) {
    r.shuffle = Shuffle::kIndex;
    r.shuffle_note = "index: --shuffle epoch's copy of the data (" + FormatBytes(data_bytes) +
                     ") does not fit" + within;
  }
  const double left = b - (epoch && keep_epoch ? data_bytes : 0) -
                      static_cast<double>(r.window_bytes) * std::max(workers, 1);
  if (r.copy_shards && data_bytes > left) {
    r.copy_shards = false;
    r.shards_note = "read in place: the workers' shard copies (" + FormatBytes(data_bytes) +
                    ") do not fit" + (epoch && keep_epoch ? " beside the epoch's copy" : "") + within;
  }
  r.bytes_left = left - (r.copy_shards ? data_bytes : 0);
  return r;
}

}  // namespace corral::internal
