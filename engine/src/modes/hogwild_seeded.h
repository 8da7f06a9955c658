// hogwild under --schedule seeded:TAU: the bounded-delay model of the HOGWILD! analyses (Niu et
// al. 2011; De Sa et al. 2015, "Taming the Wild") run exactly, so that an asynchronous run can
// be repeated bit for bit, debugged, and measured against its delay bound.
//
// The logical workers are hogwild's: worker w has its shard and its epoch's visiting order
// (EpochRng(seed, epoch, w)), as in a free-running run. What the threads' timing decides in a
// free run, two seeded streams decide here:
//   - the interleaving: each step is taken by worker v with probability (v's samples left) /
//     (all samples left), i.e. every interleaving of the workers' orders is equally likely;
//   - the staleness: the update computed at step t (a gradient at the model as it is then) is
//     applied at the end of step t + d_t, d_t uniform in [0, TAU]. The read of step t therefore
//     sees every update of steps <= t - TAU - 1 and a seeded subset of the last TAU. TAU = 0 is
//     serial SGD over the interleaved order. The order does not depend on TAU (the delays come
//     from a stream of their own), so runs that differ in TAU alone differ in staleness alone.
// An epoch ends with every pending update applied (in due order), as a free epoch ends with
// every thread's writes done; each epoch's streams derive from (seed, epoch), as the workers'
// shuffles do. A checkpoint (written at epoch ends) therefore holds nothing of the schedule but
// its TAU, and a run resumed from one continues the uninterrupted run bit for bit. A run
// stopped inside an epoch (Ctrl-C, --time-limit) applies its pending updates before it stops
// and resumes that epoch where each worker stood, under the epoch's streams drawn afresh:
// reproducible, but not the uninterrupted run's continuation.
//
// Workers and threads: the seeded epoch runs every logical worker's steps on one thread (the
// crew's worker 0; the others build their shards and then wait out the epoch), so the result
// depends on the seed, --threads (the worker count) and TAU alone, never on the machine. We
// chose this over threads passing a seeded turn: with a turn, only one thread computes at a
// time anyway (the next read depends on the previous step's writes), and each hand-over is a
// cross-core wake-up costing more than a sparse step, so the single thread is the faster
// simulation as well as the simpler one. Its cost is hogwild's parallelism: a seeded run
// trains at one core's speed (docs/algorithms.md, "Determinism").
//
// Linear models take the generic Gradient + ApplyStep step (the fused loop applies its update
// while computing it, which a delayed update cannot), and there is no hot head: its private
// copies are a second, timing-free delay of their own that would blur TAU.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include <corral/dense_grad.h>
#include <corral/limits.h>
#include <corral/rng.h>
#include <corral/sparse_grad.h>
#include <corral/step.h>

#include "engine/src/runtime/coordinator.h"
#include "engine/src/runtime/describe.h"
#include "engine/src/runtime/shard_worker.h"

namespace corral::internal {

// The updates computed but not yet applied: TAU + 1 gradient buffers, one per step of the
// window (step t computes into slot t mod (TAU + 1), free again because its update is due by
// step t + TAU), and per due step a list of the slots due then, oldest first. Sized once:
// pushing and releasing never allocate.
// Thread safety: owner-only (the thread that runs the seeded epoch).
template <typename Grad>
class DelayQueue {
 public:
  DelayQueue(int tau, const Grad& prototype)
      : size_(static_cast<std::size_t>(tau) + 1), slots_(size_, prototype), next_(size_, kNone),
        head_(size_, kNone), tail_(size_, kNone) {}

  // The buffer step t computes its gradient into.
  Grad& Slot(std::uint64_t t) { return slots_[t % size_]; }

  // Step t's gradient, in Slot(t), is due at the end of step t + delay (delay <= TAU).
  void Push(std::uint64_t t, std::uint64_t delay) {
    const std::size_t slot = t % size_;
    const std::size_t due = (t + delay) % size_;
    next_[slot] = kNone;
    if (tail_[due] == kNone) {
      head_[due] = slot;
    } else {
      next_[tail_[due]] = slot;
    }
    tail_[due] = slot;
    ++pending_;
  }

  // Calls apply(gradient) for each update due at the end of step t, oldest first. Every
  // pending update is due in [t, t + TAU], so the list of t mod (TAU + 1) holds step t's alone.
  template <typename Apply>
  void Release(std::uint64_t t, Apply&& apply) {
    const std::size_t due = t % size_;
    for (std::size_t s = head_[due]; s != kNone; s = next_[s]) {
      apply(static_cast<const Grad&>(slots_[s]));
      --pending_;
    }
    head_[due] = tail_[due] = kNone;
  }

  // Every pending update, in the order steps t, t + 1, ... would have applied them.
  template <typename Apply>
  void Drain(std::uint64_t t, Apply&& apply) {
    for (std::size_t k = 0; k < size_ && pending_ > 0; ++k) Release(t + k, apply);
  }

 private:
  static constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  std::size_t size_;
  std::vector<Grad> slots_;
  std::vector<std::size_t> next_;  // per slot: the next slot due at the same step
  std::vector<std::size_t> head_;  // per due step mod (TAU + 1): its first and last slot
  std::vector<std::size_t> tail_;
  std::size_t pending_ = 0;
};

// The bytes one gradient buffer holds (the delay queue keeps TAU + 1).
inline double GradBytes(const SparseGrad& g) {
  return static_cast<double>(g.capacity()) * (sizeof(std::uint32_t) + 2 * sizeof(float));
}
inline double GradBytes(const DenseGrad& g) { return static_cast<double>(g.grad.size()) * sizeof(float); }

// The seeded streams of epoch `epoch`: EpochRng's streams of "workers" -1 and -2, which no
// worker uses (worker w draws from stream w + 1).
inline Rng InterleavingRng(std::uint64_t seed, int epoch) { return EpochRng(seed, epoch, -1); }
inline Rng DelayRng(std::uint64_t seed, int epoch) { return EpochRng(seed, epoch, -2); }

template <Model M>
class SeededHogwildMode {
 public:
  SeededHogwildMode(const M& model, const RunPlan& plan, std::atomic<bool>& halt)
      : model_(model), plan_(plan), halt_(halt), tau_(*plan.config.seeded_tau),
        storage_(plan.initial), w_(storage_), workers_(plan.threads),
        left_(static_cast<std::size_t>(plan.threads), 0),
        queue_(MakeQueue(model, plan)) {}

  void Setup(int w) {
    workers_[w].Build(model_, plan_.train, w, plan_.threads, Batch(), plan_.shuffle, plan_.copy_shards);
  }

  // Worker 0's thread runs every logical worker's steps (see the header); the others return.
  void Epoch(int w, int epoch, std::uint64_t start, std::atomic<std::uint64_t>& steps) {
    if (w != 0) return;
    std::uint64_t left = 0;  // samples of the epoch not yet taken, all workers
    for (int v = 0; v < plan_.threads; ++v) {
      // The coordinator starts worker v at its resumed position in the run's first epoch and
      // at 0 in every later one (it passes worker 0's alone: `start`).
      const std::uint64_t at = v == 0 ? start : epoch == plan_.first_epoch ? plan_.start[Index(v)] : 0;
      State& s = workers_[v];
      s.BeginEpoch(plan_.config.seed, epoch, v, at, &halt_);
      left_[Index(v)] = s.order.size() - s.position;
      left += left_[Index(v)];
    }
    if (halt_.load(std::memory_order_relaxed)) return;  // rows laid out only in part
    const float eta = plan_.EpochLr(epoch);
    const auto apply = [&](const Grad& g) { ApplyStep(w_, g, eta); };
    Rng interleaving = InterleavingRng(plan_.config.seed, epoch);
    Rng delays = DelayRng(plan_.config.seed, epoch);
    constexpr std::uint64_t kChunk = 256;  // steps between halt checks and progress reports
    std::uint64_t t = 0;
    for (; left > 0; ++t) {
      if (t % kChunk == 0) {
        if (halt_.load(std::memory_order_relaxed)) break;
        steps.store(workers_.Samples(), std::memory_order_relaxed);  // progress display only
      }
      std::uint64_t r = interleaving.Below(left);
      int v = 0;
      while (r >= left_[Index(v)]) r -= left_[Index(v++)];
      State& s = workers_[v];
      const std::size_t count = std::min<std::uint64_t>(Batch(), left_[Index(v)]);
      model_.Gradient(w_, s.shard, std::span<const std::uint32_t>(s.order).subspan(s.position, count),
                      queue_.Slot(t), *s.workspace);
      queue_.Push(t, tau_ == 0 ? 0 : delays.Below(static_cast<std::uint64_t>(tau_) + 1));
      queue_.Release(t, apply);
      s.position += count;
      s.samples += count;
      left_[Index(v)] -= count;
      left -= count;
    }
    queue_.Drain(t, apply);
    steps.store(workers_.Samples(), std::memory_order_relaxed);
  }

  std::uint64_t Position(int w) const { return workers_.Position(w); }
  std::uint64_t EpochLength(int w) const { return ShardLength(plan_.train.rows(), w, plan_.threads); }
  std::uint64_t Samples() const { return workers_.Samples(); }
  std::pair<Shuffle, std::uint64_t> Shuffling() const { return workers_.Shuffling(); }
  std::span<const std::byte> SharedMemory() const { return std::as_bytes(std::span(storage_)); }
  // The model read with relaxed atomic loads (Params): safe beside the running epoch.
  static constexpr bool kSnapshotWhileRunning = true;
  void Snapshot(std::span<float> out) const { w_.CopyTo(out); }
  std::uint64_t BytesSent() const { return 0; }
  std::uint64_t BytesSentMax() const { return 0; }
  // At an epoch end nothing is pending and the streams restart from (seed, epoch): the state
  // is TAU alone, kept so that a checkpoint resumes only under the schedule that wrote it.
  void VisitState(StateVisitor& v) {
    std::uint64_t tau = static_cast<std::uint64_t>(tau_);
    v.Count("schedule/seeded_tau", tau);
    v.Require(tau == static_cast<std::uint64_t>(tau_),
              "it was written under --schedule seeded:" + std::to_string(tau) + ", this run has seeded:" +
                  std::to_string(tau_) + " (resume with the same --schedule)");
  }
  void Describe(TrainResult& r) const {
    AddSummaryLine(r, "schedule",
                   Printf("seeded, TAU %d: the %d workers' steps interleaved by --seed on one thread, "
                          "each update applied 0..%d steps late (no hot head)",
                          tau_, plan_.threads, tau_));
  }

 private:
  using State = ShardWorker<M>;
  using Grad = typename M::Grad;
  std::size_t Batch() const { return static_cast<std::size_t>(plan_.config.batch); }
  static std::size_t Index(int v) { return static_cast<std::size_t>(v); }

  // TAU + 1 buffers sized for any row of the training set, refused (kBadConfig) beyond memory.
  static DelayQueue<Grad> MakeQueue(const M& model, const RunPlan& plan) {
    const Grad prototype = model.MakeGrad(plan.train, static_cast<std::size_t>(plan.config.batch));
    const int tau = *plan.config.seeded_tau;
    CheckMemory({static_cast<double>(tau) + 1, GradBytes(prototype)}, ErrorCode::kBadConfig,
                "--schedule seeded:" + std::to_string(tau), "the delay queue's TAU + 1 gradients");
    return DelayQueue<Grad>(tau, prototype);
  }

  const M& model_;
  const RunPlan& plan_;
  std::atomic<bool>& halt_;
  int tau_;
  std::vector<float> storage_;
  Params w_;
  WorkerSet<State> workers_;
  std::vector<std::uint64_t> left_;  // per worker: samples of the epoch not yet taken
  DelayQueue<Grad> queue_;
};

}  // namespace corral::internal
