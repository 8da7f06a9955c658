// Replica modes under RunShared (DESIGN.md §2): D-PSGD (Lian et al. 2017) and local SGD.
//
// Every worker owns a replica x_i, allocated and first-touched on its own thread (NUMA-local).
// A step draws `--batch` rows of the worker's shard and computes g_i at x_i. Every
// `--gossip-every` K-th step is also a gossip round r: the worker sends x_i (fp32) to the
// recipients of its topology row, receives its neighbours' models of the same round r (no
// global barrier: it waits only for them) and mixes
//   mix-then-step (as written):  x_i <- sum_j W_ij x_j - eta g_i(x_i)
//   step-then-mix:               x_i <- sum_j W_ij (x_j - eta g_j(x_j))
// The step is the engine's proximal step (corral/step.h ApplyStep) on a Params view of the
// replica, so sparse models keep their per-coordinate L2. Steps that are not rounds are plain
// local SGD steps.
// `local` is the same machinery on the complete graph (Metropolis weights there are 1/n: the
// exact average), step-then-mix, with K = H local steps between averages. Each worker sums the
// n models in worker order, self included, so every replica is bitwise the same average.
// Memory: the transport keeps 2 message slots of d floats per directed edge, on the receiver:
// 2 * degree * d floats per worker (so `local` needs 2 (n-1) d per worker).
//
// Rounds line up because every worker takes the same number of steps per epoch (the longest
// shard's, shorter shards wrap around as in sync) and the same K.
//
// Virtual time (DESIGN.md §5). Each worker's clock advances by its thread's CPU time for its
// compute (gradient, step, mixing) and by modelled communication: a message's due time is
// LinkModel::Send(clock at send, ...), and a receiver's clock becomes max(own, due) for every
// message it mixes. Without --link the links are infinitely fast (due = the sender's clock),
// so the clock is compute time plus waiting for slower neighbours. In realtime link mode the
// transport holds messages until their wall-clock due time and virtual_s is the wall time.
//
// Failure and stopping. A worker that throws aborts the transport before its exception leaves
// the epoch: neighbours blocked in Send or Receive return at once and leave quietly, and the
// thrower's error is the one Crew reports. A worker that sees `halt` (time limit, cancellation,
// a failed worker) aborts the transport too, so nobody waits for a round that will not come;
// the run then ends after this epoch (RunShared always does on halt). A round whose messages
// did not all arrive is not mixed: every replica stays a consistent model.
// Resume happens at epoch boundaries only: workers stopped by halt sit at different rounds, so
// a partial epoch reports position 0 for every worker (and Epoch ignores a saved `start`); the
// resumed run repeats that epoch from its start, from the mean model the checkpoint holds.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <corral/error.h>
#include <corral/params.h>
#include <corral/step.h>
#include <corral/topology.h>

#include "engine/src/channel/link.h"
#include "engine/src/channel/shm_transport.h"
#include "engine/src/runtime/live.h"
#include "engine/src/gossip/mixing.h"
#include "engine/src/runtime/coordinator.h"
#include "engine/src/runtime/shard_worker.h"

namespace corral::internal {

inline bool IsReplicaMode(Algorithm a) { return a == Algorithm::kDpsgd || a == Algorithm::kLocal; }

// Every directed channel a topology uses over its period: j -> i wherever W_ij != 0.
inline std::vector<std::pair<int, int>> GossipEdges(const Topology& topology) {
  std::vector<std::pair<int, int>> edges;
  for (int t = 0; t < topology.period(); ++t) {
    for (int i = 0; i < topology.workers(); ++i) {
      for (const Neighbour& to : topology.Recipients(i, static_cast<std::uint64_t>(t))) {
        edges.emplace_back(i, to.worker);
      }
    }
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  return edges;
}

// `hierarchical` gossip groups from where the workers run: each worker's NUMA node, or one
// group when any is unknown (unpinned).
inline std::vector<int> NumaGroups(const std::vector<int>& worker_numa) {
  for (const int node : worker_numa) {
    if (node < 0) return {};
  }
  return worker_numa;
}

template <typename M>
class ReplicaMode {
 public:
  ReplicaMode(const M& model, const RunPlan& plan, std::atomic<bool>& halt)
      : model_(model), plan_(plan), halt_(halt),
        local_(plan.config.algorithm == Algorithm::kLocal),
        topology_(MakeTopology(local_ ? "complete" : plan.config.topology, plan.threads,
                               {.groups = NumaGroups(plan.worker_numa)})),
        order_(local_ ? MixOrder::kStepThenMix : plan.config.mix_order),
        gossip_every_(static_cast<std::uint64_t>(plan.config.gossip_every)),
        link_mode_(ParseLinkMode(plan.config.link_mode)),
        workers_(static_cast<std::size_t>(plan.threads)) {
    if (!plan.config.link.empty()) link_ = ParseLinkSpec(plan.config.link);
    const std::size_t bytes = model.NumParams() * sizeof(float);
    if (bytes > (std::size_t{1} << 31)) {
      throw Error(ErrorCode::kBadConfig, "dpsgd: a model of " + std::to_string(bytes) +
                                             " bytes exceeds the transport's 2 GiB message limit");
    }
    transport_ = std::make_unique<ShmTransport>(
        ShmTransportConfig{.workers = plan.threads,
                           .edges = GossipEdges(topology_),
                           .max_payload_bytes = static_cast<std::uint32_t>(bytes),
                           .link_mode = link_mode_});
    for (int t = 0; t < topology_.period(); ++t) {
      for (int w = 0; w < plan.threads; ++w) {
        max_degree_ = std::max(max_degree_, topology_.Neighbours(w, static_cast<std::uint64_t>(t)).size());
      }
    }
    std::size_t longest = 0;
    for (int w = 0; w < plan.threads; ++w) {
      longest = std::max(longest, ShardBegin(plan.train.rows(), w + 1, plan.threads) -
                                      ShardBegin(plan.train.rows(), w, plan.threads));
    }
    steps_per_epoch_ = (longest + Batch() - 1) / Batch();
    if (plan.live) tap_.Init(plan.threads, model.NumParams());
  }

  void Setup(int w) {
    State& self = Worker(w);
    self.Build(model_, plan_.train, w, plan_.threads, Batch());
    self.rows.resize(Batch());
    // First touch on the owner's thread: the replica and its mixing scratch are NUMA-local.
    self.x.assign(plan_.initial.begin(), plan_.initial.end());
    self.mixed.assign(plan_.initial.size(), 0.0f);
    self.held.reserve(max_degree_);
    self.sources.reserve(max_degree_ + 1);
    self.link.emplace(link_, plan_.threads);
    transport_->Bind(w);
    if (tap_.active()) tap_.Park(w, self.x);
  }

  void Epoch(int w, int epoch, std::uint64_t /*start: see the header*/,
             std::atomic<std::uint64_t>& steps) {
    State& self = Worker(w);
    if (tap_.active()) tap_.Unpark(w);
    try {
      RunEpoch(self, w, epoch, steps);
    } catch (...) {
      transport_->Abort();  // wake the neighbours waiting for this worker's messages
      if (tap_.active()) tap_.Park(w, self.x);
      throw;
    }
    if (tap_.active()) tap_.Park(w, self.x);
  }

  // A partial epoch (halt) reports 0 for everyone: replica modes resume at epoch boundaries.
  std::uint64_t Position(int w) const {
    for (const State& s : workers_) {
      if (s.position < EpochLength(w)) return 0;
    }
    return Worker(w).position;
  }
  std::uint64_t EpochLength(int /*w*/) const { return steps_per_epoch_ * Batch(); }
  std::uint64_t Samples() const {
    std::uint64_t total = 0;
    for (const State& s : workers_) total += s.steps;
    return total;
  }
  // The replicas' mean, the model evaluation and checkpoints see.
  void Snapshot(std::span<float> out) const {
    std::vector<double> mean(out.size());
    MeanOf(Replicas(), mean);
    for (std::size_t u = 0; u < out.size(); ++u) out[u] = static_cast<float>(mean[u]);
  }
  // The replicas' mean while the workers run (LiveModel): each replica copied by its owner at
  // a step boundary (see live.h), averaged exactly as Snapshot does.
  void LiveSnapshot(std::span<float> out) {
    tap_.Collect([&](std::span<const std::span<const float>> replicas) {
      std::vector<double> mean(out.size());
      MeanOf(replicas, mean);
      for (std::size_t u = 0; u < out.size(); ++u) out[u] = static_cast<float>(mean[u]);
    });
  }
  double Consensus() const { return ConsensusDistance(Replicas()); }
  // The busiest worker's virtual clock; nullopt in realtime link mode (wall time is real).
  std::optional<double> VirtualSeconds() const {
    if (link_mode_ == LinkMode::kRealtime) return std::nullopt;
    double most = 0;
    for (const State& s : workers_) most = std::max(most, s.clock);
    return most;
  }
  std::uint64_t BytesSent() const {
    std::uint64_t total = 0;
    for (int w = 0; w < plan_.threads; ++w) total += transport_->sent_by(w).bytes;
    return total;
  }
  std::uint64_t BytesSentMax() const {
    std::uint64_t most = 0;
    for (int w = 0; w < plan_.threads; ++w) most = std::max(most, transport_->sent_by(w).bytes);
    return most;
  }

  // Worker w's replica: the owner's during an epoch, anyone's while the workers are parked
  // (tests set different starting replicas from Setup).
  std::span<float> Replica(int w) { return Worker(w).x; }
  const Topology& topology() const { return topology_; }
  MixOrder mix_order() const { return order_; }
  // Gossip rounds done so far (equal on all workers after an epoch that was not halted).
  std::uint64_t RoundsDone() const { return workers_.empty() ? 0 : workers_[0].round; }

 private:
  // Thread safety: owner-only during an epoch; the coordinator reads it while parked.
  struct State : ShardWorker<M> {
    std::vector<float> x;                 // the replica
    std::vector<float> mixed;             // the next replica while mixing (swapped in)
    std::vector<std::uint32_t> rows;      // this step's mini-batch
    std::vector<Message> held;            // this round's neighbour models, until mixed
    std::vector<MixSource> sources;       // this round's mixing row
    std::optional<LinkModel> link;        // this worker's sends (virtual or wall seconds)
    std::uint64_t step = 0;               // steps taken in all epochs (equal on all workers)
    std::uint64_t round = 0;              // gossip rounds done (equal on all workers)
    double clock = 0;                     // virtual seconds
    double cpu_mark = 0;                  // thread CPU seconds when compute was last counted
  };

  void RunEpoch(State& self, int w, int epoch, std::atomic<std::uint64_t>& steps) {
    self.BeginEpoch(plan_.config.seed, epoch, w, 0);
    const float eta = plan_.EpochLr(epoch);
    const std::size_t batch = Batch();
    const std::size_t rows = self.order.size();
    self.cpu_mark = ThreadCpuSeconds();
    for (std::size_t s = 0; s < steps_per_epoch_; ++s) {
      if (halt_.load(std::memory_order_relaxed)) {
        transport_->Abort();  // no neighbour may wait for a round this worker will not send
        break;
      }
      if (tap_.active()) tap_.Poll(w, self.x);  // a snapshot request: one copy of x_i
      for (std::size_t j = 0; j < batch; ++j) self.rows[j] = self.order[(s * batch + j) % rows];
      model_.Gradient(Params(self.x), self.shard, std::span<const std::uint32_t>(self.rows),
                      *self.grad, *self.workspace);
      const bool round = (self.step + 1) % gossip_every_ == 0;
      if (!round || order_ == MixOrder::kStepThenMix) ApplyStep(Params(self.x), *self.grad, eta);
      if (round) {
        if (!Gossip(self, w)) break;  // aborted: another worker failed or the run halted
        if (order_ == MixOrder::kMixThenStep) ApplyStep(Params(self.x), *self.grad, eta);
      }
      ++self.step;
      self.steps += batch;
      self.position = (s + 1) * batch;
      steps.store(self.steps, std::memory_order_relaxed);  // progress display only
    }
    self.clock += ThreadCpuSeconds() - self.cpu_mark;
  }

  // One round: send x_i, receive the neighbours' round, mix. False: the transport was aborted
  // (x_i is then unchanged).
  bool Gossip(State& self, int w) {
    const std::uint64_t r = self.round;
    const bool realtime = link_mode_ == LinkMode::kRealtime;
    double now = 0;
    if (realtime) {
      now = transport_->WallSeconds();
    } else {
      const double cpu = ThreadCpuSeconds();
      self.clock += cpu - self.cpu_mark;
      self.cpu_mark = cpu;
      now = self.clock;
    }
    const std::span<const std::byte> payload = std::as_bytes(std::span<const float>(self.x));
    for (const Neighbour& to : topology_.Recipients(w, r)) {
      const double due = self.link->Send(now, to.worker, payload.size());
      if (!transport_->Send(w, to.worker, {.round = r, .due = due}, payload)) return false;
    }
    self.held.clear();  // capacity reserved in Setup: no allocation
    const std::span<const Neighbour> in = topology_.Neighbours(w, r);
    for (const Neighbour& from : in) {
      std::optional<Message> m = transport_->Receive(w, from.worker, r);
      if (!m) {
        ReleaseHeld(self, w);
        return false;
      }
      self.held.push_back(*m);
      if (m->header.bytes != payload.size()) {
        ReleaseHeld(self, w);
        throw Error(ErrorCode::kWorkerFailed,
                    "dpsgd: worker " + std::to_string(w) + " received " +
                        std::to_string(m->header.bytes) + " bytes from worker " +
                        std::to_string(from.worker) + ", expected " + std::to_string(payload.size()));
      }
    }
    if (!realtime) {
      // The model can be mixed once the last neighbour's has arrived; the time spent in the
      // transport itself is not compute (the link model is the communication cost).
      for (const Message& m : self.held) self.clock = LinkModel::Arrive(self.clock, m.header.due);
      self.cpu_mark = ThreadCpuSeconds();
    }
    // The row of W in worker order, self included at its place.
    self.sources.clear();
    const MixSource own{static_cast<float>(topology_.SelfWeight(w, r)), self.x.data()};
    bool own_added = false;
    for (std::size_t k = 0; k < in.size(); ++k) {
      if (!own_added && w < in[k].worker) {
        self.sources.push_back(own);
        own_added = true;
      }
      self.sources.push_back({static_cast<float>(in[k].weight),
                              reinterpret_cast<const float*>(self.held[k].payload.data())});
    }
    if (!own_added) self.sources.push_back(own);
    Mix(self.sources, self.mixed);
    std::swap(self.x, self.mixed);
    ReleaseHeld(self, w);
    ++self.round;
    return true;
  }

  void ReleaseHeld(State& self, int w) {
    for (const Message& m : self.held) transport_->Release(w, m);
    self.held.clear();
  }

  std::vector<std::span<const float>> Replicas() const {
    std::vector<std::span<const float>> replicas;
    for (const State& s : workers_) replicas.emplace_back(s.x);
    return replicas;
  }

  std::size_t Batch() const { return static_cast<std::size_t>(plan_.config.batch); }
  State& Worker(int w) { return workers_[static_cast<std::size_t>(w)]; }
  const State& Worker(int w) const { return workers_[static_cast<std::size_t>(w)]; }

  const M& model_;
  const RunPlan& plan_;
  std::atomic<bool>& halt_;
  const bool local_;
  const Topology topology_;
  const MixOrder order_;
  const std::uint64_t gossip_every_;
  const LinkMode link_mode_;
  LinkSpec link_;  // infinitely fast links unless --link
  std::unique_ptr<ShmTransport> transport_;
  std::vector<State> workers_;
  std::size_t max_degree_ = 0;
  std::size_t steps_per_epoch_ = 0;
  ReplicaTap tap_;  // LiveModel snapshots; inactive (no copies) without one
};

}  // namespace corral::internal
