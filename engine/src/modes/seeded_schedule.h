// --schedule seeded:TAU (docs/algorithms.md, "Determinism"): the bounded-delay model of the
// HOGWILD! analyses (Niu et al. 2011; De Sa et al. 2015, "Taming the Wild") run exactly, for
// the asynchronous modes that take it (hogwild, buckwild), so that an asynchronous run can be
// repeated bit for bit, debugged, and measured against its delay bound.
//
// The logical workers are the mode's: worker w has its shard and its epoch's visiting order
// (EpochRng(seed, epoch, w)), as in a free-running run. What the threads' timing decides in a
// free run, two seeded streams decide here:
//   - the interleaving: each step is taken by worker v with probability (v's samples left) /
//     (all samples left), i.e. every interleaving of the workers' orders is equally likely;
//   - the staleness: the update computed at step t (from the model as it is then) is applied
//     at the end of step t + d_t, d_t uniform in [0, TAU]. The read of step t therefore sees
//     every update of steps <= t - TAU - 1 and a seeded subset of the last TAU. TAU = 0 is
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
// simulation as well as the simpler one. Its cost is the mode's parallelism: a seeded run
// trains at one core's speed.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <corral/rng.h>

#include "engine/src/runtime/coordinator.h"
#include "engine/src/runtime/describe.h"
#include "engine/src/runtime/mode_state.h"
#include "engine/src/runtime/shard_worker.h"

namespace corral::internal {

// The updates computed but not yet applied: TAU + 1 update buffers, one per step of the
// window (step t computes into slot t mod (TAU + 1), free again because its update is due by
// step t + TAU), and per due step a list of the slots due then, oldest first. Sized once:
// pushing and releasing never allocate.
// Thread safety: owner-only (the thread that runs the seeded epoch).
template <typename Update>
class DelayQueue {
 public:
  DelayQueue(int tau, const Update& prototype)
      : size_(static_cast<std::size_t>(tau) + 1),
        slots_(size_, prototype),
        next_(size_, kNone),
        head_(size_, kNone),
        tail_(size_, kNone) {}

  // The buffer step t computes its gradient into.
  Update& Slot(std::uint64_t t) { return slots_[t % size_]; }

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
      apply(static_cast<const Update&>(slots_[s]));
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
  std::vector<Update> slots_;
  std::vector<std::size_t> next_;  // per slot: the next slot due at the same step
  std::vector<std::size_t> head_;  // per due step mod (TAU + 1): its first and last slot
  std::vector<std::size_t> tail_;
  std::size_t pending_ = 0;
};

// The seeded streams of epoch `epoch`: EpochRng's streams of "workers" -1 and -2, which no
// worker uses (worker w draws from stream w + 1).
inline Rng InterleavingRng(std::uint64_t seed, int epoch) { return EpochRng(seed, epoch, -1); }
inline Rng DelayRng(std::uint64_t seed, int epoch) { return EpochRng(seed, epoch, -2); }

// Worker v's first sample of `epoch`: its resumed position in the run's first epoch, else 0.
// The coordinator passes each worker its own start; the seeded epoch runs on worker 0, which
// is passed `start0`.
inline std::uint64_t SeededStart(const RunPlan& plan, int v, int epoch, std::uint64_t start0) {
  if (v == 0) return start0;
  return epoch == plan.first_epoch ? plan.start[static_cast<std::size_t>(v)] : 0;
}

// One seeded epoch's driver and the schedule's part of the training state, for a mode whose
// step splits into compute (read the model, fill an Update) and apply (write it).
// Thread safety: owner-only (the thread that runs the seeded epoch; the coordinator between
// epochs).
template <typename Update>
class SeededSchedule {
 public:
  SeededSchedule(int tau, int workers, const Update& prototype)
      : tau_(tau), left_(static_cast<std::size_t>(workers), 0), queue_(tau, prototype) {}

  // Runs epoch `epoch`'s steps of every worker, each having begun its epoch (its `order` and
  // `position`, a ShardWorker's): compute(v, rows, update) reads the model for worker v's next
  // `rows` into `update`; apply(update) writes one into the model. Stops early (after applying
  // what is pending) once `halt` is set; publishes the samples taken in `steps`.
  template <typename Workers, typename Compute, typename Apply>
  void RunEpoch(std::uint64_t seed, int epoch, Workers& workers, std::size_t batch,
                const std::atomic<bool>& halt, std::atomic<std::uint64_t>& steps, Compute&& compute,
                Apply&& apply) {
    std::uint64_t left = 0;  // samples of the epoch not yet taken, all workers
    for (std::size_t v = 0; v < left_.size(); ++v) {
      left_[v] = workers[v].order.size() - workers[v].position;
      left += left_[v];
    }
    Rng interleaving = InterleavingRng(seed, epoch);
    Rng delays = DelayRng(seed, epoch);
    constexpr std::uint64_t kChunk = 256;  // steps between halt checks and progress reports
    std::uint64_t t = 0;
    for (; left > 0; ++t) {
      if (t % kChunk == 0) {
        if (halt.load(std::memory_order_relaxed)) break;
        steps.store(workers.Samples(), std::memory_order_relaxed);  // progress display only
      }
      std::uint64_t r = interleaving.Below(left);
      std::size_t v = 0;
      while (r >= left_[v]) r -= left_[v++];
      auto& self = workers[v];
      const std::size_t count = std::min<std::uint64_t>(batch, left_[v]);
      compute(static_cast<int>(v),
              std::span<const std::uint32_t>(self.order).subspan(self.position, count),
              queue_.Slot(t));
      queue_.Push(t, tau_ == 0 ? 0 : delays.Below(static_cast<std::uint64_t>(tau_) + 1));
      queue_.Release(t, apply);
      self.position += count;
      self.samples += count;
      left_[v] -= count;
      left -= count;
    }
    queue_.Drain(t, apply);
    steps.store(workers.Samples(), std::memory_order_relaxed);
  }

  // At an epoch end nothing is pending and the streams restart from (seed, epoch): the state
  // is TAU alone, kept so that a checkpoint resumes only under the schedule that wrote it.
  void VisitState(StateVisitor& v) const {
    const std::string key = "schedule/seeded_tau";
    v.Require(!v.loading() || v.HasCounter(key),
              "it was written under --schedule free, this run has seeded:" + std::to_string(tau_) +
                  " (resume with the same --schedule)");
    auto tau = static_cast<std::uint64_t>(tau_);
    v.Count(key, tau);
    v.Require(tau == static_cast<std::uint64_t>(tau_),
              "it was written under --schedule seeded:" + std::to_string(tau) +
                  ", this run has seeded:" + std::to_string(tau_) +
                  " (resume with the same --schedule)");
  }

  // The summary's line; `what` says what the mode leaves out under the schedule.
  void Describe(TrainResult& r, int workers, const char* what) const {
    AddSummaryLine(r, "schedule",
                   Printf("seeded, TAU %d: the %d workers' steps interleaved by --seed on one "
                          "thread, each update applied 0..%d steps late (%s)",
                          tau_, workers, tau_, what));
  }

 private:
  int tau_;
  std::vector<std::uint64_t> left_;  // per worker: samples of the epoch not yet taken
  DelayQueue<Update> queue_;
};

}  // namespace corral::internal
