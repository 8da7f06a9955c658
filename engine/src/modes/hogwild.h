// HOGWILD! (Niu et al. 2011) and its locked baseline: workers update one shared model with
// the worker loop of hogwild_steps.h (with the hot head for linear models at batch 1). `locked`
// runs the same loop with one mutex held around each gradient and update, the serialised
// baseline HOGWILD! is measured against.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include <corral/step.h>

#include "engine/src/modes/adagrad_steps.h"
#include "engine/src/modes/hogwild_steps.h"
#include "engine/src/runtime/coordinator.h"
#include "engine/src/runtime/shard_worker.h"

namespace corral::internal {

template <Model M, bool kLocked>
class HogwildMode {
 public:
  HogwildMode(const M& model, const RunPlan& plan, std::atomic<bool>& halt)
      : model_(model), plan_(plan), halt_(halt), storage_(plan.initial), w_(storage_),
        workers_(plan.threads) {
    if constexpr (!kLocked) head_ = PlanHotHead(model, plan);
    if (plan.config.optimizer == Optimizer::kAdaGrad) {
      sum_sq_storage_.assign(storage_.size(), 0.0f);
      sum_sq_ = Params(sum_sq_storage_);
    }
  }

  // Whether an epoch can be read through a window (RunPlan::window_bytes).
  static bool EpochInWindows(const TrainConfig& config) {
    return !kLocked && HogwildStepsWindow<M>(config);
  }

  void Setup(int w) {
    State& self = workers_[w];
    BuildHotWorker(self, model_, plan_, w, head_, plan_.threads == 1);
    self.StartMomentum(plan_.config, model_.NumParams());  // per worker: owner-only, no races
  }

  void Epoch(int w, int epoch, std::uint64_t start, std::atomic<std::uint64_t>& steps) {
    State& self = workers_[w];
    self.BeginEpoch(plan_.config.seed, epoch, w, start, &halt_);  // both loops check halt_ first
    const float eta = plan_.EpochLr(epoch);
    const std::size_t batch = Batch();
    constexpr std::size_t kChunk = 256;  // samples between halt checks and progress reports
    if constexpr (!kLocked && kIsLinear<M>) {
      if (sum_sq_.size() != 0) {  // Validate allows adagrad only here, at batch 1
        AdaGradSteps(model_, w_, sum_sq_, self, eta, start, kChunk, halt_, steps);
        return;
      }
    }
    if constexpr (!kLocked) {
      HogwildSteps(model_, w_, self, eta, batch, start, kChunk, halt_, steps, [] { return false; });
    } else {
      const std::span<const std::uint32_t> order(self.order);
      for (std::size_t k = start; k < order.size(); k += batch) {
        if (halt_.load(std::memory_order_relaxed)) break;
        const std::size_t count = std::min(batch, order.size() - k);
        {
          const std::lock_guard lock(mutex_);
          model_.Gradient(w_, self.shard, order.subspan(k, count), *self.grad, *self.workspace);
          self.ApplyGradient(w_, eta);
        }
        const std::uint64_t before = self.samples;
        self.samples += count;
        self.position = k + count;
        // Publish progress about every kChunk samples (a relaxed store: a display only).
        if (self.samples / kChunk != before / kChunk) steps.store(self.samples, std::memory_order_relaxed);
      }
      steps.store(self.samples, std::memory_order_relaxed);
    }
  }

  std::uint64_t Position(int w) const { return workers_.Position(w); }
  std::vector<std::span<const std::byte>> OwnedMemory(int w) const { return workers_.OwnedMemory(w); }
  std::span<const std::byte> SharedMemory() const { return std::as_bytes(std::span(storage_)); }
  std::uint64_t EpochLength(int w) const { return ShardLength(plan_.held.total, w, plan_.threads); }
  std::uint64_t Samples() const { return workers_.Samples(); }
  std::pair<Shuffle, std::uint64_t> Shuffling() const { return workers_.Shuffling(); }
  // The shared model read with relaxed atomic loads: safe beside the workers (LiveModel).
  static constexpr bool kSnapshotWhileRunning = true;
  void Snapshot(std::span<float> out) const { w_.CopyTo(out); }
  std::uint64_t BytesSent() const { return 0; }
  std::uint64_t BytesSentMax() const { return 0; }
  // Its training state beyond the shared model (mode_state.h): each worker's count of hot-head
  // syncs, which picks the slots of its next sync (its copy is flushed at every epoch end and
  // when the workers halt), and the optimizer's: AdaGrad's accumulators ("sum_sq", shared like
  // the model) or each worker's momentum velocity ("velocity/<w>").
  void VisitState(StateVisitor& v) {
    for (int w = 0; w < plan_.threads; ++w) {
      v.Count(Key("hot_syncs", w), workers_[w].hot.syncs);
      workers_[w].VisitVelocity(v, w);
    }
    if (!sum_sq_storage_.empty()) v.Floats("sum_sq", sum_sq_storage_);
  }
  // Parked workers leave the model, the accumulators and the velocities of one moment, inside
  // an epoch too (a halted worker finished its step and flushed its hot copy): a checkpoint
  // written there (--time-limit, Ctrl-C) holds them, and resumes where each worker stopped.
  static constexpr bool kStateInsideEpoch = true;
  void Report(TrainResult& result) const { ReportHotHead(head_, result); }
  void Describe(TrainResult& r) const {
    if constexpr (!kLocked) DescribeHotHead(r);
  }

 private:
  std::size_t Batch() const { return static_cast<std::size_t>(plan_.config.batch); }
  using State = HogwildWorker<M>;

  const M& model_;
  const RunPlan& plan_;
  std::atomic<bool>& halt_;
  std::vector<float> storage_;
  Params w_;
  // --optimizer adagrad: each coordinate's sum of squared gradients, shared and raced like w_
  // (adagrad_steps.h: W/R every worker, relaxed). Empty under sgd.
  std::vector<float> sum_sq_storage_;
  Params sum_sq_;
  HotHead head_;
  WorkerSet<State> workers_;
  std::mutex mutex_;  // locked only: held around each gradient and update
};

}  // namespace corral::internal
