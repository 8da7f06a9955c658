// How many local steps a synchronous replica mode takes between gossip rounds
// (`--gossip-every`, TrainConfig::gossip_every). A fixed K >= 1 is the papers' setting (K = 1:
// every step). `auto` (kGossipEveryAuto, the default of the replica modes) chooses K so that
// the measured real-time cost of a round (encode, send, wait, receive, decode, mix) stays about
// kTargetShare of the time:
//   share(K) = c / (c + K s)  <=  t   <=>   K >= c (1 - t) / (t s)
// for a round cost c and a step cost s (seconds, wall clock). A round moves O(d) floats while a
// sparse step touches O(nnz) of them, so on a large sparse model K is in the thousands and on a
// small or dense one it is a few. local's sparse rounds cost more the more changed since the
// last one: ForRoundCost prices c(K) = c0 + c1 min(r K, m) (PriceChanges), the same rule.
//
// When K is decided. Every worker of a round must take its rounds at the same steps (a worker
// waits for its neighbours' round r), so K changes only between epochs, decided on the
// coordinator while the workers are parked, and every worker reads the same value:
//  - before the first epoch, from a calibration each worker ran in its setup (Calibrate: a few
//    gradient steps on a scratch copy and a mix of its round's size; no state changes);
//  - after each epoch, from what the epoch measured (Measure: the wall time inside rounds and
//    in the whole epoch, per worker), when the share left the band [kLow, kHigh] (hysteresis:
//    a share that drifts inside the band keeps K, so K does not flap with timing noise).
// K never exceeds an epoch's steps / the mode's least rounds per epoch (the synchronous modes:
// kMinRoundsPerEpoch), so the replicas still meet a few times per epoch, nor, for dcd and ecd,
// the drift rule's limit (DriftRule below: WatchDrift). An automatic K makes results depend on
// timing: tests that compare parameters bit for bit set K explicitly.
//
// Why 5% (and the band [2.5%, 10%] around it). With a target of 10% and the band [4%, 20%]
// the share settled at 10-18% on Fashion-MNIST's MLP (dpsgd, 2 threads: K 96-117), a loss of
// speed that is all rounds. Doubling K there cost 0.1 points of test accuracy at most and
// 0.8% of the final objective (K 80: accuracy 0.8618, objective 0.3319; K 160: 0.8627,
// 0.3344; K 320: 0.8613, 0.3391) for 1.2-1.3x the samples/s, so a given objective is reached
// sooner. On the sparse sets (Zipf, a9a) the cap binds on a loaded 2-core machine (shares
// 40-95% at K = an epoch's steps / 16, the cap then: waiting for a descheduled neighbour), so
// the target does not matter there. Measurements in docs/algorithms.md.
//
// Thread safety: RoundTimes and the calibration are owner-only during an epoch (the coordinator
// reads them while the workers are parked); GossipPeriod is coordinator-only.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>

namespace corral::internal {

// Wall seconds from a monotonic clock. steady_clock reads the vDSO on Linux: about 20 ns and no
// system call, unlike the thread CPU clock (mixing.h ThreadCpuSeconds).
inline double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One worker's measurements. Thread safety: owner-only during an epoch.
struct RoundTimes {
  double round_s = 0;        // wall seconds inside rounds, this epoch, of which:
  double encode_s = 0;       //   compressing (RoundSplit says what each phase holds)
  double wait_s = 0;         //   sending and waiting for the neighbours
  double decode_s = 0;       //   adding received messages into memories
  double mix_s = 0;          //   the rest
  double epoch_s = 0;        // wall seconds of the epoch's loop
  std::uint64_t rounds = 0;  // rounds this epoch
  std::uint64_t steps = 0;   // steps this epoch
  double calib_round_s = 0;  // setup's estimate of one round (auto only)
  double calib_step_s = 0;   // setup's estimate of one step (auto only)
  // Modes whose round's work grows with what changed (local's sparse rounds): the changed
  // coordinates the rounds' messages carried this epoch, a dense message counting as the
  // sparse form's most (GossipPeriod::PriceChanges); 0 for the other modes.
  std::uint64_t changed = 0;
  // dcd and ecd with local steps (DriftRule): over the epoch's rounds, sum |pull|^2 and
  // |own|^2, pull = sum_j W_ij x_j - x_i the mix's pull towards the neighbours and own = y_i -
  // x_i the worker's own change over the K steps since its last round.
  double pull_sq = 0;
  double own_sq = 0;

  // The rounds since `base`, an earlier copy of these times: each sum less base's, over `wall_s`
  // seconds and `steps` steps (a window inside an epoch: GossipPeriod::Probe, adpsgd's windows).
  RoundTimes Since(const RoundTimes& base, double wall_s, std::uint64_t window_steps) const {
    return {.round_s = round_s - base.round_s, .encode_s = encode_s - base.encode_s,
            .wait_s = wait_s - base.wait_s, .decode_s = decode_s - base.decode_s,
            .mix_s = mix_s - base.mix_s, .epoch_s = wall_s, .rounds = rounds - base.rounds,
            .steps = window_steps, .changed = changed - base.changed,
            .pull_sq = pull_sq - base.pull_sq, .own_sq = own_sq - base.own_sq};
  }
};

// dcd's and ecd's limit on an automatic K, from the drift of the replicas (a pure function of
// the measurements: every rank feeds it the same gathered sums and decides the same limit).
// With local steps a worker's own K steps enter its round unmixed and its neighbours' arrive
// one round later (compressed_gossip.h). On some problems that lag is harmless up to K in the
// thousands (the Zipf set), on others it turns unstable between K = 8 and 16
// (examples/dcd_ring.cc), and no fixed cap serves both. What tells them apart is the drift
//   drift = sum |pull|^2 / sum |own|^2 over an epoch's rounds and workers,
// pull = sum_j W_ij x_j - x_i (the mix's pull towards the neighbours' public replicas) and own
// = y_i - x_i (the worker's change over its K local steps), both at hand in the round's mix
// (no extra pass). While the lag is harmless the neighbours are about one round's change
// apart and the drift stays flat in K (Zipf set, 2 workers: 0.40-0.54 at K = 64, 512, 4096);
// once it amplifies, the pull outgrows the change (dcd_ring, ring of 4: 0.99-1.06 at K = 4,
// 0.87-1.68 at 8, 2.9-4.0 at 16). After each epoch the rule
//  - grows the limit 64-fold (by doublings, staying below any K that jumped before) when the
//    epoch ran at the limit with a drift of at most kGrow;
//  - shrinks it to the last K whose epoch did not jump (half its own without one) when the
//    drift exceeds kBound, and remembers that K as a ceiling never reached again;
//  - holds it in between.
// Between epochs, and inside an epoch by probes (GossipPeriod::Probe): the
// workers of a round must take their rounds at the same steps, so every worker applies the
// same rule to the same gathered sums at the same round.
class DriftRule {
 public:
  static constexpr std::uint64_t kStart = 8;
  static constexpr double kGrow = 0.75;
  static constexpr double kBound = 2;
  static constexpr std::uint64_t kMaxGrowth = 64;

  DriftRule() = default;
  explicit DriftRule(std::uint64_t start) : limit_(std::max<std::uint64_t>(1, start)) {}  // no history

  std::uint64_t limit() const { return limit_; }

  // The drift from an epoch's sums (0 when nothing moved, infinite when only the pull did).
  static double Of(double pull_sq, double own_sq) {
    if (!(pull_sq > 0)) return pull_sq == 0 ? 0 : std::numeric_limits<double>::infinity();
    return own_sq > 0 ? pull_sq / own_sq : std::numeric_limits<double>::infinity();
  }
  // The drift of every worker's rounds, summed in worker order (every rank and every worker that
  // sums the same times gets the same number).
  static double Of(std::span<const RoundTimes> workers) {
    double pull = 0, own = 0;
    for (const RoundTimes& t : workers) {
      pull += t.pull_sq;
      own += t.own_sq;
    }
    return Of(pull, own);
  }

  // After an epoch (or a probe's window of rounds) that ran K = `every` with `drift` (Of): the
  // next limit, grown at most `growth`-fold.
  void Next(std::uint64_t every, double drift, std::uint64_t growth = kMaxGrowth) {
    if (!(drift <= kBound)) {
      ceiling_ = std::min(ceiling_, every);
      limit_ = good_ > 0 && good_ < every ? good_ : std::max<std::uint64_t>(1, every / 2);
      return;
    }
    good_ = every;
    if (every < limit_ || drift > kGrow) return;
    std::uint64_t grown = every;
    while (grown < every * growth && 2 * grown < ceiling_) grown *= 2;
    limit_ = std::max(limit_, grown);
  }

 private:
  std::uint64_t limit_ = kStart;
  std::uint64_t ceiling_ = std::numeric_limits<std::uint64_t>::max();  // the least K that jumped
  std::uint64_t good_ = 0;  // the last K whose epoch did not jump
};

class GossipPeriod {
 public:
  static constexpr double kTargetShare = 0.05;
  static constexpr double kLow = 0.025;
  static constexpr double kHigh = 0.1;
  // The synchronous replica modes (RoundReplicas: dpsgd, local, dcd, ecd, choco) meet at least
  // 4 times an epoch under an automatic K. It binds where rounds are dear against steps (large
  // sparse models: the Zipf set, 2 workers, K 25,000), and there every meeting costs a wait for
  // a descheduled neighbour on a loaded machine. What was measured for each (docs/algorithms.md,
  // "local's period", "Probes", "choco's and dpsgd's cap"):
  //  - local's exact averages: final objective flat in K from 16 to an epoch's steps (Zipf),
  //    test accuracy from K 117 to 1,875 (Fashion-MNIST's MLP); 0.735x hogwild's samples/s at
  //    4 rounds an epoch against 0.58x at 16;
  //  - dcd and ecd, whose lagged own steps the drift rule already watches: objective
  //    1.0064-1.0065x hogwild's at every K from 6,250 (16 an epoch) to 25,000 (4) on Zipf;
  //  - choco and dpsgd mix this round's messages (no lag to amplify): on dcd_ring's problem,
  //    where dcd turns unstable at K = 62-125, their objective stayed within 0.17% of K = 1's up
  //    to about one round an epoch (4 and 8 workers, qsgd, topk, sign).
  static constexpr std::uint64_t kMinRoundsPerEpoch = 4;
  // What a calibration cannot see: handing a message to a neighbour through the transport and
  // waiting for its own (doorbell, cache-line transfers, a neighbour a little behind). Measured
  // on a9a (2 workers, ring): a round of 123 floats took about 2 us against a 0.1 us mix. Since
  // the ticketed channel (docs/algorithms.md, "Tickets and asymmetric fences") such a round
  // measures 0.7-0.9 us; the constant is kept (lowering it would move the automatic K of small
  // models; not measured).
  static constexpr double kRoundLatencyS = 2e-6;

  // `configured`: TrainConfig::gossip_every (>= 1 fixed, kGossipEveryAuto); `min_rounds`: the
  // rounds per epoch an automatic K keeps at least (the synchronous modes: kMinRoundsPerEpoch;
  // adpsgd: its own). A fixed K is never capped.
  GossipPeriod() = default;  // fixed, every step
  GossipPeriod(int configured, std::uint64_t steps_per_epoch, std::uint64_t min_rounds)
      : automatic_(configured < 1),
        every_(configured >= 1 ? static_cast<std::uint64_t>(configured) : 1),
        cost_(every_),
        cap_(std::max<std::uint64_t>(1, steps_per_epoch / std::max<std::uint64_t>(1, min_rounds))) {}

  // dcd, ecd: an automatic K is also at most the drift rule's limit (DriftRule), which Measure
  // moves from each epoch's drift.
  void WatchDrift() {
    if (automatic_) drift_.emplace();
  }
  bool watches_drift() const { return drift_.has_value(); }

  bool automatic() const { return automatic_; }
  std::uint64_t every() const { return every_; }

  // Probes: the first epoch of a fresh dcd or ecd run would otherwise run entirely at the drift
  // rule's starting limit (DriftRule::kStart = 8) while the cost rule asks thousands: on the
  // Zipf set (2 workers, d = 100,000) that epoch's 12,500 dense rounds cost several times the
  // other nine epochs together (and an epoch that ended below the limit waits a whole epoch at
  // it before growing). So inside any epoch that starts with K held at the limit every worker
  // copies the period and (after a first window of the run it does not judge) each
  // kProbeRounds rounds feeds the drift of the window just run to Probe, which grows the limit
  // at most kProbeGrowth-fold (not 64-fold as between epochs: a window is a few rounds). The
  // workers agree without a barrier (RoundReplicas, "Probes"); probing stops at the first
  // window that does not grow K. Measured windows: Zipf 0.56, 0.39, 0.39 (K 8 -> 64 -> 512 ->
  // the cost rule's); dcd_ring 1.1 at K = 8 (holds).
  static constexpr std::uint64_t kProbeRounds = 8;
  static constexpr std::uint64_t kProbeGrowth = 8;
  // Whether the drift rule's limit is what holds K below the cost rule's (dcd, ecd, automatic).
  bool DriftLimited() const {
    return automatic_ && drift_ && every_ == drift_->limit() && every_ < std::min(cost_, cap_);
  }
  // A probe's step, from every worker's times over one window of rounds: the drift rule on
  // their drift, the cost rule on their costs (as Measure: the calibration prices a dense mix
  // only, and asked K = 1,759 on the Zipf set where the measured rounds ask for the cap), and
  // K under both. Returns true while probing should go on (K grew and the drift limit still
  // binds).
  bool Probe(std::span<const RoundTimes> window) {
    if (!DriftLimited()) return false;
    const std::uint64_t before = every_;
    drift_->Next(every_, DriftRule::Of(window), kProbeGrowth);
    MeasureCost(window);
    every_ = Limited();
    return every_ > before && DriftLimited();
  }
  // The share of wall time the last epoch's rounds took (0 before any epoch).
  double share() const { return share_; }

  // The smallest K whose share is at most kTargetShare for round cost c and step cost s.
  std::uint64_t ForCosts(double c, double s) const { return ForRoundCost(c, 0, 0, s); }

  // The same for a round whose cost grows with what changed since the last one (local's
  // sparse rounds, sparse_changes.h):
  //   c(K) = c0 + c1 min(r K, m),
  // c0 what every round pays (hand-off, waiting for a neighbour), c1 the work per changed
  // coordinate (encode, decode, mix), r the coordinates a step changes (an upper bound: a
  // coordinate written twice between rounds counts once, so the union grows slower than r K)
  // and m the changes where the message turns dense (PriceChanges: the round then costs
  // about c0 + c1 m whatever K, which is how the sparse form's limit was chosen). The share
  // c(K) / (c(K) + K s) <= t, with tau = t / (1 - t), is
  //   c0 + c1 r K <= tau s K  <=>  K >= c0 / (tau s - c1 r)   while r K <= m (sparse rounds),
  //   c0 + c1 m   <= tau s K  <=>  K >= (c0 + c1 m) / (tau s)  (dense rounds).
  // A sparse round is only worth its price when a step costs more than 1 / tau = 19 times
  // the round's work on the coordinates the step changed (c1 r < tau s). On sparse linear
  // models it does not (a step touches its nnz coordinates once, a round visits each changed
  // one in the encode and the mix: c1 r ~ 1 us against s ~ 0.12 us on the Zipf set), so K
  // lands where rounds are dense, as before; the sparse rounds' gain there is bytes. With
  // c1 = 0 this is the constant-cost rule ceil(c0 / (tau s)) every mode uses.
  std::uint64_t ForRoundCost(double c0, double c1, double r, double s) const {
    if (!(s > 0) || !(c0 >= 0) || !(c0 + c1 > 0)) return cost_;
    // Both sides times (1 - t), so that c1 = 0 is the constant-cost rule's own expression.
    const double room = kTargetShare * s - (1 - kTargetShare) * c1 * r;  // tau s - c1 r, scaled
    double k = std::numeric_limits<double>::infinity();
    if (room > 0 && c1 > 0) {
      const double sparse = std::ceil(c0 * (1 - kTargetShare) / room);
      if (r * sparse <= static_cast<double>(change_limit_)) k = sparse;
    }
    if (!(k < std::numeric_limits<double>::infinity())) {
      const double c = c0 + c1 * static_cast<double>(change_limit_);
      k = std::ceil(c * (1 - kTargetShare) / (kTargetShare * s));
    }
    return std::clamp<std::uint64_t>(k < 1e18 ? static_cast<std::uint64_t>(k) : cap_, 1, cap_);
  }

  // The rounds' cost grows with the coordinates they carry, up to `limit` (local:
  // MaxSparseChanges(d)), the workers reporting them in RoundTimes::changed: Measure then
  // prices c(K) above from the epoch's rounds.
  void PriceChanges(std::uint64_t limit) { change_limit_ = limit; }

  // Before the first epoch: K from the workers' calibrations (the slowest round, the mean step).
  void Start(std::span<const RoundTimes> workers) {
    if (!automatic_ || workers.empty()) return;
    double round = 0, step = 0;
    for (const RoundTimes& t : workers) {
      round = std::max(round, t.calib_round_s);
      step += t.calib_step_s / static_cast<double>(workers.size());
    }
    cost_ = ForCosts(round + kRoundLatencyS, step);
    every_ = Limited();
  }

  // A resumed run (workers parked): an automatic K continues from the saved run's, so that
  // it gossips at the steps the uninterrupted run would have; a fixed K stays as configured.
  // The drift rule restarts at the saved K (its history is not saved).
  void Resume(std::uint64_t saved_every) {
    if (!automatic_) return;
    every_ = cost_ = std::clamp<std::uint64_t>(saved_every, 1, cap_);
    if (drift_) drift_.emplace(every_);  // the limit starts at the saved K
  }

  // After an epoch: the measured share, and a new K when it left the band or (WatchDrift) the
  // drift rule moved its limit, from the epoch's `drift` (DriftRule::Of; ignored otherwise).
  // Returns true when K changed.
  bool Measure(std::span<const RoundTimes> workers, double drift = 0) {
    const std::uint64_t before = every_;
    if (drift_ && automatic_) drift_->Next(every_, drift);
    MeasureCost(workers);
    if (automatic_) every_ = Limited();
    return every_ != before;
  }

 private:
  // The cost rule's part of Measure: the share, and cost_ from the epoch's times when the share
  // left the band.
  void MeasureCost(std::span<const RoundTimes> workers) {
    double round = 0, total = 0, rounds = 0, steps = 0, work = 0, changed = 0;
    for (const RoundTimes& t : workers) {
      round += t.round_s;
      total += t.epoch_s;
      rounds += static_cast<double>(t.rounds);
      steps += static_cast<double>(t.steps);
      work += t.encode_s + t.decode_s + t.mix_s;
      changed += static_cast<double>(t.changed);
    }
    if (!(total > 0)) return;
    share_ = round / total;
    if (!automatic_ || rounds == 0 || steps == 0) return;
    if (share_ >= kLow && share_ <= kHigh) return;
    const double step = (total - round) / steps;
    // Priced by changes (PriceChanges): c1 the work per carried coordinate, c0 the rest of a
    // round, r the changes per step at this epoch's K (the changes a round carried over the K
    // steps before it). An epoch whose rounds were all dense says only r >= m / K: no basis
    // for a sparse K below this one, so it is priced as a constant-cost round.
    const bool sparse_seen = changed < rounds * static_cast<double>(change_limit_);
    const std::uint64_t next =
        change_limit_ > 0 && changed > 0 && sparse_seen
            ? ForRoundCost(std::max(0.0, round - work) / rounds, work / changed,
                           changed / (rounds * static_cast<double>(every_)), step)
            : ForCosts(round / rounds, step);
    cost_ = next;
  }

  // The cost rule's K under the drift rule's limit.
  std::uint64_t Limited() const {
    return std::clamp<std::uint64_t>(drift_ ? std::min(cost_, drift_->limit()) : cost_, 1, cap_);
  }

  bool automatic_ = false;
  std::uint64_t every_ = 1;
  std::uint64_t cost_ = 1;  // what the cost rule alone asks (every_ without the drift limit)
  std::uint64_t cap_ = 1;
  std::optional<DriftRule> drift_;  // dcd, ecd (WatchDrift)
  std::uint64_t change_limit_ = 0;  // PriceChanges; 0: a round's cost does not depend on K
  double share_ = 0;
};

}  // namespace corral::internal
