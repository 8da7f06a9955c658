// HOGWILD! (Niu et al. 2011) and its locked baseline: workers update one shared model.
//
// Each worker owns a contiguous shard of the rows, copied by the worker itself after pinning
// (first touch puts it on the worker's NUMA node), visits it in a fresh random order every
// epoch, and applies each mini-batch's gradient to the shared model through Params' relaxed
// loads and stores: sparse models touch only the sample's coordinates. `locked` runs the same
// loop with one mutex held around each gradient and update, the serialised baseline HOGWILD!
// is measured against.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include <corral/step.h>

#include "engine/src/linear_step.h"
#include "engine/src/run_shared.h"
#include "engine/src/shard_worker.h"

namespace corral::internal {

template <typename M, bool kLocked>
class HogwildMode {
  struct State;

 public:
  HogwildMode(const M& model, const RunPlan& plan, std::atomic<bool>& halt)
      : model_(model), plan_(plan), halt_(halt), storage_(plan.initial), w_(storage_),
        workers_(static_cast<std::size_t>(plan.threads)) {}

  void Setup(int w) {
    Worker(w).Build(model_, plan_.train, w, plan_.threads, Batch());
  }

  void Epoch(int w, int epoch, std::uint64_t start, std::atomic<std::uint64_t>& steps) {
    State& self = Worker(w);
    self.BeginEpoch(plan_.config.seed, epoch, w, start);
    const float eta = plan_.EpochLr(epoch);
    const std::size_t batch = Batch();
    const std::span<const std::uint32_t> order(self.order);
    constexpr std::uint64_t kReportEvery = 256;
    if constexpr (kIsLinear<M> && !kLocked) {
      if (batch == 1) return FusedLinearEpoch(self, eta, start, steps);
    }
    for (std::size_t k = start; k < order.size(); k += batch) {
      if (halt_.load(std::memory_order_relaxed)) break;
      const std::size_t count = std::min(batch, order.size() - k);
      if constexpr (kLocked) {
        const std::lock_guard lock(mutex_);
        model_.Gradient(w_, self.shard, order.subspan(k, count), *self.grad, *self.workspace);
        ApplyStep(w_, *self.grad, eta);
      } else {
        model_.Gradient(w_, self.shard, order.subspan(k, count), *self.grad, *self.workspace);
        ApplyStep(w_, *self.grad, eta);
      }
      const std::uint64_t before = self.steps;
      self.steps += count;
      self.position = k + count;
      // Publish progress about every kReportEvery samples (a relaxed store: a display only).
      if (self.steps / kReportEvery != before / kReportEvery) {
        steps.store(self.steps, std::memory_order_relaxed);
      }
    }
    steps.store(self.steps, std::memory_order_relaxed);
  }

  std::uint64_t Position(int w) const { return Worker(w).position; }
  std::uint64_t EpochLength(int w) const {
    return ShardBegin(plan_.train.rows(), w + 1, plan_.threads) -
           ShardBegin(plan_.train.rows(), w, plan_.threads);
  }
  std::uint64_t Samples() const {
    std::uint64_t total = 0;
    for (const auto& worker : workers_) total += worker.steps;
    return total;
  }
  // The shared model read with relaxed atomic loads: safe beside the workers (LiveModel).
  static constexpr bool kSnapshotWhileRunning = true;
  void Snapshot(std::span<float> out) const { w_.CopyTo(out); }
  std::uint64_t BytesSent() const { return 0; }
  std::uint64_t BytesSentMax() const { return 0; }

 private:
  // hogwild of a linear model, one sample per step: linear_step.h's fused loop.
  void FusedLinearEpoch(State& self, float eta, std::uint64_t start,
                        std::atomic<std::uint64_t>& steps) {
    ComputeShrink(model_, eta, self.shrink);
    const std::span<const std::uint32_t> order(self.order);
    const std::size_t d = model_.NumParams();
    constexpr std::size_t kAhead = 8;  // rows: a shuffled epoch misses the cache on every row
    constexpr std::size_t kChunk = 256;  // samples between halt checks and progress reports
    for (std::size_t k = start; k < order.size();) {
      if (halt_.load(std::memory_order_relaxed)) break;
      const std::size_t end = std::min(order.size(), k + kChunk);
      for (; k < end; ++k) {
        if (k + kAhead < order.size()) PrefetchRow(self.shard, order[k + kAhead]);
        const std::uint32_t r = order[k];
        LinearStep<typename LossOf<M>::type>(w_, self.shard.Row(r), self.shard.Label(r), eta,
                                             self.shrink.data(), d);
      }
      self.steps += end - self.position;
      self.position = end;
      steps.store(self.steps, std::memory_order_relaxed);  // progress display only
    }
  }

  std::size_t Batch() const { return static_cast<std::size_t>(plan_.config.batch); }
  struct State : ShardWorker<M> {
    std::vector<float> shrink;  // fused linear loop: this epoch's 1 / (1 + eta * l2_u)
  };
  State& Worker(int w) { return workers_[static_cast<std::size_t>(w)]; }
  const State& Worker(int w) const { return workers_[static_cast<std::size_t>(w)]; }

  const M& model_;
  const RunPlan& plan_;
  std::atomic<bool>& halt_;
  std::vector<float> storage_;
  Params w_;
  std::vector<State> workers_;
  std::mutex mutex_;  // locked only: held around each gradient and update
};

}  // namespace corral::internal
