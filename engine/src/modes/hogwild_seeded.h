// hogwild under --schedule seeded:TAU (seeded_schedule.h says what the schedule is): the
// workers' gradients are computed into the delay queue's buffers and applied with the step
// every mode takes (step.h) when due.
//
// Linear models take the generic Gradient + ApplyStep step (the fused loop applies its update
// while computing it, which a delayed update cannot), and there is no hot head: its private
// copies are a second, timing-free delay of their own that would blur TAU.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include <corral/dense_grad.h>
#include <corral/limits.h>
#include <corral/sparse_grad.h>
#include <corral/step.h>

#include "engine/src/modes/seeded_schedule.h"
#include "engine/src/runtime/coordinator.h"
#include "engine/src/runtime/shard_worker.h"

namespace corral::internal {

// The bytes one gradient buffer holds (the delay queue keeps TAU + 1).
inline double GradBytes(const SparseGrad& g) {
  return static_cast<double>(g.capacity()) * (sizeof(std::uint32_t) + 2 * sizeof(float));
}
inline double GradBytes(const DenseGrad& g) {
  return static_cast<double>(g.grad.size()) * sizeof(float);
}

template <Model M>
class SeededHogwildMode {
 public:
  SeededHogwildMode(const M& model, const RunPlan& plan, std::atomic<bool>& halt)
      : model_(model),
        plan_(plan),
        halt_(halt),
        storage_(plan.initial),
        w_(storage_),
        workers_(plan.threads),
        schedule_(MakeSchedule(model, plan)) {}

  void Setup(int w) {
    workers_[w].Build(model_, plan_.train, plan_.held, w, plan_.threads, Batch(), plan_.shuffle,
                      plan_.copy_shards);
  }

  // Worker 0's thread runs every logical worker's steps (seeded_schedule.h); the others return.
  void Epoch(int w, int epoch, std::uint64_t start, std::atomic<std::uint64_t>& steps) {
    if (w != 0) return;
    for (int v = 0; v < plan_.threads; ++v) {
      workers_[v].BeginEpoch(plan_.config.seed, epoch, v, SeededStart(plan_, v, epoch, start),
                             &halt_);
    }
    if (halt_.load(std::memory_order_relaxed)) return;  // rows laid out only in part
    const float eta = plan_.EpochLr(epoch);
    schedule_.RunEpoch(
        plan_.config.seed, epoch, workers_, Batch(), halt_, steps,
        [&](int v, std::span<const std::uint32_t> rows, Grad& g) {
          model_.Gradient(w_, workers_[v].shard, rows, g, *workers_[v].workspace);
        },
        [&](const Grad& g) { ApplyStep(w_, g, eta); });
  }

  std::uint64_t Position(int w) const { return workers_.Position(w); }
  std::uint64_t EpochLength(int w) const {
    return ShardLength(plan_.held.total, w, plan_.threads);
  }
  std::uint64_t Samples() const { return workers_.Samples(); }
  std::pair<Shuffle, std::uint64_t> Shuffling() const { return workers_.Shuffling(); }
  std::span<const std::byte> SharedMemory() const { return std::as_bytes(std::span(storage_)); }
  // The model read with relaxed atomic loads (Params): safe beside the running epoch.
  static constexpr bool kSnapshotWhileRunning = true;
  void Snapshot(std::span<float> out) const { w_.CopyTo(out); }
  std::uint64_t BytesSent() const { return 0; }
  std::uint64_t BytesSentMax() const { return 0; }
  void VisitState(StateVisitor& v) { schedule_.VisitState(v); }
  void Describe(TrainResult& r) const { schedule_.Describe(r, plan_.threads, "no hot head"); }

 private:
  using State = ShardWorker<M>;
  using Grad = typename M::Grad;
  std::size_t Batch() const { return static_cast<std::size_t>(plan_.config.batch); }

  // TAU + 1 buffers sized for any row of the training set, refused (kBadConfig) beyond memory.
  static SeededSchedule<Grad> MakeSchedule(const M& model, const RunPlan& plan) {
    const Grad prototype = model.MakeGrad(plan.train, static_cast<std::size_t>(plan.config.batch));
    const int tau = *plan.config.seeded_tau;
    CheckMemory({static_cast<double>(tau) + 1, GradBytes(prototype)}, ErrorCode::kBadConfig,
                "--schedule seeded:" + std::to_string(tau), "the delay queue's TAU + 1 gradients");
    return SeededSchedule<Grad>(tau, plan.threads, prototype);
  }

  const M& model_;
  const RunPlan& plan_;
  std::atomic<bool>& halt_;
  std::vector<float> storage_;
  Params w_;
  WorkerSet<State> workers_;
  SeededSchedule<Grad> schedule_;
};

}  // namespace corral::internal
