// Over 300 lines: most of it is the header comment, the concurrency argument the code relies on.
// AD-PSGD (Lian et al. 2018, "Asynchronous Decentralized Parallel Stochastic Gradient
// Descent", Alg. 1) under Coordinate (DESIGN.md §2): no rounds, nobody waits for a neighbour.
//
// Worker i owns a replica x_i (first-touched on its own thread) and repeats over its shard:
//   g = grad f(x_i; batch)           at x_i as it is now: neighbours may be averaging into it
//   j = a uniformly random neighbour of i in the topology (--topology, default ring)
//   x_i, x_j <- (x_i + x_j) / 2      on both sides, exclusive with any other average of i or j
//   x_i <- ApplyStep(x_i, g, eta)    corral/step.h: sparse, per-coordinate proximal L2
// With --gossip-every K only every K-th step averages; with auto (the default) each worker picks
// its own K so that its averages take about 5% of its wall time (gossip_period.h: no
// agreement is needed, nobody waits for a round), calibrated in its setup and adapted after
// every kProbeRounds of its averages and at each of its epoch ends. One worker has no
// neighbour: serial SGD.
//
// Compressed exchange (--compress C, a Corral extension with CHOCO-SGD's public copies,
// Koloskova et al. 2019): every directed edge i->j keeps h_ij, i's model as j knows it
// (both start at the initial model). An average of i and j, holding both flags, sends
//   q_i = C(x_i - h_ij), h_ij += s q_i;   q_j = C(x_j - h_ji), h_ji += s q_j
//   x_i += (gamma/2)(h_ji - h_ij);        x_j -= (gamma/2)(h_ji - h_ij)
// so x_i + x_j is unchanged (the mean is preserved as by an exact average) and with C exact,
// s = 1 and gamma 1 it is the exact average. s = 1 for biased codecs; as in CHOCO, an unbiased
// codec is applied as the rescaled operator s = delta (compressor.h), which contracts:
// E|x - h|^2 shrinks by (1 - delta) per exchange, while C itself (variance up to
// (1/delta - 1)|v|^2) lets h drift away for coarse codecs (measured: qsgd:2 diverged on a9a).
// gamma: --gamma, else CHOCO's practical default min(1, c delta) (compressed_gossip_setup.h).
// Each side sends WireBytes(d) instead of 4d.
//
// Concurrency: one flag per replica. The paper's analysis assumes each pairwise average is
// atomic (it then preserves the replicas' mean exactly). Purely racy averaging (relaxed
// element-wise, as in HOGWILD!) breaks that in a way that does not shrink with eta: two workers
// averaging with the same x_j at once overwrite each other's x_j, and a step's store of x_i[u]
// that read x_i[u] before a neighbour's average wrote it undoes that coordinate of the average;
// either shifts the mean by O(|x_i - x_j|). With more workers than cores a sweep over d
// coordinates is often preempted mid-way, so such overlaps are common. So a replica is written
// only under its flag: an average holds both replicas' flags, a gradient step its owner's.
// Deadlock freedom: a flag is only ever *tried* for an average (the worker holds its own flag,
// tries its neighbours' from the random one on, and skips the average of this step when none is
// free: SkippedAverages()); the one wait is the owner's for its own flag, which somebody else
// holds only for one average, a bounded loop during which the holder waits for nothing. So no
// cycle of waits can form (the paper uses a bipartite active/passive split of lock holders
// for the same end). The owner spins with a yield (more workers than cores: the holder may be
// descheduled). No allocation on the hot path; gradients read x_i without the flag, possibly
// mid-average (AD-PSGD computes on a stale x_i by design).
//
// Memory orders. Coordinates: std::atomic_ref<float> relaxed (Params), W: the holder of the
// replica's flag (the owner's step, an average); R: the holder, and the owner's gradient
// without the flag (stale by design). Flag: acquired with exchange(true, acquire) after a relaxed load saw it free (so a
// busy flag's cache line stays shared), released with store(false, release): the coordinates
// written under the flag happen-before the next holder's reads, so every average sees the
// previous one whole (relaxed accesses alone could still read older values).
//
// Hot head (a linear model at batch 1 on sparse data, uncompressed; hogwild's, hot_head.h):
// each replica keeps its most frequent coordinates in slot order ("hot values", the split
// rows' hot entries index them) instead of at their places in x_i: a step touches a few dense
// lines instead of one line per coordinate, and takes hogwild's split step (SplitMargin /
// SplitApply: four partial sums, the shrink as a multiplication), so its bits differ from
// Gradient() + ApplyStep()'s. The hot values are x_i's coordinates, not a copy: written only
// under x_i's flag like the rest of x_i (relaxed atomic_ref, the flag orders them), averaged
// with the neighbour's hot values (the same slots: one head for the run), read without the
// flag by the owner's margin. x_i's own hot coordinates are stale during an epoch: EndEpoch
// (workers parked) writes the hot values back into them, and AfterSetup and a resume load the
// hot values from x_i, so Snapshot, Consensus, checkpoints and tests see whole replicas.
// Measured on the Zipf set (bench/replica_speed.py, docs/algorithms.md).
//
// Costs and clocks. Each average moves d floats each way: d*4 bytes sent by each of i and j.
// A worker's virtual clock is its thread's CPU time (mixing.h), as if each had a core.
// Resume works mid-epoch as in hogwild (no rounds to line up), from the replicas' mean; at an
// epoch boundary the whole state is saved (VisitState) and the run continues exactly.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <corral/params.h>
#include <corral/step.h>
#include <corral/topology.h>
#include <corral/train.h>

#include "engine/src/compress/compressor.h"
#include "engine/src/modes/compressed_gossip_setup.h"
#include "engine/src/gossip/gossip_period.h"
#include "engine/src/gossip/mixing.h"
#include "engine/src/gossip/replica_set.h"
#include "engine/src/modes/hogwild_steps.h"
#include "engine/src/modes/hot_head.h"
#include "engine/src/modes/linear_step.h"
#include "engine/src/runtime/coordinator.h"
#include "engine/src/runtime/describe.h"
#include "engine/src/runtime/shard_worker.h"

namespace corral::internal {

template <Model M>
class AdpsgdMode {
 public:
  AdpsgdMode(const M& model, const RunPlan& plan, std::atomic<bool>& halt)
      : model_(model), plan_(plan), halt_(halt),
        topology_(GossipTopology(plan.config, plan.threads, plan.worker_domain)),
        workers_(plan.threads),
        slots_(std::make_unique<Slot[]>(static_cast<std::size_t>(plan.threads))) {
    // The hot head (HotEpoch) where hogwild's applies, uncompressed: the compressed exchange's
    // public copies are of whole replicas.
    if (plan.specs.compress != "none") {
      BuildEdges(plan.specs.compress);
    } else {
      head_ = PlanHotHead(model, plan);
    }
  }

  void Setup(int w) {
    State& self = workers_[w];
    // The run's --shuffle, as the synchronous replica modes (round_replicas.h): the same rows
    // in the same order, streamed from the epoch's copy under epoch. With a hot head, the
    // split rows (hot_head.h) instead, as hogwild's: the shard itself is released.
    if (Hot()) {
      BuildHotWorker(self, model_, plan_, w, head_, /*exclusive=*/false);
    } else {
      self.Build(model_, plan_.train, plan_.held, w, plan_.threads, Batch(), plan_.shuffle, plan_.copy_shards);
    }
    self.x.assign(plan_.initial.begin(), plan_.initial.end());  // first touch: NUMA-local
    if (Hot()) {
      self.hot.copy.local.resize(head_.coordinate.size());
      self.hot.copy.shrink.resize(head_.coordinate.size());
      HotFromReplica(self);
    }
    if (!edges_.empty()) self.diff.resize(self.x.size());
    const std::uint64_t steps = (EpochLength(w) + Batch() - 1) / Batch();
    // An automatic K keeps at least kMinAveragesPerEpoch of a worker's averages per epoch: 16
    // (the synchronous modes meet at least 4 times; random pairwise averages not measured so).
    self.period = GossipPeriod(plan_.config.gossip_every, steps, kMinAveragesPerEpoch);
    if (self.period.automatic()) {
      Calibrate(self);
      self.period.Start(std::span<const RoundTimes>(&self.times, 1));
    }
    self.until = self.period.every();
  }

  void Epoch(int w, int epoch, std::uint64_t start, std::atomic<std::uint64_t>& steps) {
    State& self = workers_[w];
    self.BeginEpoch(plan_.config.seed, epoch, w, start);  // HogwildWorker's: the split rows too
    const float eta = plan_.EpochLr(epoch);
    if constexpr (kIsLinear<M>) {
      if (Hot()) return HotEpoch(self, w, eta, start, steps);
    }
    const std::size_t batch = Batch();
    const std::span<const std::uint32_t> order(self.order);
    const Params x(self.x);
    const double cpu_start = ThreadCpuSeconds();
    const double began = WallSeconds();
    BeginWindow(self, began);
    for (std::size_t k = start; k < order.size(); k += batch) {
      if (halt_.load(std::memory_order_relaxed)) break;
      const std::size_t count = std::min(batch, order.size() - k);
      const RowGradient row = Gradient(self, x, order.subspan(k, count));
      if (Shared()) AcquireOwn(w);
      AverageIfDue(self, w);
      Step(self, x, row, eta);
      if (Shared()) Release(w);
      ++self.step;
      ++self.times.steps;
      self.samples += count;
      self.position = k + count;
      steps.store(self.samples, std::memory_order_relaxed);  // progress display only
    }
    Finish(self, began, cpu_start);
  }

  // After every worker's Setup (coordinator, workers parked): each worker's hot values from its
  // replica, which tests may have set from Setup.
  void AfterSetup() {
    if (!Hot()) return;
    for (int w = 0; w < plan_.threads; ++w) HotFromReplica(workers_[w]);
  }
  // Between epochs (coordinator, workers parked): each replica's hot coordinates from its hot
  // values, so that Snapshot, Consensus, VisitState and tests read whole replicas. The values
  // stay where they are too: the next epoch goes on from them.
  void EndEpoch() {
    if (!Hot()) return;
    for (int w = 0; w < plan_.threads; ++w) {
      State& self = workers_[w];
      for (std::size_t s = 0; s < head_.coordinate.size(); ++s) {
        self.x[head_.coordinate[s]] = self.hot.copy.local[s];
      }
    }
  }

  // After an epoch (coordinator, workers parked): the largest period the workers averaged
  // with and the mean share of their wall time the averages took.
  void MeasureRounds(EvalPoint& p) const {
    p.gossip_every = workers_.Max([](const State& s) { return s.epoch_every; });
    p.gossip_share = workers_.Sum([](const State& s) { return s.epoch_share; }) /
                     static_cast<double>(std::max<std::size_t>(1, workers_.size()));
  }

  std::uint64_t Position(int w) const { return workers_.Position(w); }
  std::vector<std::span<const std::byte>> OwnedMemory(int w) const { return workers_.OwnedMemory(w); }
  std::uint64_t EpochLength(int w) const { return ShardLength(plan_.held.total, w, plan_.threads); }
  std::uint64_t Samples() const { return workers_.Samples(); }
  // The visiting order the workers used and the memory their epoch copies took (--shuffle).
  std::pair<Shuffle, std::uint64_t> Shuffling() const { return workers_.Shuffling(); }
  void Snapshot(std::span<float> out) const { workers_.Mean(out); }
  // While the workers run (LiveModel): the same mean, read with relaxed atomic loads.
  // With a hot head the hot coordinates are the workers' hot values (HotEpoch), averaged as
  // RelaxedMeanOf does.
  void LiveSnapshot(std::span<float> out) const {
    RelaxedMeanOf(workers_.Replicas(), out);
    for (std::size_t s = 0; s < head_.coordinate.size(); ++s) {
      double sum = 0;
      for (int w = 0; w < plan_.threads; ++w) {
        // relaxed: W the holder of w's flag, R here without it (a live view, stale by design).
        float& value = const_cast<float&>(workers_[w].hot.copy.local[s]);
        sum += std::atomic_ref<float>(value).load(std::memory_order_relaxed);
      }
      out[head_.coordinate[s]] = static_cast<float>(sum / static_cast<double>(plan_.threads));
    }
  }
  double Consensus() const { return workers_.Consensus(); }
  // The busiest worker's CPU time: the run's time with a core per worker.
  std::optional<double> VirtualSeconds() const {
    return workers_.Max([](const State& s) { return s.clock; });
  }
  std::uint64_t BytesSent() const {
    std::uint64_t total = 0;
    for (int w = 0; w < plan_.threads; ++w) total += SlotOf(w).sent;
    return total;
  }
  std::uint64_t BytesSentMax() const {
    std::uint64_t most = 0;
    for (int w = 0; w < plan_.threads; ++w) most = std::max(most, SlotOf(w).sent);
    return most;
  }

  // White-box counters for tests, read while the workers are parked: pairwise averages
  // started by any worker, and steps that wanted to average but found no free pair.
  std::uint64_t Averages() const {
    return workers_.Sum([](const State& s) { return s.averages; });
  }
  std::uint64_t SkippedAverages() const {
    return workers_.Sum([](const State& s) { return s.skipped; });
  }
  const Topology& topology() const { return topology_; }
  double gamma() const { return gamma_; }
  // The settings it chose: CHOCO's gamma when the exchange is compressed (TrainResult::gamma).
  void Report(TrainResult& result) const {
    if (!edges_.empty()) result.gamma = gamma_;
    result.hot_coords = static_cast<int>(head_.coordinate.size());
    if (!head_.off.empty()) AddSummaryLine(result, "hot coords", head_.off);
  }
  void Describe(TrainResult& r) const {
    const std::string& compress = plan_.specs.compress;
    AddSetting(r, "topology", plan_.config.topology);
    AddSetting(r, "compress", compress);
    if (compress != "none") AddSetting(r, "gamma", r.gamma);
    const EvalPoint last = LastPoint(r);
    AddSetting(r, "gossip_every", static_cast<std::int64_t>(last.gossip_every.value_or(1)));
    AddSetting(r, "gossip_auto", plan_.config.gossip_every < 1 ? std::string("yes") : std::string("no"));
    if (!last.consensus) return;
    AddSummaryLine(r, "replicas",
                   Printf("%s, pairwise averages%s%s, consensus %.3g, virtual time %.2fs",
                          plan_.config.topology.c_str(),
                          compress == "none" ? "" : " of compressed differences, ",
                          compress == "none" ? "" : compress.c_str(), *last.consensus,
                          last.virtual_s));
    if (compress != "none") AddSummaryLine(r, "compression", Printf("gamma %.3g", r.gamma));
    if (r.hot_coords > 0) {
      AddSummaryLine(r, "hot coords", Printf("%d, each replica's in slot order", r.hot_coords));
    }
    AddSummaryLine(r, "gossip", Printf("every %llu steps%s (the busiest worker's), averages %.1f%% of the time",
                                       static_cast<unsigned long long>(last.gossip_every.value_or(1)),
                                       plan_.config.gossip_every < 1 ? " (auto)" : "",
                                       100.0 * last.gossip_share.value_or(0)));
  }
  // Its training state at an epoch boundary (mode_state.h): each worker's replica, step
  // counter (the topology's round), steps to its next average and automatic period, virtual
  // clock; each compressed edge's public copy h_ij, its codec's memory and its random stream.
  void VisitState(StateVisitor& v) {
    for (int w = 0; w < plan_.threads; ++w) {
      State& self = workers_[w];
      v.Floats(Key("x", w), self.x);
      v.Count(Key("step", w), self.step);
      v.Count(Key("until", w), self.until);
      std::uint64_t every = self.period.every();
      v.Count(Key("gossip_every", w), every);
      v.Real(Key("clock", w), self.clock);
      if (!v.loading()) continue;
      if (Hot()) HotFromReplica(self);
      self.period.Resume(every);
      if (!self.period.automatic()) self.until = self.period.every() - self.step % self.period.every();
    }
    for (std::size_t e = 0; e < edges_.size(); ++e) {
      Edge& edge = edges_[e];
      v.Floats(Key("public_copy", e), edge.public_copy);
      if (!edge.codec->State().empty()) v.Floats(Key("codec", e), edge.codec->State());
      v.Random(Key("edge_rng", e), edge.rng);
    }
  }

  // Worker w's replica: tests set different starting replicas from Setup.
  std::span<float> Replica(int w) { return workers_[w].x; }

 private:
  static constexpr std::uint64_t kMinAveragesPerEpoch = 16;  // an automatic K's least (Setup)

  // Thread safety: owner-only during an epoch (x: see the header); the coordinator reads it
  // while the workers are parked.
  // HogwildWorker: a shard, or with a hot head its split rows (relaid out per epoch) and the
  // hot values and shrink tables.
  struct State : HogwildWorker<M> {
    std::vector<float> x;         // the replica
    std::vector<float> diff;      // compressed exchange: scratch for x - h (the initiator's)
    std::uint64_t step = 0;       // steps taken in all epochs (picks the topology's round)
    std::uint64_t averages = 0;   // pairwise averages this worker started
    std::uint64_t skipped = 0;    // averages skipped: every neighbour's flag was busy
    double clock = 0;             // virtual seconds: this thread's CPU time in epochs
    GossipPeriod period;          // steps between this worker's averages
    std::uint64_t until = 1;      // steps left until its next average
    RoundTimes times;             // this epoch's wall time in averages and in all
    RoundTimes window;            // `times` when its current window of averages began
    double window_began = 0;      // wall seconds then
    std::uint64_t epoch_every = 1;  // the period of its last epoch, and the share it measured
    double epoch_share = 0;
  };

  // Worker w's epoch with the hot head (a linear model at batch 1, hot_head.h): hogwild's
  // SplitLinearStep split at the flag, as Gradient and Step are. The margin at x_i as it is
  // now (hot values and cold coordinates read without the flag: relaxed, stale by design, see
  // the header), then under the flag the average if due and the step, on the hot values and
  // the cold coordinates of x_i. The hot values are x_i's own coordinates kept in slot order
  // (a few cache lines instead of one line per coordinate), not a copy to sync: no neighbour
  // ever reads the hot coordinates of x_i, only its hot values (AverageWithANeighbour).
  void HotEpoch(State& self, int w, float eta, std::uint64_t start, std::atomic<std::uint64_t>& steps) {
    const std::size_t d = model_.NumParams();
    ComputeShrink(model_, eta, self.shrink);
    for (std::size_t s = 0; s < head_.coordinate.size(); ++s) {
      self.hot.copy.shrink[s] = self.shrink[head_.coordinate[s]];
    }
    const Params x(self.x);
    const Params hot(self.hot.copy.local);
    const SplitRows& rows = self.hot.rows;
    const std::span<const std::uint32_t> order(self.order);
    constexpr std::size_t kAhead = 8;  // rows, as hogwild's loop
    const double cpu_start = ThreadCpuSeconds();
    const double began = WallSeconds();
    BeginWindow(self, began);
    for (std::size_t k = start; k < order.size(); ++k) {
      if (halt_.load(std::memory_order_relaxed)) break;
      const std::uint32_t r = order[k];
      if (k + kAhead < order.size()) rows.Prefetch(order[k + kAhead]);
      const float step = eta * model_.Derivative(SplitMargin(rows, r, hot, x, d), rows.label[r], rows.Weight(r));
      if (Shared()) AcquireOwn(w);
      AverageIfDue(self, w);
      SplitApply(rows, r, step, hot, self.hot.copy.shrink.data(), x, self.shrink.data(), d);
      if (Shared()) Release(w);
      ++self.step;
      ++self.times.steps;
      ++self.samples;
      self.position = k + 1;
      steps.store(self.samples, std::memory_order_relaxed);  // progress display only
    }
    Finish(self, began, cpu_start);
  }
  // The hot values from the replica's hot coordinates. Owner in Setup, or the coordinator while
  // the workers are parked (after Setup, after a resume loaded x).
  void HotFromReplica(State& self) const {
    for (std::size_t s = 0; s < head_.coordinate.size(); ++s) {
      self.hot.copy.local[s] = self.x[head_.coordinate[s]];
    }
  }
  // Worker w, holding its own flag: on every K-th step, an average with a neighbour (timed).
  void AverageIfDue(State& self, int w) {
    if (--self.until != 0) return;  // with a fixed K: the steps s with (s + 1) % K == 0
    self.until = self.period.every();
    const double t = WallSeconds();
    AverageWithANeighbour(self, w);
    const double now = WallSeconds();
    self.times.round_s += now - t;
    ++self.times.rounds;
    const std::uint64_t in_window = self.times.rounds - self.window.rounds;
    if (self.period.automatic() && in_window >= GossipPeriod::kProbeRounds) Remeasure(self, now);
  }
  // An automatic K adapts after every kProbeRounds averages too, from the window's times, not
  // only at the epoch's end: the setup's calibration prices an average without the flags and
  // the cross-core traffic, and on the Zipf set (2 workers) the first epochs at its K cost
  // auto 0.63x hogwild's speed against 0.80x for a fixed K at the one auto settled on. Nothing
  // to agree on (the header), so each worker changes its own K whenever it measures.
  void Remeasure(State& self, double now) {
    const RoundTimes window =
        self.times.Since(self.window, now - self.window_began, self.times.steps - self.window.steps);
    if (self.period.Measure(std::span<const RoundTimes>(&window, 1))) {
      self.until = self.period.every();
    }
    BeginWindow(self, now);
  }
  static void BeginWindow(State& self, double now) {
    self.window = self.times;
    self.window_began = now;
  }
  bool Hot() const { return !head_.empty(); }
  // Whether any other worker may take a replica's flag: one worker has no neighbour, so its
  // steps skip the flag (an atomic exchange and a store per step; its replica is read without
  // the flag only by a live snapshot, relaxed, as with several workers).
  bool Shared() const { return plan_.threads > 1; }

  // What every epoch ends with: the worker's times and its period for the next epoch.
  void Finish(State& self, double began, double cpu_start) {
    self.times.epoch_s += WallSeconds() - began;
    self.clock += ThreadCpuSeconds() - cpu_start;
    // This worker's period for its next epoch (its own: averages need no agreement).
    self.epoch_every = self.period.every();
    if (self.period.Measure(std::span<const RoundTimes>(&self.times, 1))) self.until = self.period.every();
    self.epoch_share = self.period.share();
    self.times = RoundTimes{};
  }

  // The gradient at `at` for `rows`: in self.grad, or for a linear model at batch 1 as the row
  // and its loss derivative (linear_step.h: with Step, Gradient + ApplyStep bit for bit,
  // without filling and reading back a SparseGrad).
  RowGradient Gradient(State& self, Params at, std::span<const std::uint32_t> rows) const {
    if constexpr (kIsLinear<M>) {
      if (Batch() == 1) return LinearRowGradient(model_, at, self.shard, rows[0]);
    }
    model_.Gradient(at, self.shard, rows, *self.grad, *self.workspace);
    return {};
  }
  // Applies the last Gradient to x.
  void Step(State& self, Params x, const RowGradient& row, float eta) const {
    if constexpr (kIsLinear<M>) {
      if (Batch() == 1) return ApplyRowGradient(model_, x, row, eta);
    }
    ApplyStep(x, *self.grad, eta);
  }

  // The cost of a step and of an average on this worker, for its first automatic period: a few
  // gradients applied to a scratch copy (the replica is untouched; up to 256 steps or 20 ms),
  // and the best of 3 passes that read two models and write both, as an average does.
  void Calibrate(State& self) {
    std::vector<float> scratch(self.x);
    std::vector<float> other(self.x);
    const std::size_t rows = Hot() ? self.hot.rows.label.size() : self.shard.rows();
    if (rows == 0) return;
    const std::size_t batch = std::min(Batch(), rows);
    std::vector<std::uint32_t> pick(batch);
    std::vector<float> scratch_hot(self.hot.copy.local);
    if constexpr (kIsLinear<M>) {
      if (Hot()) {  // eta 0: every shrink factor is 1
        ComputeShrink(model_, 0.0f, self.shrink);
        std::fill(self.hot.copy.shrink.begin(), self.hot.copy.shrink.end(), 1.0f);
      }
    }
    const double began = WallSeconds();
    double now = began;
    std::size_t n = 0;
    while (n < 256 && (n < 8 || now - began < 0.02)) {
      for (std::size_t j = 0; j < batch; ++j) pick[j] = static_cast<std::uint32_t>((n * batch + j) % rows);
      if constexpr (kIsLinear<M>) {
        if (Hot()) {  // HotEpoch's step
          const Params x(scratch), hot(scratch_hot);
          const SplitRows& split = self.hot.rows;
          const float step = 0.0f * model_.Derivative(SplitMargin(split, pick[0], hot, x, x.size()), split.label[pick[0]], split.Weight(pick[0]));
          SplitApply(split, pick[0], step, hot, self.hot.copy.shrink.data(), x, self.shrink.data(), x.size());
          ++n;
          now = WallSeconds();
          continue;
        }
      }
      Step(self, Params(scratch), Gradient(self, Params(scratch), pick), 0.0f);
      ++n;
      now = WallSeconds();
    }
    self.times.calib_step_s = (now - began) / static_cast<double>(n);
    double best = 0;
    for (int k = 0; k < 3; ++k) {
      const double t = WallSeconds();
      for (std::size_t u = 0; u < scratch.size(); ++u) {
        const float mean = 0.5f * (scratch[u] + other[u]);
        scratch[u] = mean;
        other[u] = mean;
      }
      const double took = WallSeconds() - t;
      best = k == 0 ? took : std::min(best, took);
    }
    self.times.calib_round_s = best;
  }
  // Thread safety: `busy` is the replica's flag (see the header); `sent` is written only by
  // a worker holding `busy`, and read by the coordinator while the workers are parked.
  struct alignas(kCacheLine) Slot {
    std::atomic<bool> busy{false};
    std::uint64_t sent = 0;  // bytes this replica's owner sent (its side of each average)
  };
  // A directed edge i->j of the compressed exchange. Thread safety: read and written only by
  // a worker holding both i's and j's flags (an average of i and j), whose acquire/release
  // order every access after the previous average's.
  struct Edge {
    std::vector<float> public_copy;        // h_ij: i's model as j knows it
    std::unique_ptr<Compressor> codec;     // per edge: its stream and buffers stay with it
    Rng rng;
    std::vector<std::byte> wire;           // the message, WireBytes(d)
  };

  bool TryAcquire(int w) {
    std::atomic<bool>& busy = SlotOf(w).busy;
    // relaxed test first: a failed try costs no cache-line ownership; acquire on success
    // (see the header).
    return !busy.load(std::memory_order_relaxed) && !busy.exchange(true, std::memory_order_acquire);
  }
  // Worker w's own flag: held by others only for one average each (see the header).
  void AcquireOwn(int w) {
    for (int spins = 0; !TryAcquire(w); ++spins) {
      if (spins >= 64) std::this_thread::yield();
    }
  }
  void Release(int w) { SlotOf(w).busy.store(false, std::memory_order_release); }

  // Worker w, holding its own flag: averages with the first neighbour whose flag it gets,
  // trying them from a random one on.
  void AverageWithANeighbour(State& self, int w) {
    const std::span<const Neighbour> peers = topology_.Neighbours(w, self.step);
    if (peers.empty()) return;  // one worker
    const std::size_t first = static_cast<std::size_t>(self.rng.Below(peers.size()));
    for (std::size_t t = 0; t < peers.size(); ++t) {
      const int j = peers[(first + t) % peers.size()].worker;
      if (!TryAcquire(j)) continue;
      const Params xi(self.x), xj(workers_[j].x);
      if (edges_.empty()) {
        for (std::size_t u = 0; u < xi.size(); ++u) {
          const float mean = 0.5f * (xi.Load(u) + xj.Load(u));
          xi.Store(u, mean);
          xj.Store(u, mean);
        }
        // The hot values are the replicas' hot coordinates (HotEpoch); the loop above averaged
        // stale copies of those, which EndEpoch overwrites. Same memory orders as x.
        const Params hi(self.hot.copy.local), hj(workers_[j].hot.copy.local);
        for (std::size_t s = 0; s < hi.size(); ++s) {
          const float mean = 0.5f * (hi.Load(s) + hj.Load(s));
          hi.Store(s, mean);
          hj.Store(s, mean);
        }
        const std::uint64_t bytes = xi.size() * sizeof(float);
        SlotOf(w).sent += bytes;  // under w's flag
        SlotOf(j).sent += bytes;  // under j's flag
      } else {
        Edge& ij = EdgeOf(w, j);
        Edge& ji = EdgeOf(j, w);
        SlotOf(w).sent += Send(xi, ij, self.diff, scale_);  // under w's flag
        SlotOf(j).sent += Send(xj, ji, self.diff, scale_);  // under j's flag
        const auto half = static_cast<float>(0.5 * gamma_);
        for (std::size_t u = 0; u < xi.size(); ++u) {
          const float move = half * (ji.public_copy[u] - ij.public_copy[u]);
          xi.Store(u, xi.Load(u) + move);
          xj.Store(u, xj.Load(u) - move);
        }
      }
      Release(j);
      ++self.averages;
      return;
    }
    ++self.skipped;
  }

  // Compressed exchange: q = C(x - h), h += scale q; returns the message's bytes.
  static std::uint64_t Send(Params x, Edge& edge, std::vector<float>& diff, float scale) {
    for (std::size_t u = 0; u < diff.size(); ++u) diff[u] = x.Load(u) - edge.public_copy[u];
    const std::size_t bytes = edge.codec->Encode(diff, edge.wire, edge.rng);
    const std::span<const std::byte> message(edge.wire.data(), bytes);
    edge.codec->DecodeAdd(message, scale, edge.public_copy);
    return bytes;
  }

  // One Edge per directed pair that is ever a neighbour pair (every round of the period).
  // Allocated by the coordinator: an edge is touched by both of its workers, so no single
  // NUMA node is its home.
  void BuildEdges(const std::string& spec) {
    const auto n = static_cast<std::size_t>(plan_.threads);
    const std::size_t d = plan_.initial.size();
    edge_index_.assign(n * n, -1);
    for (int round = 0; round < topology_.period(); ++round) {
      for (int i = 0; i < plan_.threads; ++i) {
        for (const Neighbour& peer : topology_.Neighbours(i, static_cast<std::uint64_t>(round))) {
          for (const auto& [a, b] : {std::pair{i, peer.worker}, std::pair{peer.worker, i}}) {
            int& index = edge_index_[static_cast<std::size_t>(a) * n + static_cast<std::size_t>(b)];
            if (index >= 0) continue;
            index = static_cast<int>(edges_.size());
            Edge& edge = edges_.emplace_back();
            edge.public_copy.assign(plan_.initial.begin(), plan_.initial.end());
            edge.codec = MakeCompressor(spec, d);
            // A stream per directed edge, apart from the workers' shuffles and init.
            edge.rng = Rng(plan_.config.seed, 0xadc0'0000ull + index);
            edge.wire.resize(edge.codec->WireBytes(d));
          }
        }
      }
    }
    if (edges_.empty()) return;  // one worker: nothing to exchange
    const std::unique_ptr<Compressor>& codec = edges_.front().codec;
    if (codec->unbiased()) scale_ = static_cast<float>(codec->Delta(d));
    gamma_ = plan_.config.gamma > 0
                 ? plan_.config.gamma
                 : ChocoPracticalGamma(0.0, codec->Delta(d), DeterministicCodec(codec->spec()));
  }
  Edge& EdgeOf(int from, int to) {
    const std::size_t n = static_cast<std::size_t>(plan_.threads);
    return edges_[static_cast<std::size_t>(
        edge_index_[static_cast<std::size_t>(from) * n + static_cast<std::size_t>(to)])];
  }

  std::size_t Batch() const { return static_cast<std::size_t>(plan_.config.batch); }
  Slot& SlotOf(int w) { return slots_[static_cast<std::size_t>(w)]; }
  const Slot& SlotOf(int w) const { return slots_[static_cast<std::size_t>(w)]; }

  const M& model_;
  const RunPlan& plan_;
  std::atomic<bool>& halt_;
  const Topology topology_;
  ReplicaSet<State> workers_;
  std::unique_ptr<Slot[]> slots_;
  std::deque<Edge> edges_;        // compressed exchange only (stable addresses)
  std::vector<int> edge_index_;   // [from * n + to] -> edges_, -1 where never neighbours
  double gamma_ = 1;              // compressed exchange: the consensus step
  HotHead head_;                  // linear, batch 1, uncompressed: the coordinates kept in slot order
  float scale_ = 1;               // compressed exchange, unbiased codec: delta (see the header)
};

}  // namespace corral::internal
