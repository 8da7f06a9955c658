// averaged: one-shot parameter averaging (Zinkevich et al. 2010, SimuParallelSGD). Every worker
// runs plain SGD on its own shard into its own model; the run's model is their mean. No
// communication at all: the baseline that gossip has to beat.
#include "engine/src/modes/run_mode.h"

#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

#include <corral/step.h>

#include "engine/src/gossip/mixing.h"
#include "engine/src/modes/registry.h"
#include "engine/src/runtime/live.h"
#include "engine/src/runtime/shard_worker.h"

namespace corral::internal {
namespace {

template <Model M>
struct AveragedWorker : ShardWorker<M> {
  std::vector<float> x;  // this worker's model, touched first on its thread
};

template <Model M>
class AveragedMode {
 public:
  AveragedMode(const M& model, const RunPlan& plan, std::atomic<bool>& halt)
      : model_(model), plan_(plan), halt_(halt), workers_(plan.threads) {
    if (plan.live) tap_.Init(plan.threads, model.NumParams());
  }

  void Setup(int w) {
    AveragedWorker<M>& self = workers_[w];
    self.Build(model_, plan_.train, w, plan_.threads, Batch());
    self.x = plan_.initial;
    if (tap_.active()) tap_.Park(w, self.x);
  }

  void Epoch(int w, int epoch, std::uint64_t start, std::atomic<std::uint64_t>& steps) {
    AveragedWorker<M>& self = workers_[w];
    self.BeginEpoch(plan_.config.seed, epoch, w, start, &halt_);
    const float eta = plan_.EpochLr(epoch);
    const std::span<const std::uint32_t> order(self.order);
    if (tap_.active()) tap_.Unpark(w);
    for (std::size_t k = start; k < order.size(); k += Batch()) {
      if (halt_.load(std::memory_order_relaxed)) break;
      const std::size_t count = std::min(Batch(), order.size() - k);
      model_.Gradient(Params(self.x), self.shard, order.subspan(k, count), *self.grad,
                      *self.workspace);
      ApplyStep(Params(self.x), *self.grad, eta);
      self.samples += count;
      self.position = k + count;
      steps.store(self.samples, std::memory_order_relaxed);  // a display only
      if (tap_.active()) tap_.Poll(w, self.x);
    }
    if (tap_.active()) tap_.Park(w, self.x);
  }

  std::uint64_t Position(int w) const { return workers_.Position(w); }
  std::uint64_t EpochLength(int w) const { return ShardLength(plan_.train.rows(), w, plan_.threads); }
  std::uint64_t Samples() const { return workers_.Samples(); }
  void Snapshot(std::span<float> out) const {
    std::vector<std::span<const float>> replicas;
    for (const AveragedWorker<M>& s : workers_) replicas.emplace_back(s.x);
    MeanInto(replicas, out);
  }
  void LiveSnapshot(std::span<float> out) {
    tap_.Collect([&](std::span<const std::span<const float>> replicas) { MeanInto(replicas, out); });
  }
  std::uint64_t BytesSent() const { return 0; }
  std::uint64_t BytesSentMax() const { return 0; }

 private:
  std::size_t Batch() const { return static_cast<std::size_t>(plan_.config.batch); }

  const M& model_;
  const RunPlan& plan_;
  std::atomic<bool>& halt_;
  WorkerSet<AveragedWorker<M>> workers_;
  ReplicaTap tap_;  // LiveModel snapshots
};

}  // namespace

constinit const ModeRunner kAveragedFamily = RunnerOf<OneMode<AveragedMode>>();

}  // namespace corral::internal
