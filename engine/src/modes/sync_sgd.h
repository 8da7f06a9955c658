// Synchronous mini-batch SGD over all workers (C-PSGD), and QSGD on top of it.
//
// Every step each worker computes the gradient of its own mini-batch at the current model; the
// average over workers is then reduced without a central lock: worker i owns the coordinates
// [d*i/n, d*(i+1)/n) and folds every worker's gradient into that slice of the model (a
// reduce-scatter whose gather is free, since the model is shared memory). One step is thus one
// update with n*batch samples. `qsgd` first replaces each worker's gradient values by their
// QSGD quantization (Alistarh et al. 2017), as a worker would send them.
//
// Two std::barrier phases per step order it: the gradients (phase A) are complete before anyone
// reduces, and the model slices (phase B) before anyone computes the next gradient. Within a
// phase no location has a writer and another accessor, so there is no race. The barrier's
// completion step (run by one thread while the others wait) decides whether to stop, so every
// worker leaves the loop at the same step. A worker whose gradient throws drops out of the
// barrier (arrive_and_drop) after raising `halt`, so the others stop at that same step.
//
// Across ranks (mpirun) every rank holds the whole model, and the barrier's completion of phase
// A also gathers every rank's gradients (Cluster::AllGather, collectives.h): each rank then folds
// all n workers' gradients, in global worker order, into its copy, so the copies stay equal and
// every coordinate sees the operations of one process with n workers, in the same order: the
// same bits. The stop decision travels with the gradients, and with --link so do each worker's
// compute time and message size, so every rank advances the same virtual clock.
//
// --allreduce ring, dense gradients: the completion gathers only the records' heads (stop flag
// and costs), then, unless the run stops, passes one running sum of the gradients round the
// ranks (SumRing, sum_ring.h), rank 0's workers' terms first: every rank receives the totals
// formed in global worker order, and Reduce folds them as its one source (a sum started at +0
// is never -0, so 0 + total is the total: the same bits again). The ring's endpoint is the
// rank's, driven by the one thread that runs the completion, so at most one thread acts as it.
// Sparse gradients are a sequence of proximal steps per entry, not a sum: they keep the gather
// (the summary says so).
//
// With --link (and --topology star) a step is also costed as a parameter server would pay it
// (Lian et al. 2017's C-PSGD): each leaf's gradient travels to worker 0 over its link, and
// worker 0 then sends the model to every leaf through its one NIC, serialised (link.h). The
// barrier completion advances one shared virtual clock by the slowest worker's compute (thread
// CPU time of its gradient, message and reduction, not of the barriers) and that communication;
// virtual_s reports it, so sync and dpsgd compare on one network model. bytes_sent still counts
// the gradients only.
#pragma once

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <corral/dense_grad.h>
#include <corral/sparse_grad.h>
#include <corral/step.h>

#include "engine/src/channel/link.h"
#include "engine/src/compress/compressor.h"
#include "engine/src/gossip/gossip_period.h"
#include "engine/src/gossip/mixing.h"
#include "engine/src/modes/sum_ring.h"
#include "engine/src/runtime/coordinator.h"
#include "engine/src/runtime/describe.h"
#include "engine/src/runtime/shard_worker.h"

namespace corral::internal {

template <Model M>
class SyncMode {
 public:
  SyncMode(const M& model, const RunPlan& plan, std::atomic<bool>& halt)
      : model_(model), plan_(plan), halt_(halt), storage_(plan.initial), w_(storage_),
        workers_(plan.threads), first_(plan.first_worker), barrier_(plan.threads, Decide{this}) {
    steps_per_epoch_ = StepsPerEpoch(plan.held.total, plan.workers, Batch());
    // The workers take every step together: resumed at different steps, the ones that finish
    // first would leave the others waiting at the barrier forever. A sync checkpoint saves
    // equal positions; unequal ones mean a damaged file.
    for (const std::uint64_t at : plan.start) {
      if (at / Batch() != plan.start.front() / Batch()) {
        throw Error(ErrorCode::kBadInput,
                    plan.config.resume_path + ": the workers' positions differ (" +
                        std::to_string(plan.start.front()) + " and " + std::to_string(at) +
                        "), but " + std::string(ToString(plan.config.algorithm)) +
                        " workers step together (a damaged checkpoint)");
      }
    }
    if (plan.config.algorithm == Algorithm::kQsgd) {
      MakeCompressor(plan.specs.compress, 1);  // reject a bad spec before the workers start
    }
    if (plan.specs.link) {  // every worker's, across ranks too: each rank keeps the clock
      for (int w = 0; w < plan.workers; ++w) links_.emplace_back(*plan.specs.link, plan.workers);
      costs_.resize(static_cast<std::size_t>(plan.workers));
    }
    if (plan.cluster->ranks() > 1 && plan.config.allreduce == AllReduce::kRing &&
        std::is_same_v<typename M::Grad, DenseGrad>) {
      ring_.emplace(*plan.cluster, storage_.size());  // collective
    }
  }

  void Setup(int w) {
    State& self = workers_[w - first_];
    self.Build(model_, plan_.train, plan_.held, w, plan_.workers, Batch(), plan_.shuffle, plan_.copy_shards);
    self.rows.resize(Batch());
    if (plan_.config.algorithm == Algorithm::kQsgd) {
      const std::size_t dim = Dim(*self.grad);
      self.codec = MakeCompressor(plan_.specs.compress, dim);
      self.wire.resize(self.codec->WireBytes(dim));
    }
    if (ring_ && w == first_) ring_->Bind();  // the rank's end, first-touched by its first worker
  }

  // After every Setup (coordinator, workers parked): the gradients every step reduces, in
  // global worker order; across ranks, the buffers their gathering uses.
  void AfterSetup() {
    sources_.clear();
    if (plan_.cluster->ranks() == 1) {
      for (const State& s : workers_) sources_.push_back(&*s.grad);
      return;
    }
    std::size_t capacity = 0;
    for (const State& s : workers_) capacity = std::max(capacity, Dim(*s.grad));
    capacity = MaxAcross(*plan_.cluster, capacity);  // one record size on every rank
    record_ = ring_ ? kRecordHead : RecordBytes(capacity);  // ring: the heads only
    mine_.assign(record_ * workers_.size(), std::byte{0});
    all_.assign(record_ * static_cast<std::size_t>(plan_.workers), std::byte{0});
    remote_.clear();
    if (ring_) {  // the totals, as the one source Reduce folds
      totals_ = MakeEmpty(storage_.size());
      sources_.push_back(&totals_);
      return;
    }
    remote_.reserve(static_cast<std::size_t>(plan_.workers));
    for (int g = 0; g < plan_.workers; ++g) {
      const bool local = g >= first_ && g < first_ + plan_.threads;
      remote_.emplace_back(local ? typename M::Grad() : MakeEmpty(capacity));
      sources_.push_back(local ? &*workers_[g - first_].grad : &remote_.back());
    }
  }

  void Epoch(int w, int epoch, std::uint64_t start, std::atomic<std::uint64_t>& steps) {
    State& self = workers_[w - first_];
    self.BeginEpoch(plan_.config.seed, epoch, w, start);
    const float eta = plan_.EpochLr(epoch);
    const std::size_t batch = Batch();
    const std::size_t rows = self.order.size();
    for (std::size_t s = start / batch; s < steps_per_epoch_; ++s) {
      try {
        const double cpu_start = links_.empty() ? 0 : ThreadCpuSeconds();
        for (std::size_t j = 0; j < batch; ++j) self.rows[j] = self.order[(s * batch + j) % rows];
        model_.Gradient(w_, self.shard, std::span<const std::uint32_t>(self.rows), *self.grad,
                        *self.workspace);
        self.last_bytes = Send(self);
        self.bytes_sent += self.last_bytes;
        if (!links_.empty()) {  // read by AccountStep after barrier A's arrival
          self.compute = self.reduce_cpu + (ThreadCpuSeconds() - cpu_start);
        }
      } catch (...) {
        halt_.store(true, std::memory_order_relaxed);  // before arriving: Decide must see it
        barrier_.arrive_and_drop();  // the others must not wait for this worker again
        throw;
      }
      barrier_.arrive_and_wait();  // A: every gradient is written
      if (stop_) break;
      const double cpu_reduce = links_.empty() ? 0 : ThreadCpuSeconds();
      Reduce(w, eta);
      if (!links_.empty()) self.reduce_cpu = ThreadCpuSeconds() - cpu_reduce;
      barrier_.arrive_and_wait();  // B: the model is updated
      self.samples += batch;
      self.position = (s + 1) * batch;
      steps.store(self.samples, std::memory_order_relaxed);  // progress display only
    }
  }

  std::uint64_t Position(int w) const { return workers_.Position(w - first_); }
  std::vector<std::span<const std::byte>> OwnedMemory(int w) const { return workers_.OwnedMemory(w - first_); }
  std::uint64_t EpochLength(int /*w*/) const { return steps_per_epoch_ * Batch(); }
  std::uint64_t Samples() const { return workers_.Samples(); }
  std::pair<Shuffle, std::uint64_t> Shuffling() const { return workers_.Shuffling(); }
  // The shared model read with relaxed atomic loads: safe beside the workers (LiveModel).
  static constexpr bool kSnapshotWhileRunning = true;
  void Snapshot(std::span<float> out) const { w_.CopyTo(out); }
  std::uint64_t BytesSent() const {
    return workers_.Sum([](const State& s) { return s.bytes_sent; });
  }
  std::uint64_t BytesSentMax() const {
    return workers_.Max([](const State& s) { return s.bytes_sent; });
  }
  // With --link: the parameter server's virtual clock; otherwise nullopt (wall time).
  std::optional<double> VirtualSeconds() const {
    if (links_.empty()) return std::nullopt;
    return clock_;
  }
  // Across ranks: which reduction ran, its mean wall time a step (waiting for the slowest rank
  // included), and why not the ring when it was asked for.
  void Describe(TrainResult& r) const {
    if (plan_.cluster->ranks() == 1) return;
    const AllReduce ran = ring_ ? AllReduce::kRing : AllReduce::kGather;
    AddSetting(r, "allreduce", std::string(ToString(ran)));
    const double steps = static_cast<double>(std::max<std::uint64_t>(reduced_, 1));
    AddSetting(r, "allreduce_ms", 1e3 * reduce_s_ / steps);
    if (!ring_ && plan_.config.allreduce == AllReduce::kRing) {
      AddSummaryLine(r, "allreduce",
                     "gather (--allreduce ring sums dense gradients; a sparse model's are "
                     "proximal steps per entry)");
    }
  }

 private:
  struct State : ShardWorker<M> {
    std::vector<std::uint32_t> rows;        // this step's mini-batch
    std::unique_ptr<Compressor> codec;      // qsgd only
    std::vector<std::byte> wire;            // qsgd only: the encoded gradient
    std::uint64_t bytes_sent = 0;           // what this worker's gradients cost on a wire
    std::uint64_t last_bytes = 0;           // this step's gradient message (--link)
    // --link: this step's thread CPU seconds, its gradient and message and the previous step's
    // reduction (reduce_cpu); not the barriers', whose completions run the collectives across
    // ranks (their polling would count as compute on whichever worker ran them).
    double compute = 0;
    double reduce_cpu = 0;
  };
  // Barrier completion: runs once per phase on one thread, all others waiting.
  struct Decide {
    SyncMode* self;
    void operator()() noexcept {
      self->stop_ = self->halt_.load(std::memory_order_relaxed);
      // Phases alternate A, B; a step is costed (and gathered across ranks) once, when its
      // gradients are all written.
      const bool gradients = (self->phase_++ % 2) == 0;
      if (gradients && !self->all_.empty()) {
        const double start = WallSeconds();
        self->Gather();  // across ranks: the costs too
        self->reduce_s_ += WallSeconds() - start;
        ++self->reduced_;
      } else if (gradients && !self->links_.empty()) {
        for (std::size_t j = 0; j < self->workers_.size(); ++j) {
          self->costs_[j] = {self->workers_[j].compute, self->workers_[j].last_bytes};
        }
      }
      if (gradients && !self->links_.empty()) self->AccountStep();
    }
  };

  // The parameter-server step on the links (every worker's, in global order): leaves upload
  // to worker 0, which broadcasts the model once it has every gradient. Runs in the barrier
  // completion (all workers waiting), after costs_ holds this step's.
  void AccountStep() noexcept {
    const std::uint64_t model_bytes = storage_.size() * sizeof(float);
    double centre = clock_ + costs_[0].compute;
    for (std::size_t j = 1; j < costs_.size(); ++j) {
      const double ready = clock_ + costs_[j].compute;
      centre = std::max(centre, links_[j].Send(ready, 0, costs_[j].bytes));
    }
    double done = centre;
    for (std::size_t j = 1; j < costs_.size(); ++j) {
      done = std::max(done, links_[0].Send(centre, static_cast<int>(j), model_bytes));
    }
    clock_ = done;
  }

  // Across ranks, one worker's gradient travels as a record of fixed size (collectives gather
  // equal blocks): its entry count, the stop flag, its step's Cost (--link; zeros without),
  // then the entries (sparse: indices, values, L2 weights up to the largest capacity; dense:
  // the d values and the L2 weight).
  struct Cost {
    double compute = 0;       // the step's thread CPU seconds
    std::uint64_t bytes = 0;  // its gradient message
  };
  static constexpr std::size_t kCountAndStop = 2 * sizeof(std::uint32_t);
  static constexpr std::size_t kRecordHead = kCountAndStop + sizeof(Cost);
  static std::size_t RecordBytes(std::size_t capacity) {
    if constexpr (std::is_same_v<typename M::Grad, SparseGrad>) {
      return kRecordHead + 12 * capacity;
    } else {
      return kRecordHead + 4 * (capacity + 1);
    }
  }
  static typename M::Grad MakeEmpty(std::size_t capacity) {
    if constexpr (std::is_same_v<typename M::Grad, SparseGrad>) {
      return SparseGrad(capacity);
    } else {
      return DenseGrad(capacity);
    }
  }
  static void PackHead(std::size_t count, bool stop, Cost cost, std::byte* at) {
    const std::uint32_t head[2] = {static_cast<std::uint32_t>(count), stop ? 1u : 0u};
    std::memcpy(at, head, sizeof head);
    std::memcpy(at + kCountAndStop, &cost, sizeof cost);
  }
  static void Pack(const SparseGrad& g, bool stop, Cost cost, std::byte* at) {
    PackHead(g.size(), stop, cost, at);
    at += kRecordHead;
    for (std::size_t k = 0; k < g.size(); ++k, at += 12) {
      const std::uint32_t u = g.index(k);
      const float v[2] = {g.grad(k), g.l2(k)};
      std::memcpy(at, &u, 4);
      std::memcpy(at + 4, v, 8);
    }
  }
  static void Pack(const DenseGrad& g, bool stop, Cost cost, std::byte* at) {
    PackHead(g.grad.size(), stop, cost, at);
    std::memcpy(at + kRecordHead, g.grad.data(), 4 * g.grad.size());
    std::memcpy(at + kRecordHead + 4 * g.grad.size(), &g.l2, 4);
  }
  // Unpacks a record into `g`; returns its stop flag.
  static bool Unpack(const std::byte* at, SparseGrad& g) {
    std::uint32_t head[2];
    std::memcpy(head, at, sizeof head);
    at += kRecordHead;
    g.Clear();
    for (std::uint32_t k = 0; k < head[0]; ++k, at += 12) {
      std::uint32_t u = 0;
      float v[2];
      std::memcpy(&u, at, 4);
      std::memcpy(v, at + 4, 8);
      g.Push(u, v[0], v[1]);
    }
    return head[1] != 0;
  }
  static bool Unpack(const std::byte* at, DenseGrad& g) {
    std::uint32_t head[2];
    std::memcpy(head, at, sizeof head);
    std::memcpy(g.grad.data(), at + kRecordHead, 4 * g.grad.size());
    std::memcpy(&g.l2, at + kRecordHead + 4 * g.grad.size(), 4);
    return head[1] != 0;
  }
  // Barrier completion of phase A, across ranks (one thread per rank, the others waiting, so
  // the cluster is called by one thread at a time): every worker's gradient, stop flag and
  // (--link) cost from every rank; a stop on any rank stops all at this step. With the ring,
  // the records are heads only, and the ring then carries the gradients' sum (unless the run
  // stops here: every rank agrees on that from the heads, so none enters the ring alone).
  void Gather() noexcept {
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      const State& w = workers_[i];
      const Cost cost{w.compute, w.last_bytes};
      if (ring_) {
        PackHead(0, stop_, cost, mine_.data() + i * record_);
      } else {
        Pack(*w.grad, stop_, cost, mine_.data() + i * record_);
      }
    }
    plan_.cluster->AllGather(mine_, all_);
    for (int g = 0; g < plan_.workers; ++g) {
      const std::byte* at = all_.data() + static_cast<std::size_t>(g) * record_;
      std::uint32_t head[2];
      std::memcpy(head, at, sizeof head);
      stop_ = stop_ || head[1] != 0;
      if (!costs_.empty()) {
        std::memcpy(&costs_[static_cast<std::size_t>(g)], at + kCountAndStop, sizeof(Cost));
      }
      if (!ring_ && (g < first_ || g >= first_ + plan_.threads)) {
        Unpack(at, remote_[static_cast<std::size_t>(g)]);
      }
    }
    if (ring_ && !stop_) RingSum();
  }

  // --allreduce ring: this step's gradient totals into totals_, each rank adding its workers'
  // terms in worker order, as Reduce's sum would. An aborted transport (a rank failed) stops
  // the run at this step; a message out of order (a bug) throws, which ends the process here
  // (noexcept), as a failing gather would.
  void RingSum() noexcept {
    if constexpr (std::is_same_v<typename M::Grad, DenseGrad>) {
      const bool done = ring_->Run(totals_.grad, [&](std::size_t lo, std::span<float> part) {
        for (std::size_t i = 0; i < workers_.size(); ++i) {
          const float* g = workers_[i].grad->grad.data() + lo;
          for (std::size_t k = 0; k < part.size(); ++k) part[k] += g[k];
        }
      });
      if (!done) stop_ = true;
    }
  }

  static std::size_t Dim(const SparseGrad& g) { return g.capacity(); }
  static std::size_t Dim(const DenseGrad& g) { return g.grad.size(); }
  static std::span<float> Values(SparseGrad& g) { return g.grads(); }
  static std::span<float> Values(DenseGrad& g) { return g.grad; }

  // Quantizes the gradient values in place when a codec is set (what the receivers would
  // decode) and returns the bytes the worker's message costs: values plus, for a sparse
  // gradient, 4-byte indices.
  std::size_t Send(State& self) {
    const std::span<float> values = Values(*self.grad);
    const std::size_t index_bytes =
        std::is_same_v<typename M::Grad, SparseGrad> ? values.size() * sizeof(std::uint32_t) : 0;
    if (!self.codec) return values.size() * sizeof(float) + index_bytes;
    const std::size_t bytes = self.codec->Encode(values, self.wire, self.rng);
    self.codec->Decode(std::span<const std::byte>(self.wire.data(), bytes), values);
    return bytes + index_bytes;
  }

  // Folds every worker's gradient (all ranks', in global worker order) into this rank's
  // worker w's slice of the coordinates.
  void Reduce(int w, float eta) {
    const std::size_t d = storage_.size();
    const std::size_t lo = ShardBegin(d, w - first_, plan_.threads);
    const std::size_t hi = ShardBegin(d, w - first_ + 1, plan_.threads);
    const float scale = 1.0f / static_cast<float>(plan_.workers);
    if constexpr (std::is_same_v<typename M::Grad, SparseGrad>) {
      // Each entry as its own proximal step of size eta/n (step.h): the average over workers.
      const float step = eta * scale;
      for (const SparseGrad* from : sources_) {
        const SparseGrad& g = *from;
        for (std::size_t k = 0; k < g.size(); ++k) {
          const std::uint32_t u = g.index(k);
          if (u < lo || u >= hi) continue;
          w_.Store(u, ProximalStep(w_.Load(u), g.grad(k), step, g.l2(k)));
        }
      }
    } else {
      const float shrink = ProximalShrink(eta, workers_[w - first_].grad->l2);
      for (std::size_t u = lo; u < hi; ++u) {
        float sum = 0;
        for (const DenseGrad* from : sources_) sum += from->grad[u];
        w_.Store(u, (w_.Load(u) - eta * scale * sum) * shrink);
      }
    }
  }

  std::size_t Batch() const { return static_cast<std::size_t>(plan_.config.batch); }

  const M& model_;
  const RunPlan& plan_;
  std::atomic<bool>& halt_;
  std::vector<float> storage_;
  Params w_;
  WorkerSet<State> workers_;
  const int first_;  // this rank's first worker (RunPlan::first_worker)
  // Every worker's gradient in global worker order: this rank's own, and across ranks the
  // others' as gathered (remote_, whose entries for this rank's workers stay empty), or with the
  // ring the totals alone. Set in AfterSetup; written by the barrier completion, read by every
  // worker after it.
  std::vector<const typename M::Grad*> sources_;
  std::vector<typename M::Grad> remote_;
  // --allreduce ring (dense, across ranks): the endpoint, and the totals it fills each step
  // (written by the barrier completion, read by every worker after it).
  std::optional<SumRing> ring_;
  typename M::Grad totals_;
  std::size_t record_ = 0;  // bytes per record (for the largest gradient of any rank)
  std::vector<std::byte> mine_, all_;  // this rank's records; every rank's (empty: one process)
  std::size_t steps_per_epoch_ = 0;
  std::barrier<Decide> barrier_;
  bool stop_ = false;  // W: barrier completion; R: workers after the barrier (it orders both)
  // --link only; touched by the barrier completion alone (and the coordinator while parked).
  std::vector<LinkModel> links_;  // one per worker (every rank's): its NIC and links
  std::vector<Cost> costs_;       // this step's, by global worker
  double clock_ = 0;              // virtual seconds of the synchronous run
  std::uint64_t phase_ = 0;       // barrier phases completed
  // Across ranks; touched by the barrier completion alone (Describe reads them after the run).
  double reduce_s_ = 0;        // wall seconds in Gather (and the ring), every step
  std::uint64_t reduced_ = 0;  // steps reduced
};

}  // namespace corral::internal
