// Over 300 lines: the head's plan, per-worker copies and split rows: one structure, two loops.
// The hot head of a sparse linear HOGWILD! run: the few coordinates that nearly every sample
// touches (popular features of a power-law dataset), replicated per worker.
//
// Why: with two or more threads on one shared model, a cache line that both threads write
// moves between their cores on (nearly) every access, and a popular feature's line is written
// by every sample. With a Zipf 1.1 feature distribution the top 1,024 of 100,000 features carry
// three quarters of all non-zeros, so a plain HOGWILD! step waits on several such transfers.
// Here each worker reads and writes its own copy of the head and adds what it changed into the
// shared model after about `updates` (--hot-sync, 32) of its own updates to each coordinate;
// the long tail stays plain HOGWILD!. This is HOGWILD! with a bounded delay on the head
// coordinates (each at most ~`updates` steps of every other worker behind), the kind of delay
// the HOGWILD! analysis allows. Bounding the delay per coordinate rather than per sample
// matters: measured on the Zipf set at the searched step 1, one sync of the whole head every
// 512 samples let the most frequent coordinates (updated ~500 times per worker in between)
// overshoot, and single epochs jumped to 1.5-3x the objective; per-coordinate schedules keep
// them as close as plain HOGWILD!. With one worker the copy is simply stored back.
//
// Races: workers exchange the head only through relaxed atomic read-modify-writes on the shared
// model (Params::FetchAdd), so no worker's accumulated change is lost at a sync; between syncs
// a worker's copy is private. The tail goes through Params' relaxed loads and stores as before.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include <corral/dataset.h>
#include <corral/linear.h>
#include <corral/params.h>

#include "engine/src/runtime/epoch_layout.h"
#include "engine/src/runtime/huge_pages.h"

namespace corral::internal {

// Which coordinates are hot, and how often each is synced. Read-only once built, shared by the
// workers.
//
// Sync schedule: a worker syncs a coordinate after about `updates` of its own updates to it, so
// that a coordinate's copy is never more than that many steps (per worker) behind, whatever its
// frequency. A coordinate in a share p of the rows is therefore synced every updates / p
// samples, rounded down to kSyncBase * 2^k (tier k, at most kMaxTier). Slots are ordered by
// frequency, most frequent first, so the tiers are contiguous and tier k's coordinates are
// those of every tier below too: every kSyncBase samples the worker syncs the prefix of slots
// up to tier_end[k], with k the number of trailing zeros of its sync count (tier 0 every time,
// tier 1 every other time, ...). Cost per sample: about (hot non-zeros per row) / updates
// atomic adds.
struct HotHead {
  static constexpr std::size_t kSyncBase = 16;  // samples
  static constexpr int kMaxTier = 9;            // at most every 16 * 512 = 8192 samples

  std::vector<std::uint32_t> coordinate;  // slot -> coordinate, most frequent first
  std::vector<std::int32_t> slot;         // coordinate -> slot, or -1 when cold
  std::vector<std::uint32_t> tier_end;    // tier k's slots: [0, tier_end[k]), k <= kMaxTier
  std::size_t updates = 0;                // own updates of a coordinate between its syncs
  std::string off;  // why there is none though the run asked for one (--memory-budget), or empty

  bool empty() const { return coordinate.empty(); }
  // The slots to sync at a worker's `count`-th sync (count >= 1).
  std::size_t SlotsAt(std::uint64_t count) const {
    const int tier = std::min(std::countr_zero(count), kMaxTier);
    return tier_end[static_cast<std::size_t>(tier)];
  }
};

// Defaults of TrainConfig::hot_coords = -1 and hot_sync = 0. A coordinate in fewer than a
// 1/kAutoMinShare of the rows is rare enough that its cache line seldom moves between cores.
inline constexpr std::size_t kAutoHotCoords = 1024;
inline constexpr std::size_t kAutoMinShare = 512;

// Automatic updates between syncs: a worker syncs about one hot coordinate, one contended atomic
// add, every kAutoSamplesPerSync samples, whatever the rows' hot counts. A sync costs a cache
// line moving between cores (~100-200 ns), a step on a short row tens of ns, so at the old fixed
// 32 updates a row of 13 hot entries (a9a, ijcnn1) paid 0.4 line transfers a step: measured at 2
// threads (docs/algorithms.md, "The hot head's sync interval"), 512 updates ran 1.2-1.9x the
// samples/s of 32 on a9a, ijcnn1, phishing and the Zipf set with the same objectives. So the
// updates are kAutoSamplesPerSync x (hot entries per row), rounded to a power of 2, within
// [kAutoSamplesPerSync, the slowest tier's kSyncBase << kMaxTier].
inline constexpr std::size_t kAutoSamplesPerSync = 32;
inline std::size_t AutoHotUpdates(double hot_per_row) {
  const double wanted = static_cast<double>(kAutoSamplesPerSync) * std::max(hot_per_row, 1.0);
  const auto rounded = static_cast<std::size_t>(std::exp2(std::round(std::log2(wanted))));
  return std::clamp<std::size_t>(rounded, kAutoSamplesPerSync, HotHead::kSyncBase << HotHead::kMaxTier);
}

// Own updates of a coordinate between syncs for TrainConfig::hot_sync (0: automatic, chosen by
// ChooseHotHead from the data).
inline std::size_t HotUpdatesPerSync(int hot_sync) {
  return hot_sync > 0 ? static_cast<std::size_t>(hot_sync) : 0;
}

// The hot head of `train` for `num_params` coordinates: `hot_coords` > 0 takes the hot_coords
// coordinates in the most rows, -1 the up to kAutoHotCoords of them in at least a
// 1/kAutoMinShare of the rows, 0 none; each synced after about `updates` updates (see HotHead;
// 0: AutoHotUpdates of the head's entries per row).
// Empty for dense data, where every sample touches every coordinate and nothing is gained.
inline HotHead ChooseHotHead(const Dataset& train, std::size_t num_params, int hot_coords,
                             std::size_t updates = 0) {
  HotHead head;
  if (train.is_dense() || hot_coords == 0 || train.rows() == 0) return head;
  std::vector<std::uint32_t> rows_with(num_params, 0);
  for (const std::uint32_t u : train.index()) {
    if (u < num_params) ++rows_with[u];
  }
  const bool automatic = hot_coords < 0;
  const std::uint64_t min_rows = automatic ? std::max<std::uint64_t>(1, train.rows() / kAutoMinShare) : 1;
  std::vector<std::uint32_t> candidates;
  for (std::uint32_t u = 0; u < num_params; ++u) {
    if (rows_with[u] >= min_rows) candidates.push_back(u);
  }
  const std::size_t keep =
      std::min(automatic ? kAutoHotCoords : static_cast<std::size_t>(hot_coords), candidates.size());
  std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(keep),
                    candidates.end(), [&](std::uint32_t a, std::uint32_t b) {
                      return rows_with[a] != rows_with[b] ? rows_with[a] > rows_with[b] : a < b;
                    });
  candidates.resize(keep);
  head.coordinate = std::move(candidates);
  head.slot.assign(num_params, -1);
  if (updates == 0) {
    double hot_entries = 0;
    for (const std::uint32_t u : head.coordinate) hot_entries += rows_with[u];
    updates = AutoHotUpdates(hot_entries / static_cast<double>(train.rows()));
  }
  head.updates = updates;
  head.tier_end.assign(HotHead::kMaxTier + 1, 0);
  const double rows = static_cast<double>(train.rows());
  for (std::size_t s = 0; s < head.coordinate.size(); ++s) {
    const std::uint32_t u = head.coordinate[s];
    head.slot[u] = static_cast<std::int32_t>(s);
    // Samples between syncs wanted: updates / share; its tier: the largest k with
    // kSyncBase * 2^k <= that (tier 0 when even kSyncBase is too long).
    const double every = static_cast<double>(updates) * rows / rows_with[u];
    int tier = 0;
    while (tier < HotHead::kMaxTier &&
           static_cast<double>(HotHead::kSyncBase << (tier + 1)) <= every) {
      ++tier;
    }
    for (int k = tier; k <= HotHead::kMaxTier; ++k) {
      head.tier_end[static_cast<std::size_t>(k)] = static_cast<std::uint32_t>(s + 1);
    }
  }
  return head;
}

// A worker's rows with each row's hot entries first, renumbered to slots, then its cold ones,
// and their labels (and weights): all the fused loop reads, so the worker's shard can be released.
// Thread safety: owner-only.
// In huge pages (huge_pages.h): built once per run, and its first touch is most of the setup
// of a small run.
struct SplitRows {
  HugeVector<std::uint64_t> begin;   // rows + 1 offsets into index/value
  HugeVector<std::uint32_t> hot;     // per row: number of hot entries
  HugeVector<std::uint32_t> index;   // slot (hot entries) or coordinate (cold entries)
  HugeVector<float> value;
  HugeVector<float> label;
  HugeVector<float> weight;          // per row, empty for a set without weights (Dataset::Weight)

  float Weight(std::size_t r) const { return weight.empty() ? 1.0f : weight[r]; }

  // One pass over the shard, written through pointers into arrays sized first: on a9a 1.7 ms
  // where appending entry by entry took 2.6 (the first touch of the arrays' pages comes on top
  // of either: 3-10 ms on a VM whose host had not yet backed them, docs/algorithms.md).
  void Build(const Dataset& shard, const HotHead& head) {
    begin.resize(shard.rows() + 1);
    hot.resize(shard.rows());
    index.resize(shard.nnz());
    value.resize(shard.nnz());
    label.assign(shard.labels().begin(), shard.labels().end());
    weight.assign(shard.weights().begin(), shard.weights().end());
    const std::span<const std::int32_t> slot = head.slot;
    const auto is_hot = [&](std::uint32_t u) { return u < slot.size() && slot[u] >= 0; };
    std::uint32_t* const to_index = index.data();
    float* const to_value = value.data();
    std::size_t at = 0;
    begin[0] = 0;
    for (std::size_t r = 0; r < shard.rows(); ++r) {
      const SparseRow row = shard.Row(r);
      const std::size_t first = at;
      for (std::size_t k = 0; k < row.nnz(); ++k) {
        if (is_hot(row.index[k])) {
          to_index[at] = static_cast<std::uint32_t>(slot[row.index[k]]);
          to_value[at++] = row.value[k];
        }
      }
      hot[r] = static_cast<std::uint32_t>(at - first);
      for (std::size_t k = 0; k < row.nnz(); ++k) {
        if (!is_hot(row.index[k])) {
          to_index[at] = row.index[k];
          to_value[at++] = row.value[k];
        }
      }
      begin[r + 1] = at;
    }
  }

  // Rows of `stored` in `order` (a permutation of its rows): row k := stored row order[k]
  // (--shuffle epoch, epoch_layout.h). Sized by the first copy (`*this = stored`), so no
  // allocation here.
  void Permute(const SplitRows& stored, std::span<const std::uint32_t> order,
               const std::atomic<bool>* halt = nullptr) {
    GatherRows(
        stored.begin, order, begin, index.size(), halt,
        [&](std::size_t k, std::uint32_t r) {
          hot[k] = stored.hot[r];
          label[k] = stored.label[r];
          if (!weight.empty()) weight[k] = stored.weight[r];
        },
        [&](std::uint32_t r) {
          __builtin_prefetch(stored.hot.data() + r);
          __builtin_prefetch(stored.label.data() + r);
        },
        std::pair<const std::uint32_t*, std::uint32_t*>{stored.index.data(), index.data()},
        std::pair<const float*, float*>{stored.value.data(), value.data()});
  }
  std::uint64_t Bytes() const {
    return begin.size() * sizeof(std::uint64_t) + (hot.size() + index.size()) * sizeof(std::uint32_t) +
           (value.size() + label.size() + weight.size()) * sizeof(float);
  }

  // Row r's entries and label ahead of use (see PrefetchRow).
  void Prefetch(std::size_t r) const {
    __builtin_prefetch(index.data() + begin[r]);
    __builtin_prefetch(value.data() + begin[r]);
    __builtin_prefetch(label.data() + r);
  }
};

// A worker's private copy of the head. Thread safety: owner-only.
struct HotCopy {
  std::vector<float> local;   // what the worker reads and writes between syncs
  std::vector<float> base;    // the shared values at the last sync
  std::vector<float> shrink;  // this epoch's shrink factors of the head's coordinates

  // At the start of an epoch: this epoch's shrink factors and the shared values.
  void Begin(Params w, const HotHead& head, const std::vector<float>& model_shrink) {
    const std::size_t slots = head.coordinate.size();
    local.resize(slots);
    base.resize(slots);
    shrink.resize(slots);
    for (std::size_t s = 0; s < slots; ++s) {
      shrink[s] = model_shrink[head.coordinate[s]];
      local[s] = base[s] = w.Load(head.coordinate[s]);
    }
  }

  // Adds what the worker changed since the last sync (local - base) into the shared model and
  // starts again from the shared values, which now hold every worker's changes up to its last
  // sync. `exclusive` (the worker is the model's only writer) stores local as it is instead:
  // base + (local - base) can differ from local in the last bit, an error a single thread has
  // no reason to pay.
  // Slots [0, slots) only: a prefix of the most frequent coordinates (HotHead::SlotsAt).
  void Sync(Params w, const HotHead& head, bool exclusive, std::size_t slots) {
    for (std::size_t s = 0; s < slots; ++s) {
      const std::uint32_t u = head.coordinate[s];
      if (exclusive) {
        w.Store(u, local[s]);
        continue;
      }
      const float change = local[s] - base[s];
      // An untouched coordinate only reloads: a load keeps the line shared where an add would
      // take it exclusive.
      const float now = change != 0.0f ? w.FetchAdd(u, change) + change : w.Load(u);
      local[s] = base[s] = now;
    }
  }
};

// A worker's side of the hot head: its split rows, its copy, its syncs so far.
// Thread safety: owner-only.
struct HotWorker {
  const HotHead* head = nullptr;  // null: the plain loop
  SplitRows rows;    // what the fused loop reads: in storage order, or this epoch's (relayout)
  SplitRows stored;  // --shuffle epoch: the rows in storage order; empty otherwise
  HotCopy copy;
  std::uint64_t syncs = 0;  // scheduled syncs so far (HotHead::SlotsAt)
  bool exclusive = false;   // the worker is the shared model's only writer

  // On the worker's own thread (first touch). `relayout`: keep the rows in storage order in
  // `stored` and lay `rows` out in each epoch's order (Permute), --shuffle epoch.
  void Build(const Dataset& shard, const HotHead& hot_head, bool only_writer, bool relayout) {
    head = &hot_head;
    rows.Build(shard, hot_head);
    if (relayout) stored = rows;
    exclusive = only_writer;
  }
  bool relayout() const { return !stored.label.empty(); }
  // rows := stored in `order`. \pre relayout()
  void Permute(std::span<const std::uint32_t> order, const std::atomic<bool>* halt) {
    rows.Permute(stored, order, halt);
  }
  // The memory the epoch's copy takes beyond the stored rows.
  std::uint64_t CopyBytes() const { return relayout() ? rows.Bytes() : 0; }
  // The scheduled sync, every HotHead::kSyncBase samples.
  void Sync(Params w) { copy.Sync(w, *head, exclusive, head->SlotsAt(++syncs)); }
  // All slots: at the end of an epoch or a stop.
  void SyncAll(Params w) { copy.Sync(w, *head, exclusive, copy.local.size()); }
};

// A hot value at slot s: a worker's private copy (hogwild, float*) read and written plainly; a
// replica's hot values that neighbours average into under a flag (adpsgd, Params) through
// relaxed atomics.
inline float HotLoad(const float* local, std::size_t s) { return local[s]; }
inline float HotLoad(Params local, std::size_t s) { return local.Load(s); }
inline void HotStore(float* local, std::size_t s, float v) { local[s] = v; }
inline void HotStore(Params local, std::size_t s, float v) { local.Store(s, v); }

// The margin of split row r: hot entries from `local`, cold ones from the shared model w.
// In four partial sums, (m0 + m1) + (m2 + m3): one running sum makes every product wait for
// the previous add, and on a9a (~11 hot and ~3 cold entries per row) that chain of adds is
// most of a step. Already a different order from LinearStep's (hot entries first), so the
// split loop's results differ from the plain loop's in the last bits anyway.
template <typename Hot>
inline float SplitMargin(const SplitRows& rows, std::size_t r, Hot local, Params w, std::size_t num_params) {
  const std::uint64_t first = rows.begin[r];
  const std::uint64_t split = first + rows.hot[r];
  const std::uint64_t last = rows.begin[r + 1];
  const std::uint32_t* index = rows.index.data();
  const float* value = rows.value.data();
  float m0 = 0, m1 = 0, m2 = 0, m3 = 0;
  std::uint64_t e = first;
  for (; e + 4 <= split; e += 4) {
    m0 += HotLoad(local, index[e]) * value[e];
    m1 += HotLoad(local, index[e + 1]) * value[e + 1];
    m2 += HotLoad(local, index[e + 2]) * value[e + 2];
    m3 += HotLoad(local, index[e + 3]) * value[e + 3];
  }
  for (; e < split; ++e) m0 += HotLoad(local, index[e]) * value[e];
  for (; e < last; ++e) {
    const std::uint32_t u = index[e];
    if (u < num_params) m1 += w.Load(u) * value[e];
  }
  return (m0 + m1) + (m2 + m3);
}

// The proximal step of split row r, `step` = eta * loss derivative: hot entries on `local`
// (shrunk by hot_shrink, per slot), cold ones on the shared model w (shrink, per coordinate).
template <typename Hot>
inline void SplitApply(const SplitRows& rows, std::size_t r, float step, Hot local, const float* hot_shrink,
                       Params w, const float* shrink, std::size_t num_params) {
  const std::uint64_t first = rows.begin[r];
  const std::uint64_t split = first + rows.hot[r];
  const std::uint64_t last = rows.begin[r + 1];
  const std::uint32_t* index = rows.index.data();
  const float* value = rows.value.data();
  for (std::uint64_t k = first; k < split; ++k) {
    const std::uint32_t s = index[k];
    HotStore(local, s, (HotLoad(local, s) - step * value[k]) * hot_shrink[s]);
  }
  for (std::uint64_t k = split; k < last; ++k) {
    const std::uint32_t u = index[k];
    if (u < num_params) w.Store(u, (w.Load(u) - step * value[k]) * shrink[u]);
  }
}

// LinearStep (linear_step.h) on a split row: hot entries on the worker's copy, cold ones on the
// shared model.
template <typename Loss>
inline void SplitLinearStep(const LinearModel<Loss>& model, Params w, HotCopy& copy,
                            const SplitRows& rows, std::size_t r, float eta, const float* shrink,
                            std::size_t num_params) {
  float* local = copy.local.data();
  const float margin = SplitMargin(rows, r, local, w, num_params);
  const float step = eta * model.Derivative(margin, rows.label[r], rows.Weight(r));
  SplitApply(rows, r, step, local, copy.shrink.data(), w, shrink, num_params);
}

}  // namespace corral::internal
