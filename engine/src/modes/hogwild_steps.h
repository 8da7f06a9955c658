// The HOGWILD! worker and its step loop on any shared Params, used by hogwild (hogwild.h) and
// inside each group of hogwild++ (hogwild_pp.h); kept apart from HogwildMode so that an edit to
// either mode rebuilds that mode alone.
//
// Each worker owns a contiguous shard of the rows, copied by the worker itself after pinning
// (first touch puts it on the worker's NUMA node), visits it in a fresh random order every
// epoch, and applies each mini-batch's gradient to the shared model through Params' relaxed
// loads and stores: sparse models touch only the sample's coordinates.
//
// For a linear model at batch 1 on sparse data, the worker can also keep a hot head
// (hot_head.h): it reads and writes its own copy of the most frequent coordinates and adds its
// changes into the shared model after about --hot-sync of its updates to each; the worker's
// shard is then replaced by split rows (hot entries first, as slots into the copy). With one
// worker the copy is simply stored back (`exclusive`).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <numeric>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include <corral/step.h>

#include "engine/src/modes/hot_head.h"
#include "engine/src/modes/linear_step.h"
#include "engine/src/runtime/coordinator.h"
#include "engine/src/runtime/describe.h"
#include "engine/src/runtime/shard_worker.h"

namespace corral::internal {

// A HOGWILD! worker: its shard and, for the fused linear loop, this epoch's shrink table.
// Thread safety: owner-only (see ShardWorker).
template <typename M>
struct HogwildWorker : ShardWorker<M> {
  std::vector<float> shrink;  // fused linear loop: this epoch's 1 / (1 + eta * l2_u)
  HotWorker hot;              // fused linear loop: the hot head, when the mode uses one

  // ShardWorker's, for the split rows too: with a hot head and --shuffle epoch they are what
  // the epoch's order re-lays out.
  void BeginEpoch(std::uint64_t seed, int epoch, int w, std::uint64_t start,
                  const std::atomic<bool>* halt = nullptr) {
    if (!hot.relayout()) {
      ShardWorker<M>::BeginEpoch(seed, epoch, w, start, halt);
      return;
    }
    this->DrawOrder(seed, epoch, w);
    hot.Permute(this->order, halt);
    std::iota(this->order.begin(), this->order.end(), 0u);
    this->position = start;
  }
  std::uint64_t ShuffleCopyBytes() const { return ShardWorker<M>::ShuffleCopyBytes() + hot.CopyBytes(); }
};

// One epoch of worker `self`'s HOGWILD! steps on the model `w`, which other workers may read
// and write at the same time (Params' relaxed loads and stores), from sample `start` of its
// order. A linear model with batch 1 takes linear_step.h's fused loop (on the split rows and
// the worker's hot copy when the mode gave it a head: synced on HotHead's schedule and at the
// end), anything else Gradient() + ApplyStep(). About every `chunk` samples (and at no other time) the worker
// checks `halt`, publishes its progress in `steps` and calls `between()`, which returns whether
// the model may have been rewritten meanwhile: hogwild++ passes its ring's token there (true);
// hogwild passes a no-op (false).
template <typename M, typename Between>
void HogwildSteps(const M& model, Params w, HogwildWorker<M>& self, float eta, std::size_t batch,
                  std::uint64_t start, std::size_t chunk, const std::atomic<bool>& halt,
                  std::atomic<std::uint64_t>& steps, Between&& between) {
  const std::span<const std::uint32_t> order(self.order);
  if constexpr (kIsLinear<M>) {
    if (batch == 1) {
      ComputeShrink(model, eta, self.shrink);
      const std::size_t d = model.NumParams();
      constexpr std::size_t kAhead = 8;  // rows: a shuffled epoch misses the cache on every row
      const HotHead* head = self.hot.head;
      // Shared tail lines, 4 samples ahead (with others writing the model): a line another core
      // wrote since this worker last touched it costs a cross-core transfer, ~200 ns on a
      // machine whose two cores share no L3, as long as a step. Asked for early, with intent to
      // write, the transfer overlaps the steps before (measured: 2 threads 9.4M -> 14M samples/s
      // on the Zipf set with cross-CCD cores; distance 2 and 4 alike, 8 worse).
      constexpr std::size_t kTailAhead = 4;
      const bool prefetch_tail = !self.hot.exclusive;
      if (head != nullptr) self.hot.copy.Begin(w, *head, self.shrink);
      std::size_t until_sync = HotHead::kSyncBase;
      // --shuffle epoch in windows (never with a head): samples [lo, hi) of the order are the
      // window's rows 0, 1, ..., laid out when the loop reaches hi.
      const bool windowed = self.layout.windowed();
      std::size_t lo = start, hi = start;
      // A dense set's rows, read through the order (not in windows): every coordinate's shrink
      // is the same (d_u = n), and each step's update sums the next step's margin.
      std::optional<float> dense_shrink;
      if (self.shard.is_dense() && !windowed && head == nullptr) {
        const std::size_t n = DenseWidth(self.shard, d);
        if (n > 0 && std::all_of(self.shrink.begin(), self.shrink.begin() + static_cast<std::ptrdiff_t>(n),
                                 [&](float f) { return f == self.shrink[0]; })) {
          dense_shrink = self.shrink[0];
        }
      }
      float margin = 0;          // the next step's margin, when
      bool have_margin = false;  // the step before summed it
      for (std::size_t k = start; k < order.size();) {
        if (halt.load(std::memory_order_relaxed)) break;
        std::size_t end = std::min(order.size(), k + chunk);
        for (; k < end; ++k) {
          const std::uint32_t r = order[k];
          if (head == nullptr && windowed) {
            if (k == hi) {
              lo = k;
              hi = k + self.layout.Window(order.subspan(k), &halt);
              // relaxed, as the check above: a stop may have cut the window short.
              if (hi == k || halt.load(std::memory_order_relaxed)) {
                end = k;
                break;
              }
            }
            const std::size_t i = k - lo;
            if (k + kAhead < hi) PrefetchRow(self.shard, i + kAhead);
            LinearStepRow(model, w, self.shard, i, std::min(i + 1, hi - lo - 1), eta, self.shrink.data(), d);
            continue;
          }
          if (dense_shrink) {
            // One pass over the model a step: this step's margin came from the last one's.
            const std::size_t last = order.size() - 1;
            const std::uint32_t next = order[std::min(k + 1, last)];
            const std::uint32_t ahead = order[std::min(k + 2, last)];
            PrefetchLabel(self.shard, ahead);  // its row: the step's `ahead`
            if (!have_margin) margin = DenseMargin(w, self.shard, r, next, d);
            margin = DenseLinearStepThen(model, w, self.shard, r, margin, next, ahead, eta, *dense_shrink, d);
            have_margin = k < last;
            continue;
          }
          if (head == nullptr) {
            if (k + kAhead < order.size()) PrefetchRow(self.shard, order[k + kAhead]);
            LinearStepRow(model, w, self.shard, r, order[std::min(k + 1, order.size() - 1)], eta, self.shrink.data(), d);
            continue;
          }
          if (k + kAhead < order.size()) self.hot.rows.Prefetch(order[k + kAhead]);
          if (prefetch_tail && k + kTailAhead < order.size()) {
            // Written out here: as a SplitRows member function the same loop measured no gain.
            const SplitRows& rows = self.hot.rows;
            const std::uint32_t t = order[k + kTailAhead];
            for (std::uint64_t j = rows.begin[t] + rows.hot[t]; j < rows.begin[t + 1]; ++j) {
              if (rows.index[j] < d) w.PrefetchForWrite(rows.index[j]);
            }
          }
          SplitLinearStep(model, w, self.hot.copy, self.hot.rows, r, eta, self.shrink.data(), d);
          if (--until_sync == 0) {
            self.hot.Sync(w);
            until_sync = HotHead::kSyncBase;
          }
        }
        self.samples += end - self.position;
        self.position = end;
        steps.store(self.samples, std::memory_order_relaxed);  // progress display only
        if (between()) have_margin = false;  // hogwild++'s token may have moved the group's model
      }
      if (head != nullptr) self.hot.SyncAll(w);
      return;
    }
  }
  for (std::size_t k = start; k < order.size(); k += batch) {
    if (halt.load(std::memory_order_relaxed)) break;
    const std::size_t count = std::min(batch, order.size() - k);
    model.Gradient(w, self.shard, order.subspan(k, count), *self.grad, *self.workspace);
    self.ApplyGradient(w, eta);
    const std::uint64_t before = self.samples;
    self.samples += count;
    self.position = k + count;
    if (self.samples / chunk != before / chunk) {
      steps.store(self.samples, std::memory_order_relaxed);  // progress display only
      between();
    }
  }
  steps.store(self.samples, std::memory_order_relaxed);
}

// Whether HogwildSteps can read an epoch through a window (RunPlan::window_bytes): the fused
// linear loop only (a linear model, batch 1, plain SGD steps), where the hot head is off (the
// window is chosen because the data's copies do not fit, the split rows included).
template <typename M>
bool HogwildStepsWindow(const TrainConfig& config) {
  return kIsLinear<M> && config.batch == 1 && config.optimizer == Optimizer::kSgd;
}

// The hot head of hogwild and hogwild++: for a linear model at batch 1 (the fused loop), the
// coordinates each worker keeps a private copy of; empty otherwise, or when its split rows (a
// copy of the data) do not fit in what --memory-budget leaves (RunPlan::copy_bytes_left).
template <typename M>
HotHead PlanHotHead(const M& model, const RunPlan& plan) {
  if constexpr (kIsLinear<M>) {
    if (plan.config.optimizer == Optimizer::kAdaGrad) {
      HotHead none;
      none.off = "off: --optimizer adagrad (a private copy would need private accumulators)";
      return none;
    }
    if (plan.config.batch == 1) {
      HotHead head = ChooseHotHead(plan.train, model.NumParams(), plan.config.hot_coords,
                                   HotUpdatesPerSync(plan.config.hot_sync));
      if (!head.empty() && DataBytes(plan.train) > plan.copy_bytes_left) {
        HotHead none;
        none.off = "off: its split rows, a copy of the data (" + FormatBytes(DataBytes(plan.train)) +
                   "), do not fit within --memory-budget " +
                   FormatBudget(plan.config.memory_budget) + " beside the other copies";
        return none;
      }
      return head;
    }
  }
  return {};
}

// Worker w's shard, split into the head's private copy and the rows the fused loop reads
// when there is a head. On the worker's own thread (first touch).
template <typename M, typename State>
void BuildHotWorker(State& self, const M& model, const RunPlan& plan, int w, const HotHead& head,
                    bool exclusive) {
  const auto batch = static_cast<std::size_t>(plan.config.batch);
  if (head.empty()) {
    self.Build(model, plan.train, plan.held, w, plan.workers, batch, plan.shuffle, plan.copy_shards,
               plan.window_bytes);
    return;
  }
  // The split rows are what --shuffle epoch re-lays out here, not the shard. They are the
  // worker's own copy, made on its thread, so the shard is only read to make them: a view.
  const bool relayout = plan.shuffle == Shuffle::kEpoch;
  self.Build(model, plan.train, plan.held, w, plan.workers, batch, relayout ? Shuffle::kIndex : plan.shuffle,
             /*copy=*/false);
  self.hot.Build(self.shard, head, exclusive, relayout);
  self.shard = Dataset();  // the split rows hold everything the fused loop reads
  self.shuffle = plan.shuffle;
}

inline void ReportHotHead(const HotHead& head, TrainResult& result) {
  result.hot_coords = static_cast<int>(head.coordinate.size());
  result.hot_sync = static_cast<int>(head.updates);
  if (!head.off.empty()) AddSummaryLine(result, "hot coords", head.off);
}

// The hot head's settings and summary line (hogwild, hogwild++), from what Report set.
inline void DescribeHotHead(TrainResult& r) {
  AddSetting(r, "hot_coords", r.hot_coords);
  AddSetting(r, "hot_sync", r.hot_sync);
  if (r.hot_coords > 0) {
    AddSummaryLine(r, "hot coords",
                   Printf("%d with a private copy per worker, synced after ~%d updates each",
                          r.hot_coords, r.hot_sync));
  }
}

}  // namespace corral::internal
