// Over 300 lines: the replica set, round exchange and step loop that five modes share, in one place.
// What the synchronous replica modes share (DESIGN.md §2, §5): D-PSGD and local SGD
// (modes/dpsgd.h), DCD-PSGD, ECD-PSGD and CHOCO-SGD (modes/compressed_gossip.h). A mode
// derives from RoundReplicas, supplies its per-worker State (a RoundWorker plus its memories)
// and what a step does (StepInPlace, or Gradient and Descend); RoundReplicas owns the rest: the
// topology, links and transport built once from the run plan, the workers' common setup, the
// epoch loop, and what the coordinator reads (positions, samples, the replicas' mean,
// consensus, virtual time, bytes).
//
// Every worker owns a replica x_i, allocated and first-touched on its own thread (NUMA-local).
// A step draws `--batch` rows of the worker's shard and takes g_i at x_i; the mode applies it
// and, on round steps, exchanges one message with the recipients of its topology row
// (ExchangeRound, gossip_round.h: no global barrier, a worker waits only for its neighbours).
// Memory: the transport keeps 2 message slots per directed edge, on the receiver.
//
// Rounds line up because every worker takes the same number of steps per epoch (the longest
// shard's, shorter shards wrap around as in sync) and the same schedule of rounds.
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
// the run then ends after this epoch (the coordinator always does on halt). A round whose
// messages did not all arrive is not applied: every replica stays a consistent model.
// Resume happens at epoch boundaries only: workers stopped by halt sit at different rounds, so
// a partial epoch reports position 0 for every worker (and the epoch ignores a saved `start`).
// A checkpoint written at an epoch end holds the whole state (VisitRounds and the mode's
// memories: mode_state.h) and the resumed run continues bit for bit; one written inside an
// epoch holds the replicas' mean only, and the resumed run repeats that epoch from it.
//
// Probes (dcd and ecd with an automatic K, one process, any epoch that starts with K held at
// the drift rule's limit; see GossipPeriod::Probe for why). Each worker copies the
// coordinator's period at the epoch's start. Every kProbeRounds rounds, after the same round
// on every worker, each records its window's times (drift sums, rounds, seconds, steps) in its
// slot of probe_records_, written once. The run's first window is not judged: the replicas
// start equal and the pull builds up over it (on examples/dcd_ring.cc's problem the first 8
// rounds read 0.65 and grew K to 64, which diverged; the next 8 read 1.1). Lag rounds later
// (KnowledgeLag: by then, through the chain of round messages, each slot's write happens
// before every worker's read) each worker hands the row, summed in worker order, to its copy
// of the period, and takes the new K from its next step on: the same K at the same step on
// every worker, with no barrier and nothing to wait for on a halt. The coordinator takes
// worker 0's period after the epoch. Across ranks (the slots live in one process's memory)
// the rule acts between epochs only.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <corral/error.h>
#include <corral/params.h>
#include <corral/step.h>
#include <corral/topology.h>

#include "engine/src/channel/link.h"
#include "engine/src/channel/shm_transport.h"
#include "engine/src/gossip/gossip_period.h"
#include "engine/src/gossip/gossip_round.h"
#include "engine/src/gossip/mixing.h"
#include "engine/src/gossip/replica_set.h"
#include "engine/src/modes/linear_step.h"
#include "engine/src/runtime/coordinator.h"
#include "engine/src/runtime/describe.h"
#include "engine/src/runtime/live.h"
#include "engine/src/runtime/mode_state.h"
#include "engine/src/runtime/shard_worker.h"

namespace corral::internal {

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

// The rank of each of a plan's global workers (rank r hosts plan.threads of them from
// r x plan.threads on: RunPlan::first_worker).
inline std::vector<int> RankOfWorker(const RunPlan& plan) {
  std::vector<int> ranks(static_cast<std::size_t>(plan.workers));
  for (int w = 0; w < plan.workers; ++w) ranks[static_cast<std::size_t>(w)] = w / plan.threads;
  return ranks;
}

// The cache domain of each of a plan's global workers, which `hierarchical` groups by: the
// placement's in one process; across ranks each rank is one group (complete or ring inside a
// rank, ring across ranks).
inline std::vector<int> WorkerDomains(const RunPlan& plan) {
  return plan.workers == plan.threads ? plan.worker_domain : RankOfWorker(plan);
}

// Probes (RoundReplicas, "Probes"): how many rounds after every worker recorded something at
// the same round it takes until every worker is sure to see every record, through the rounds'
// messages alone. Worker i's round r receives each in-neighbour's round-r message, sent after
// that neighbour finished round r - 1 (the transport's release and acquire order its writes
// before i's reads), so after round r worker i sees what it and its round-r in-neighbours saw
// after round r - 1. The most over the topology's phases; nullopt when that takes more than
// `most` rounds or the workers are too many to track (the run then does not probe).
inline std::optional<std::uint64_t> KnowledgeLag(const Topology& topology, std::uint64_t most) {
  constexpr int kMostWorkers = 1024;
  const int n = topology.workers();
  if (n < 1 || n > kMostWorkers) return std::nullopt;
  const auto count = static_cast<std::size_t>(n);
  const std::size_t words = (count + 63) / 64;
  const auto full = [&](const std::vector<std::uint64_t>& seen) {
    for (std::size_t i = 0; i < count; ++i) {
      for (std::size_t k = 0; k < words; ++k) {
        const std::size_t bits = std::min<std::size_t>(64, count - 64 * k);
        const std::uint64_t all = bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
        if (seen[i * words + k] != all) return false;
      }
    }
    return true;
  };
  std::uint64_t lag = 0;
  for (int phase = 0; phase < topology.period(); ++phase) {
    std::vector<std::uint64_t> seen(count * words, 0);  // row i: the records worker i sees
    for (std::size_t i = 0; i < count; ++i) {
      seen[i * words + i / 64] |= std::uint64_t{1} << (i % 64);
    }
    std::uint64_t rounds = 0;
    while (!full(seen)) {
      if (rounds == most) return std::nullopt;
      std::vector<std::uint64_t> next = seen;
      const std::uint64_t r = static_cast<std::uint64_t>(phase) + rounds;
      for (int i = 0; i < n; ++i) {
        const std::size_t to = static_cast<std::size_t>(i) * words;
        for (const Neighbour& from : topology.Neighbours(i, r)) {
          const std::size_t at = static_cast<std::size_t>(from.worker) * words;
          for (std::size_t k = 0; k < words; ++k) next[to + k] |= seen[at + k];
        }
      }
      seen.swap(next);
      ++rounds;
    }
    lag = std::max(lag, rounds);
  }
  return lag;
}

// What every synchronous replica worker keeps.
// Thread safety: owner-only during an epoch; the coordinator reads it while parked.
template <typename M>
struct RoundWorker : ShardWorker<M> {
  std::vector<float> x;                // the replica x_i
  std::vector<std::uint32_t> rows;     // this step's mini-batch
  std::vector<Message> held;           // this round's messages, until applied
  std::vector<MixSource> sources;      // this round's mixing row
  std::optional<LinkModel> link;       // this worker's sends (virtual or wall seconds)
  RoundClock time;                     // virtual seconds
  // A linear model at batch 1 (the fused step, see Descend): this step's row and loss
  // derivative at x_i stand for its gradient, and `grad` stays empty.
  RowGradient fused;
  // A linear model at batch 1 with local steps (StepInPlace): this epoch's 1 / (1 + eta l2_u).
  std::vector<float> shrink;
  std::uint64_t step = 0;              // steps taken in all epochs (equal on all workers)
  std::uint64_t round = 0;             // rounds done (equal on all workers)
  std::uint64_t every = 1;             // steps between rounds in this epoch (GossipPeriod)
  std::uint64_t until_round = 1;       // steps left until the next round (RoundDue)
  RoundTimes times;                    // this epoch's wall time in rounds and in all
  double lap = 0;                      // wall seconds when the round's current phase began
  // Probes inside an epoch (RoundReplicas, "Probes"); off otherwise.
  struct Probing {
    bool on = false;
    bool warmed = false;          // the first window, not judged, is over
    bool recorded = false;        // this probe's window is in the records, its decision due
    std::size_t index = 0;        // which probe: the row of the records
    std::uint64_t record_at = 0;  // the round after which the window is recorded
    std::uint64_t decide_at = 0;  // the round after which every worker sees every record
    GossipPeriod period;          // the coordinator's, advanced alike by every worker
    RoundTimes base;              // the worker's times when the window began
    double began = 0;             // wall seconds then
    std::uint64_t first_step = 0;  // the window's first step
    std::uint64_t least = 0;      // the least and the most K the epoch used (0: no probe ran)
    std::uint64_t most = 0;
  } probe;
};

template <Model M, typename State>
class RoundReplicas {
 public:
  // A partial epoch (halt) reports 0 for everyone: replica modes resume at epoch boundaries.
  std::uint64_t Position(int w) const {
    for (const State& s : replicas_) {
      if (s.position < EpochLength(w)) return 0;
    }
    return Worker(w).position;
  }
  std::uint64_t EpochLength(int /*w*/) const { return steps_per_epoch_ * Batch(); }
  std::vector<std::span<const std::byte>> OwnedMemory(int w) const { return replicas_.OwnedMemory(w - first_); }
  std::uint64_t Samples() const { return replicas_.Samples(); }
  // The visiting order the workers used and the memory their epoch copies took (--shuffle).
  std::pair<Shuffle, std::uint64_t> Shuffling() const { return replicas_.Shuffling(); }
  // The mean of every rank's replicas, summed in global worker order (collective across ranks).
  void Snapshot(std::span<float> out) const {
    if (!Across()) return replicas_.Mean(out);
    MeanInto(GatherReplicas(*plan_.cluster, replicas_.Replicas(), out.size()).replicas, out);
  }
  // The replicas' mean while the workers run (LiveModel): each replica copied by its owner at
  // a step boundary (see live.h), averaged exactly as Snapshot does.
  void LiveSnapshot(std::span<float> out) {
    tap_.Collect([&](std::span<const std::span<const float>> replicas) { MeanInto(replicas, out); });
  }
  double Consensus() const {
    if (!Across()) return replicas_.Consensus();
    return ConsensusDistance(GatherReplicas(*plan_.cluster, replicas_.Replicas(), plan_.initial.size()).replicas);
  }
  // The busiest worker's virtual clock; nullopt in realtime link mode (wall time is real).
  std::optional<double> VirtualSeconds() const {
    if (plan_.specs.link_mode == LinkMode::kRealtime) return std::nullopt;
    return replicas_.Max([](const State& s) { return s.time.clock; });
  }
  // This rank's workers (the coordinator sums and maximises across ranks).
  std::uint64_t BytesSent() const {
    std::uint64_t total = 0;
    for (int w = first_; w < first_ + plan_.threads; ++w) total += transport_->sent_by(w).bytes;
    return total;
  }
  std::uint64_t BytesSentMax() const {
    std::uint64_t most = 0;
    for (int w = first_; w < first_ + plan_.threads; ++w) most = std::max(most, transport_->sent_by(w).bytes);
    return most;
  }

  // White-box views for tests, valid while the workers are parked. Replica(w) may be written
  // from Setup (tests start from different replicas).
  std::span<float> Replica(int w) { return Worker(w).x; }
  const Topology& topology() const { return topology_; }
  // Rounds done so far (equal on all workers after an epoch that was not halted).
  std::uint64_t RoundsDone() const { return replicas_.empty() ? 0 : replicas_[0].round; }

  // After every worker's Setup, before the first epoch (coordinator, workers parked): the
  // automatic period's first K, from the workers' calibrations (gossip_period.h).
  void AfterSetup() {
    if (!period_.automatic()) return;
    period_.Start(Times());
    SetPeriod();
  }
  // After an epoch (coordinator, workers parked): the period the epoch ran with and the share
  // of wall time its rounds took; an automatic period adapts for the next epoch.
  void MeasureRounds(EvalPoint& p) {
    if (!replicas_.empty() && replicas_[0].probe.least > 0) {  // this epoch probed
      used_.first = std::min(used_.first, replicas_[0].probe.least);
      used_.second = std::max(used_.second, replicas_[0].probe.most);
      period_ = replicas_[0].probe.period;  // every worker's (one process: they advanced alike)
      for (State& s : replicas_) s.probe = {};
    }
    p.gossip_every = period_.every();
    used_.first = std::min(used_.first, period_.every());
    used_.second = std::max(used_.second, period_.every());
    const std::vector<RoundTimes> times = Times();
    p.round_split = MeanRound(times);
    // The drift of every worker's rounds, of every rank (Times): every rank the same number.
    if (period_.Measure(times, period_.watches_drift() ? DriftRule::Of(times) : 0)) SetPeriod();
    p.gossip_share = period_.share();
    for (State& s : replicas_) {
      const RoundTimes calibration = s.times;
      s.times = RoundTimes{.calib_round_s = calibration.calib_round_s,
                           .calib_step_s = calibration.calib_step_s};
    }
  }

 protected:
  // `message_bytes`: the largest payload a worker sends in a round.
  RoundReplicas(const M& model, const RunPlan& plan, std::atomic<bool>& halt,
                std::size_t message_bytes)
      : model_(model), plan_(plan), halt_(halt),
        topology_(GossipTopology(plan.config, plan.workers, WorkerDomains(plan))),
        first_(plan.first_worker),
        replicas_(plan.threads) {
    if (message_bytes > (std::size_t{1} << 31)) {
      throw Error(ErrorCode::kBadConfig, Name() + ": a message of " + std::to_string(message_bytes) +
                                             " bytes exceeds the transport's 2 GiB limit");
    }
    // One process: shared memory; across ranks the cluster's (edges between ranks over MPI).
    transport_ = plan.cluster->MakeTransport(
        ShmTransportConfig{.workers = plan.workers,
                           .edges = GossipEdges(topology_),
                           .max_payload_bytes = static_cast<std::uint32_t>(message_bytes),
                           .link_mode = plan.specs.link_mode},
        RankOfWorker(plan));
    for (int t = 0; t < topology_.period(); ++t) {
      for (int w = 0; w < plan.workers; ++w) {
        max_degree_ = std::max(max_degree_, topology_.Neighbours(w, static_cast<std::uint64_t>(t)).size());
      }
    }
    steps_per_epoch_ = StepsPerEpoch(plan.held.total, plan.workers, Batch());
    period_ = GossipPeriod(plan.config.gossip_every, steps_per_epoch_, GossipPeriod::kMinRoundsPerEpoch);
    // dcd's and ecd's automatic K is at most the drift rule's limit (DriftRule, gossip_period.h:
    // their own steps enter a round unmixed).
    const Algorithm a = plan.config.algorithm;
    if (a == Algorithm::kDcd || a == Algorithm::kEcd) period_.WatchDrift();
    if (period_.watches_drift() && !Across()) {
      probe_lag_ = KnowledgeLag(topology_, kMostProbeLag);
      if (probe_lag_) probe_records_.resize(kMostProbes * static_cast<std::size_t>(plan.workers));
    }
    if (plan.live) tap_.Init(plan.threads, model.NumParams());
  }

  // Worker w's common setup, on its own thread (first touch: the replica is NUMA-local). The
  // mode allocates its own memories after it.
  State& SetupWorker(int w) {
    State& self = Worker(w);
    // The run's --shuffle (epoch, the default, where it fits): the rows copied into each
    // epoch's order and streamed, the same samples in the same order as index, so the same
    // bits (shard_worker.h). On the Zipf set, 1 thread, local at one round per epoch ran at
    // 2.0M samples/s reading through the index and 6.5-7.1M with epoch (hogwild: 6-9M).
    // The wrap-around of a shorter shard (Loop) reads the copy's rows in the same order.
    self.Build(model_, plan_.train, plan_.held, w, plan_.workers, Batch(), plan_.shuffle, plan_.copy_shards);
    self.rows.resize(Batch());
    self.x.assign(plan_.initial.begin(), plan_.initial.end());
    self.held.reserve(max_degree_);
    self.sources.reserve(max_degree_ + 1);
    self.link.emplace(plan_.specs.link.value_or(LinkSpec{}), plan_.workers);  // none: infinitely fast
    self.every = period_.every();
    self.until_round = self.every;
    if (period_.automatic()) Calibrate(self, w);
    self.StartMomentum(plan_.config, model_.NumParams());  // after Calibrate's steps: v_i = 0
    transport_->Bind(w);
    if (tap_.active()) tap_.Park(w - first_, self.x);
    return self;
  }

  // Worker w's epoch: per step the gradient g_i at x_i into self.grad, then `step(self, eta)`,
  // which applies it and gossips; it returns false when the transport was aborted (another
  // worker failed or the run halted), which ends the epoch.
  template <typename Step>
  void RunEpoch(int w, int epoch, std::atomic<std::uint64_t>& steps, Step&& step) {
    State& self = Worker(w);
    if (tap_.active()) tap_.Unpark(w - first_);
    try {
      Loop(self, w, epoch, steps, step);
    } catch (...) {
      transport_->Abort();  // wake the neighbours waiting for this worker's messages
      if (tap_.active()) tap_.Park(w - first_, self.x);
      throw;
    }
    if (tap_.active()) tap_.Park(w - first_, self.x);
  }

  // Round self.round of worker w: sends `payload` to its recipients and receives its
  // neighbours' messages into self.held (ExchangeRound). False: aborted, nothing held.
  bool Exchange(State& self, int w, std::span<const std::byte> payload,
                MessageSizes sizes = MessageSizes::kEqual) {
    return ExchangeRound(*transport_, topology_, w, self.round, payload, *self.link,
                         plan_.specs.link_mode, plan_.specs.link.has_value(), self.time, self.held,
                         name_.c_str(), sizes);
  }
  // g_i at x_i for this step's rows: into self.grad, or, for a linear model at batch 1, as the
  // row and its loss derivative (Descend applies them). A mode calls it before Descend.
  void Gradient(State& self) const {
    if constexpr (kIsLinear<M>) {
      if (Batch() == 1) {
        self.fused = LinearRowGradient(model_, Params(self.x), self.shard, self.rows[0]);
        return;
      }
    }
    model_.Gradient(Params(self.x), self.shard, std::span<const std::uint32_t>(self.rows),
                    *self.grad, *self.workspace);
  }
  // Applies this step's gradient g_i (Gradient: taken at x_i) to `target` (x_i itself, or the
  // mode's next replica) with corral/step.h's ProximalStep on every coordinate of the gradient. A
  // linear model at batch 1 takes the fused form (linear_step.h's RowGradient: bit for bit the
  // generic path's, so the golden digests of `--gossip-every 1` runs do not move); with local
  // steps (FusedLocalSteps) LinearStep's arithmetic instead, the epoch's shrink table, so that
  // a round's step and a local step (StepInPlace) are one update: with one worker the result
  // does not depend on K.
  void Descend(State& self, std::span<float> target, float eta) const {
    if constexpr (kIsLinear<M>) {
      if (FusedLocalSteps()) return ApplyRowGradient(Params(target), self.fused, eta, self.shrink.data());
      if (Batch() == 1) return ApplyRowGradient(model_, Params(target), self.fused, eta);
    }
    self.ApplyGradient(Params(target), eta);
  }
  // A step of x_i at x_i (a local step between rounds; every step of choco): Gradient and
  // Descend(x_i), or, for a linear model at batch 1 with local steps (--gossip-every other than
  // 1), hogwild's step itself (LinearStep: one pass for the margin, one for the update, the
  // epoch's shrink table multiplying where ProximalStep divides: the same step to rounding;
  // ForEachDescended sees its row). Measured on the Zipf set, 1 worker, dpsgd at one round an
  // epoch, per-epoch samples/s against hogwild's (--hot-coords off) in the same run: 0.72x
  // through Gradient and Descend, 0.90x with LinearStep (docs/algorithms.md, "Local steps at
  // hogwild's speed"). `--gossip-every 1` keeps the papers' arithmetic.
  void StepInPlace(State& self, float eta) const { StepInPlace(self, self.x, eta); }
  // The same on `x`: x_i, or Calibrate's scratch copy of it (the fused step then takes its
  // gradient at the copy, Gradient at x_i: the same cost).
  void StepInPlace(State& self, std::span<float> x, float eta) const {
    if constexpr (kIsLinear<M>) {
      if (FusedLocalSteps()) {
        const std::uint32_t r = self.rows[0];
        self.fused.row = self.shard.Row(r);  // for ForEachDescended
        return LinearStep(model_, Params(x), self.fused.row, self.shard.Label(r), self.shard.Weight(r), eta, self.shrink.data(),
                          x.size());
      }
    }
    Gradient(self);
    Descend(self, x, eta);
  }
  // What the last Descend wrote: calls mark(u) for each coordinate u of a sparse step, or
  // all() for a dense one (every coordinate).
  template <typename Mark, typename All>
  void ForEachDescended(const State& self, std::size_t d, Mark&& mark, All&& all) const {
    if constexpr (kIsLinear<M>) {
      if (Batch() == 1) return ForEachRowCoordinate(self.fused, d, mark);
    }
    if constexpr (std::is_same_v<typename M::Grad, SparseGrad>) {
      for (std::size_t k = 0; k < self.grad->size(); ++k) mark(self.grad->index(k));
    } else {
      all();
    }
  }
  // The automatic period prices a round by the coordinates it carries, up to `limit`
  // (GossipPeriod::PriceChanges); the mode adds them to self.times.changed every round.
  void PriceRoundsByChanges(std::uint64_t limit) { period_.PriceChanges(limit); }
  // Counts a step towards the next round: true on the step that gossips (every `every`-th
  // step, counted over all epochs: with a fixed K, exactly the steps s with (s + 1) % K == 0).
  static bool RoundDue(State& self) {
    if (--self.until_round != 0) return false;
    self.until_round = self.every;
    return true;
  }
  // Runs one round `gossip` (returns false when aborted), timing it in wall seconds with vDSO
  // clock reads (about 20 ns each, no system call): two for the round, one more per Lap the
  // round takes. Whatever no Lap claimed counts as mix.
  template <typename Gossip>
  static bool TimedRound(State& self, Gossip&& gossip) {
    const double begin = WallSeconds();
    self.lap = begin;
    const bool done = gossip();
    const double end = WallSeconds();
    self.times.round_s += end - begin;
    self.times.mix_s += end - self.lap;
    ++self.times.rounds;
    return done;
  }
  // Inside TimedRound: the time since the previous lap (or the round's start) was `phase`.
  static void Lap(State& self, double RoundTimes::*phase) {
    const double now = WallSeconds();
    self.times.*phase += now - self.lap;
    self.lap = now;
  }

  // The training state every round-based worker keeps (mode_state.h), at an epoch boundary:
  // its replica, its step and round counters, the steps left to its next round, its virtual
  // clock, its momentum velocity (--optimizer momentum), and the period. An automatic K is
  // restored (GossipPeriod::Resume), so the resumed run takes its rounds at the same steps; a
  // fixed K is the configured one, each worker counting to its next multiple.
  void VisitRounds(StateVisitor& v) {
    std::uint64_t every = period_.every();
    v.Count("gossip_every", every);
    for (int w = 0; w < plan_.threads; ++w) {
      State& s = replicas_[w];
      v.Floats(Key("x", w), s.x);
      v.Count(Key("step", w), s.step);
      v.Count(Key("round", w), s.round);
      v.Count(Key("until_round", w), s.until_round);
      v.Real(Key("clock", w), s.time.clock);
      s.VisitVelocity(v, w);
    }
    if (!v.loading()) return;
    period_.Resume(every);
    for (State& s : replicas_) {
      s.every = period_.every();
      if (!period_.automatic() || s.until_round > s.every) s.until_round = s.every - s.step % s.every;
    }
  }

  // The settings every round-based mode ran with, for its Describe.
  void DescribeRounds(TrainResult& r) const {
    AddSetting(r, "topology", GossipTopologySpec(plan_.config));
    AddSetting(r, "gossip_every", static_cast<std::int64_t>(period_.every()));
    AddSetting(r, "gossip_auto", period_.automatic() ? std::string("yes") : std::string("no"));
    if (used_.first < used_.second) AddSetting(r, "gossip_every_range", UsedRange());
    AddSetting(r, "link", plan_.config.link);
    AddSetting(r, "link_mode", plan_.config.link_mode);
  }
  // Worker w's mixing row of this round in worker order (ForEachInWorkerOrder).
  template <typename Term>
  void ForEachInRow(const State& self, int w, Term&& term) const {
    ForEachInWorkerOrder(topology_, w, self.round, term);
  }
  // The algorithm's name, for error messages.
  const char* name() const { return name_.c_str(); }
  // Gives the round's messages back to the transport, once applied.
  void ReleaseHeld(State& self, int w) { ReleaseAll(*transport_, w, self.held); }

  // Worker w of this rank, by its global id: this rank's workers are [first_, first_ +
  // plan_.threads) (RunPlan).
  State& Worker(int w) { return replicas_[w - first_]; }
  const State& Worker(int w) const { return replicas_[w - first_]; }
  // Whether the run spans ranks: the replicas' mean and consensus then gather every rank's.
  bool Across() const { return plan_.cluster->ranks() > 1; }
  std::size_t Batch() const { return static_cast<std::size_t>(plan_.config.batch); }
  // Whether StepInPlace takes the fused linear step (a linear model at batch 1 with local steps).
  bool FusedLocalSteps() const { return kIsLinear<M> && Batch() == 1 && plan_.config.gossip_every != 1; }
  std::string Name() const { return std::string(ToString(plan_.config.algorithm)); }

  const M& model_;
  const RunPlan& plan_;
  std::atomic<bool>& halt_;
  const Topology topology_;
  const int first_;  // this rank's first worker (RunPlan::first_worker)

  // The summary's lines about rounds: "gossip: every K steps (auto), rounds S% of the time",
  // "round: compute .. us, encode .., wait .., decode .., mix .." (the last epoch's mean
  // round), and every directed edge's bytes into r.edge_bytes.
  void DescribeGossip(TrainResult& r, const EvalPoint& last) const {
    std::string how;
    if (period_.automatic()) how = used_.first < used_.second ? " (auto, " + UsedRange() + " over the run)" : " (auto)";
    AddSummaryLine(r, "gossip", Printf("every %llu steps%s, rounds %.1f%% of the time",
                                       static_cast<unsigned long long>(period_.every()), how.c_str(),
                                       100.0 * last.gossip_share.value_or(0)));
    if (last.round_split) {
      const RoundSplit& t = *last.round_split;
      AddSummaryLine(r, "round", Printf("compute %.1f us, encode %.1f, wait %.1f, decode %.1f, mix %.1f",
                                        1e6 * t.compute_s, 1e6 * t.encode_s, 1e6 * t.wait_s,
                                        1e6 * t.decode_s, 1e6 * t.mix_s));
    }
    // A rank counts what its own workers sent: every rank's counts, summed (collective).
    const std::vector<std::pair<int, int>> edges = GossipEdges(topology_);
    std::vector<std::uint64_t> mine;
    for (const auto& [from, to] : edges) mine.push_back(transport_->counters(from, to).bytes);
    const std::vector<std::uint64_t> all = GatherAll(*plan_.cluster, std::span<const std::uint64_t>(mine));
    r.edge_bytes.clear();
    for (std::size_t k = 0; k < edges.size(); ++k) {
      std::uint64_t bytes = 0;
      for (std::size_t at = k; at < all.size(); at += edges.size()) bytes += all[at];
      r.edge_bytes.push_back({.from = edges[k].first, .to = edges[k].second, .bytes = bytes});
    }
  }

 private:
  template <typename Step>
  void Loop(State& self, int w, int epoch, std::atomic<std::uint64_t>& steps, Step& step) {
    self.BeginEpoch(plan_.config.seed, epoch, w, 0);
    const float eta = plan_.EpochLr(epoch);
    if constexpr (kIsLinear<M>) {
      if (FusedLocalSteps()) ComputeShrink(model_, eta, self.shrink);  // first epoch: allocates
    }
    const std::size_t batch = Batch();
    const std::size_t rows = self.order.size();
    self.time.cpu_mark = ThreadCpuSeconds();
    const double began = WallSeconds();
    constexpr std::size_t kAhead = 8;
    StartProbes(self, epoch);
    std::size_t s = 0;
    for (; s < steps_per_epoch_; ++s) {
      if (halt_.load(std::memory_order_relaxed)) {
        transport_->Abort();  // no neighbour may wait for a round this worker will not send
        break;
      }
      if (tap_.active()) tap_.Poll(w - first_, self.x);  // a snapshot request: one copy of x_i
      for (std::size_t j = 0; j < batch; ++j) self.rows[j] = self.order[(s * batch + j) % rows];
      // kAhead steps ahead, as hogwild does: a shuffled epoch misses the cache on every row.
      for (std::size_t j = 0; j < batch; ++j) {
        PrefetchRow(self.shard, self.order[((s + kAhead) * batch + j) % rows]);
      }
      if (!step(self, eta)) break;  // aborted: another worker failed or the run halted
      if (self.probe.on) Probe(self, w);
      ++self.step;
      self.samples += batch;
      self.position = (s + 1) * batch;
      steps.store(self.samples, std::memory_order_relaxed);  // progress display only
    }
    self.times.epoch_s += WallSeconds() - began;
    self.times.steps += s;
    self.time.clock += ThreadCpuSeconds() - self.time.cpu_mark;
  }

  // Probes (the header): worker self's copy of the period, when the drift limit holds K down.
  // Reads period_, which the coordinator does not write during an epoch.
  void StartProbes(State& self, int epoch) const {
    self.probe = {};
    if (!probe_lag_ || !period_.DriftLimited()) return;
    self.probe.on = true;
    self.probe.warmed = epoch > 0;  // only the run's first epoch starts with an unjudged window
    self.probe.period = period_;
    self.probe.record_at = self.round + GossipPeriod::kProbeRounds;
    self.probe.least = self.probe.most = period_.every();
    BeginWindow(self, self.step);
  }
  // A window's times start here: the drift sums from zero (the epoch's drift rule then sees the
  // rounds after the last probe), the rest from a snapshot.
  static void BeginWindow(State& self, std::uint64_t first_step) {
    self.times.pull_sq = self.times.own_sq = 0;
    self.probe.base = self.times;
    self.probe.began = WallSeconds();
    self.probe.first_step = first_step;
  }
  // Worker self's times since its window began, `steps_done` steps into the run.
  static RoundTimes WindowTimes(const State& self, std::uint64_t steps_done) {
    return self.times.Since(self.probe.base, WallSeconds() - self.probe.began,
                            steps_done - self.probe.first_step);
  }
  // After each step while probing: ends the first, unjudged window; records each later window
  // when its last round is done, and lag rounds later applies the drift rule to every worker's
  // records.
  void Probe(State& self, int w) {
    auto& p = self.probe;
    if (!p.recorded) {
      if (self.round < p.record_at) return;
      if (!p.warmed) {  // the run's first: the replicas start equal, the pull builds up
        p.warmed = true;
        p.record_at = self.round + GossipPeriod::kProbeRounds;
        BeginWindow(self, self.step + 1);
        return;
      }
      // Written once by its owner, before its next round's messages (the header).
      Records(p.index)[static_cast<std::size_t>(w)] = WindowTimes(self, self.step + 1);
      p.recorded = true;
      p.decide_at = self.round + *probe_lag_;
    }
    if (self.round < p.decide_at) return;
    const bool more = p.period.Probe(Records(p.index));
    BeginWindow(self, self.step + 1);
    self.every = p.period.every();
    self.until_round = self.every;
    p.least = std::min(p.least, self.every);
    p.most = std::max(p.most, self.every);
    p.recorded = false;
    p.on = more && ++p.index < kMostProbes;
    p.record_at = self.round + GossipPeriod::kProbeRounds;
  }
  // Probe `index`'s row of records, one per worker.
  std::span<RoundTimes> Records(std::size_t index) {
    const auto workers = static_cast<std::size_t>(plan_.workers);
    return std::span<RoundTimes>(probe_records_).subspan(index * workers, workers);
  }
  static constexpr std::size_t kMostProbes = 16;
  static constexpr std::uint64_t kMostProbeLag = 64;

  // What one step and one round cost on worker w, measured in its setup for the automatic
  // period's first K: a few steps' gradients applied to a scratch copy (the replica and the
  // worker's random stream are untouched), up to kCalibrationSteps or kCalibrationS seconds,
  // and the best of 3 mixes of the round's size (its degree + 1 models of d floats) plus the
  // copy a send makes. Communication latency is not in it: the first epoch measures it.
  void Calibrate(State& self, int w) {
    constexpr std::size_t kCalibrationSteps = 256;
    constexpr double kCalibrationS = 0.02;
    std::vector<float> scratch(self.x);
    if constexpr (kIsLinear<M>) {
      if (FusedLocalSteps()) ComputeShrink(model_, 0.0f, self.shrink);  // Loop sets each epoch's
    }
    const std::size_t rows = std::max<std::size_t>(1, self.shard.rows());
    const std::size_t batch = Batch();
    const double began = WallSeconds();
    std::size_t n = 0;
    double now = began;
    while (n < kCalibrationSteps && (n < 8 || now - began < kCalibrationS)) {
      for (std::size_t j = 0; j < batch; ++j) self.rows[j] = static_cast<std::uint32_t>((n * batch + j) % rows);
      if (self.shard.rows() == 0) break;
      StepInPlace(self, scratch, 0.0f);  // the run's step, most steps are local (auto: K > 1)
      ++n;
      now = WallSeconds();
    }
    self.times.calib_step_s = n > 0 ? (now - began) / static_cast<double>(n) : 0;
    // Distinct models, as a round mixes (one source read d times would stay in L1): up to
    // kCalibrationModels of them, the time scaled to the row's size.
    constexpr std::size_t kCalibrationModels = 3;
    const std::size_t sources = topology_.Neighbours(w).size() + 1;
    const std::size_t models = std::min(sources, kCalibrationModels);
    std::vector<std::vector<float>> copies(models - 1, self.x);
    std::vector<MixSource> row{{1.0f / static_cast<float>(models), self.x.data()}};
    for (const std::vector<float>& c : copies) row.push_back({1.0f / static_cast<float>(models), c.data()});
    double best = 0;
    for (int k = 0; k < 3; ++k) {
      const double t = WallSeconds();
      Mix(row, scratch);
      std::copy(self.x.begin(), self.x.end(), scratch.begin());  // the send's copy
      const double took = WallSeconds() - t;
      best = k == 0 ? took : std::min(best, took);
    }
    // A real round's messages cross cores (written by the sender, read by the receiver): about
    // twice this core-local pass (Zipf set, d = 100,000, 2 workers on a ring: ~75 us a round).
    self.times.calib_round_s = kCrossCoreFactor * best * static_cast<double>(sources) /
                               static_cast<double>(models);
  }
  static constexpr double kCrossCoreFactor = 2;
  // "8-4096": the least and the most K the run's epochs used.
  std::string UsedRange() const { return std::to_string(used_.first) + "-" + std::to_string(used_.second); }

  // The mean round of an epoch over all workers (nullopt when no round was taken).
  static std::optional<RoundSplit> MeanRound(std::span<const RoundTimes> times) {
    RoundSplit sum;
    double rounds = 0;
    for (const RoundTimes& t : times) {
      sum.compute_s += t.epoch_s - t.round_s;
      sum.encode_s += t.encode_s;
      sum.wait_s += t.wait_s;
      sum.decode_s += t.decode_s;
      sum.mix_s += t.mix_s;
      rounds += static_cast<double>(t.rounds);
    }
    if (rounds == 0) return std::nullopt;
    return RoundSplit{.compute_s = sum.compute_s / rounds, .encode_s = sum.encode_s / rounds,
                      .wait_s = sum.wait_s / rounds, .decode_s = sum.decode_s / rounds,
                      .mix_s = sum.mix_s / rounds};
  }

  // Every worker's times, of all ranks (collective): every rank then sets the same period.
  std::vector<RoundTimes> Times() const {
    std::vector<RoundTimes> times;
    for (const State& s : replicas_) times.push_back(s.times);
    return GatherAll(*plan_.cluster, std::span<const RoundTimes>(times));
  }
  // Hands the period's K to every worker, each counting afresh to its next round (the same
  // steps on all workers). Workers parked.
  void SetPeriod() {
    for (State& s : replicas_) {
      s.every = period_.every();
      s.until_round = s.every;
    }
  }

  const std::string name_ = Name();  // for error messages, built once
  std::unique_ptr<Transport> transport_;
  ReplicaSet<State> replicas_;
  std::size_t max_degree_ = 0;
  std::size_t steps_per_epoch_ = 0;
  GossipPeriod period_;  // coordinator-only; workers read their copy `every`
  // Coordinator-only: the least and the most K the epochs ran with.
  std::pair<std::uint64_t, std::uint64_t> used_{std::numeric_limits<std::uint64_t>::max(), 0};
  ReplicaTap tap_;  // LiveModel snapshots; inactive (no copies) without one
  // Probes (the header): the rounds until every worker sees every record (nullopt: no probes),
  // and the records, kMostProbes rows of one window's times per worker. Each slot is written
  // once by its worker and read by all after the lag; no atomics: the rounds' messages order them.
  std::optional<std::uint64_t> probe_lag_;
  std::vector<RoundTimes> probe_records_;
};

}  // namespace corral::internal
