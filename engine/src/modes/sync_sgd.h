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
// With --link (and --topology star) a step is also costed as a parameter server would pay it
// (Lian et al. 2017's C-PSGD): each leaf's gradient travels to worker 0 over its link, and
// worker 0 then sends the model to every leaf through its one NIC, serialised (link.h). The
// barrier completion advances one shared virtual clock by the slowest worker's compute (thread
// CPU time) and that communication; virtual_s reports it, so sync and dpsgd compare on one
// network model. bytes_sent still counts the gradients only.
#pragma once

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstddef>
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
#include "engine/src/gossip/mixing.h"
#include "engine/src/runtime/coordinator.h"
#include "engine/src/runtime/shard_worker.h"

namespace corral::internal {

template <Model M>
class SyncMode {
 public:
  SyncMode(const M& model, const RunPlan& plan, std::atomic<bool>& halt)
      : model_(model), plan_(plan), halt_(halt), storage_(plan.initial), w_(storage_),
        workers_(plan.threads), barrier_(plan.threads, Decide{this}) {
    steps_per_epoch_ = StepsPerEpoch(plan.train.rows(), plan.threads, Batch());
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
    if (plan.specs.link) {
      for (int w = 0; w < plan.threads; ++w) links_.emplace_back(*plan.specs.link, plan.threads);
    }
  }

  void Setup(int w) {
    State& self = workers_[w];
    self.Build(model_, plan_.train, w, plan_.threads, Batch(), plan_.shuffle, plan_.copy_shards);
    self.rows.resize(Batch());
    if (plan_.config.algorithm == Algorithm::kQsgd) {
      const std::size_t dim = Dim(*self.grad);
      self.codec = MakeCompressor(plan_.specs.compress, dim);
      self.wire.resize(self.codec->WireBytes(dim));
    }
  }

  void Epoch(int w, int epoch, std::uint64_t start, std::atomic<std::uint64_t>& steps) {
    State& self = workers_[w];
    self.BeginEpoch(plan_.config.seed, epoch, w, start);
    const float eta = plan_.EpochLr(epoch);
    const std::size_t batch = Batch();
    const std::size_t rows = self.order.size();
    self.cpu_mark = ThreadCpuSeconds();
    for (std::size_t s = start / batch; s < steps_per_epoch_; ++s) {
      try {
        for (std::size_t j = 0; j < batch; ++j) self.rows[j] = self.order[(s * batch + j) % rows];
        model_.Gradient(w_, self.shard, std::span<const std::uint32_t>(self.rows), *self.grad,
                        *self.workspace);
        self.last_bytes = Send(self);
        self.bytes_sent += self.last_bytes;
        if (!links_.empty()) {
          const double cpu = ThreadCpuSeconds();
          self.compute = cpu - self.cpu_mark;  // read by AccountStep after barrier A's arrival
          self.cpu_mark = cpu;
        }
      } catch (...) {
        halt_.store(true, std::memory_order_relaxed);  // before arriving: Decide must see it
        barrier_.arrive_and_drop();  // the others must not wait for this worker again
        throw;
      }
      barrier_.arrive_and_wait();  // A: every gradient is written
      if (stop_) break;
      Reduce(w, eta);
      barrier_.arrive_and_wait();  // B: the model is updated
      self.samples += batch;
      self.position = (s + 1) * batch;
      steps.store(self.samples, std::memory_order_relaxed);  // progress display only
    }
  }

  std::uint64_t Position(int w) const { return workers_.Position(w); }
  std::vector<std::span<const std::byte>> OwnedMemory(int w) const { return workers_.OwnedMemory(w); }
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

 private:
  struct State : ShardWorker<M> {
    std::vector<std::uint32_t> rows;        // this step's mini-batch
    std::unique_ptr<Compressor> codec;      // qsgd only
    std::vector<std::byte> wire;            // qsgd only: the encoded gradient
    std::uint64_t bytes_sent = 0;           // what this worker's gradients cost on a wire
    std::uint64_t last_bytes = 0;           // this step's gradient message (--link)
    double compute = 0;                     // this step's thread CPU seconds (--link)
    double cpu_mark = 0;
  };
  // Barrier completion: runs once per phase on one thread, all others waiting.
  struct Decide {
    SyncMode* self;
    void operator()() noexcept {
      self->stop_ = self->halt_.load(std::memory_order_relaxed);
      // Phases alternate A, B; a step is costed once, when its gradients are all written.
      if (!self->links_.empty() && (self->phase_++ % 2) == 0) self->AccountStep();
    }
  };

  // The parameter-server step on the links: leaves upload to worker 0, which broadcasts the
  // model once it has every gradient. Runs in the barrier completion (all workers waiting).
  void AccountStep() noexcept {
    const std::uint64_t model_bytes = storage_.size() * sizeof(float);
    double centre = clock_ + workers_[0].compute;
    for (std::size_t j = 1; j < workers_.size(); ++j) {
      const double ready = clock_ + workers_[j].compute;
      centre = std::max(centre, links_[j].Send(ready, 0, workers_[j].last_bytes));
    }
    double done = centre;
    for (std::size_t j = 1; j < workers_.size(); ++j) {
      done = std::max(done, links_[0].Send(centre, static_cast<int>(j), model_bytes));
    }
    clock_ = done;
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

  // Folds every worker's gradient into worker w's slice of the coordinates.
  void Reduce(int w, float eta) {
    const std::size_t d = storage_.size();
    const std::size_t lo = ShardBegin(d, w, plan_.threads);
    const std::size_t hi = ShardBegin(d, w + 1, plan_.threads);
    const float scale = 1.0f / static_cast<float>(plan_.threads);
    if constexpr (std::is_same_v<typename M::Grad, SparseGrad>) {
      // Each entry as its own proximal step of size eta/n (step.h): the average over workers.
      const float step = eta * scale;
      for (const State& from : workers_) {
        const SparseGrad& g = *from.grad;
        for (std::size_t k = 0; k < g.size(); ++k) {
          const std::uint32_t u = g.index(k);
          if (u < lo || u >= hi) continue;
          w_.Store(u, ProximalStep(w_.Load(u), g.grad(k), step, g.l2(k)));
        }
      }
    } else {
      const float shrink = ProximalShrink(eta, workers_[w].grad->l2);
      for (std::size_t u = lo; u < hi; ++u) {
        float sum = 0;
        for (const State& from : workers_) sum += from.grad->grad[u];
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
  std::size_t steps_per_epoch_ = 0;
  std::barrier<Decide> barrier_;
  bool stop_ = false;  // W: barrier completion; R: workers after the barrier (it orders both)
  // --link only; touched by the barrier completion alone (and the coordinator while parked).
  std::vector<LinkModel> links_;  // one per worker: its NIC and links
  double clock_ = 0;              // virtual seconds of the synchronous run
  std::uint64_t phase_ = 0;       // barrier phases completed
};

}  // namespace corral::internal
