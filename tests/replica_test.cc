// The replica modes (dpsgd, local): convergence to the full-batch optimum on several
// topologies and both mix orders, pure gossip at the rate the spectral gap predicts, exact
// averages for local SGD, bytes and virtual time as modelled, and failures and stops that
// never leave a worker waiting. More workers than cores on purpose.
// White-box where a test needs a hook (different starting replicas, a throwing model): the
// mode goes straight into the engine's runner.
#include <atomic>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <corral/corral.h>
#include <corral/topology.h>

#include "engine/src/gossip/gossip_period.h"
#include "engine/src/gossip/mixing.h"
#include "engine/src/gossip/round_replicas.h"
#include "engine/src/gossip/sparse_changes.h"
#include "engine/src/modes/dpsgd.h"
#include "logistic_oracle.h"
#include "test_data.h"
#include "throwing_model.h"

namespace corral {
namespace {

constexpr float kL2 = 1e-2f;

// The full-batch optimum of SmallProblem(), computed once: the oracle dominates a test's time
// under the sanitizers.
double SmallProblemOptimum() {
  static const double optimum = testing::OptimalObjective(testing::SmallProblem().train, kL2);
  return optimum;
}

struct DpsgdCase {
  int workers;
  const char* topology;
  MixOrder order;
};

std::string Name(const ::testing::TestParamInfo<DpsgdCase>& info) {
  std::string name = std::string(info.param.topology) + "_" + std::to_string(info.param.workers) +
                     "workers_" + std::string(ToString(info.param.order));
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
}

class DpsgdConverges : public ::testing::TestWithParam<DpsgdCase> {};

TEST_P(DpsgdConverges, ToTheFullBatchOptimum) {
  const DpsgdCase& c = GetParam();
  const SyntheticSplit data = testing::SmallProblem();
  const double optimum = SmallProblemOptimum();
  const TrainResult r = Train(data.train, nullptr,
                              {.algorithm = Algorithm::kDpsgd, .l2 = kL2, .threads = c.workers,
                               .epochs = 20, .batch = 4, .seed = 5, .topology = c.topology,
                               .gossip_every = 1, .mix_order = c.order});
  ASSERT_EQ(r.history.size(), 20u);
  const double reached = r.history.back().objective;
  EXPECT_GE(reached, optimum - 1e-6);
  EXPECT_LE(reached, optimum * 1.01) << "optimum " << optimum;
  // The reported objective is the objective of the returned parameters (the replicas' mean).
  const std::vector<double> w(r.params.begin(), r.params.end());
  EXPECT_NEAR(testing::Objective(data.train, w, kL2), reached, 1e-5);
  ASSERT_TRUE(r.history.front().consensus.has_value());
  if (std::string(c.topology) == "complete" && c.order == MixOrder::kStepThenMix) {
    // W = 11^T/n applied last: every replica is the same average, summed in the same order.
    EXPECT_EQ(*r.history.back().consensus, 0.0);
  } else {
    // The replicas disagree a little (steps of size eta), and agree better as eta decays.
    EXPECT_GT(*r.history.front().consensus, 0.0);
    EXPECT_LT(*r.history.back().consensus, *r.history.front().consensus);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Topologies, DpsgdConverges,
    ::testing::Values(DpsgdCase{4, "ring", MixOrder::kMixThenStep},
                      DpsgdCase{4, "ring", MixOrder::kStepThenMix},
                      DpsgdCase{8, "ring", MixOrder::kMixThenStep},
                      DpsgdCase{8, "ring", MixOrder::kStepThenMix},
                      DpsgdCase{4, "complete", MixOrder::kMixThenStep},
                      DpsgdCase{8, "complete", MixOrder::kStepThenMix}),
    Name);

// D-PSGD whose workers start from different random replicas (a test hook on Setup).
template <typename M>
class SpreadReplicas : public internal::DpsgdMode<M> {
 public:
  using internal::DpsgdMode<M>::DpsgdMode;
  void Setup(int w) {
    internal::DpsgdMode<M>::Setup(w);
    Rng rng(99, static_cast<std::uint64_t>(w));
    for (float& v : this->Replica(w)) v = 2 * rng.UniformFloat() - 1;
  }
};

// Pure gossip: a step size so small that gradients change nothing, so each round is x <- W x
// and the consensus distance shrinks by (1 - gap)^2 per round once the slowest mode dominates.
void ExpectGossipRate(const char* topology, int workers) {
  const SyntheticSplit data = testing::SmallProblem();
  const LogisticModel model(data.train, kL2);
  const TrainConfig config{.algorithm = Algorithm::kDpsgd, .threads = workers, .epochs = 2,
                           .batch = 16, .lr = 1e-30f, .lr_decay = 1, .topology = topology,
                           .gossip_every = 1};
  bool searched = false;
  internal::RunPlan plan = internal::PlanRun(model, data.train, config, workers, 16, searched);
  const TrainResult r = internal::Coordinate<LogisticModel, SpreadReplicas<LogisticModel>>(
      model, nullptr, std::move(plan), searched, kL2, {});
  ASSERT_EQ(r.history.size(), 2u);
  const double first = r.history[0].consensus.value();
  const double second = r.history[1].consensus.value();
  // Rounds per epoch: the longest shard in batches.
  const std::size_t longest = (data.train.rows() + static_cast<std::size_t>(workers) - 1) /
                              static_cast<std::size_t>(workers);
  const double rounds = std::ceil(static_cast<double>(longest) / 16.0);
  const double measured = std::pow(second / first, 1.0 / rounds);
  const double gap = Analyze(MakeTopology(topology, workers)).gap;
  const double predicted = (1 - gap) * (1 - gap);
  EXPECT_NEAR(measured, predicted, 0.1 * predicted)
      << topology << " of " << workers << ": gap " << gap << ", consensus " << first << " -> "
      << second << " over " << rounds << " rounds";
}

TEST(PureGossip, RingOf8ShrinksConsensusAtTheSpectralGapRate) { ExpectGossipRate("ring", 8); }
TEST(PureGossip, Torus4x4ShrinksConsensusAtTheSpectralGapRate) { ExpectGossipRate("torus", 16); }

TEST(Mixing, SumsInTheGivenOrderAcrossBlocks) {
  std::vector<float> a(5000), b(5000), out(5000);
  for (std::size_t u = 0; u < a.size(); ++u) {
    a[u] = static_cast<float>(u);
    b[u] = -2.0f * static_cast<float>(u) + 1;
  }
  const internal::MixSource sources[] = {{0.25f, a.data()}, {0.75f, b.data()}};
  internal::Mix(sources, out);
  for (std::size_t u = 0; u < a.size(); ++u) ASSERT_EQ(out[u], 0.25f * a[u] + 0.75f * b[u]) << u;
  const std::vector<std::span<const float>> replicas = {a, b};
  double expected = 0;
  for (std::size_t u = 0; u < a.size(); ++u) {
    const double mean = (static_cast<double>(a[u]) + b[u]) / 2;
    expected += (a[u] - mean) * (a[u] - mean) + (b[u] - mean) * (b[u] - mean);
  }
  EXPECT_NEAR(internal::ConsensusDistance(replicas), expected / 2, 1e-9 * expected);
}

// The automatic period's tests below cap K at an epoch's steps / 16 (1,000 of 16,000 steps):
// GossipPeriod takes the least rounds per epoch from its mode (the synchronous modes' 4 at the
// end of PricesSparseRoundsByTheirChanges, adpsgd's 16).
constexpr std::uint64_t kSixteenRounds = 16;

// The automatic period's rule (gossip_period.h), on given times: K is the smallest period whose
// rounds take at most 5% of the time, capped by an epoch's steps / 16 and a mode's own limit;
// after an epoch K stays while the measured share is inside [2.5%, 10%] and follows the
// measured costs outside it. A fixed K never moves.
TEST(GossipPeriod, AimsAtFivePercentWithAHysteresisBand) {
  using internal::GossipPeriod;
  using internal::RoundTimes;
  const GossipPeriod open(kGossipEveryAuto, 16'000, kSixteenRounds);  // cap 1,000
  EXPECT_EQ(open.ForCosts(1.0, 0.7), 28u);     // ceil(0.95 / (0.05 * 0.7)) = ceil(27.1)
  EXPECT_EQ(open.ForCosts(1.0, 0.3), 64u);     // ceil(63.3)
  EXPECT_EQ(open.ForCosts(1.0, 1e-6), 1000u);  // the epoch's cap
  EXPECT_EQ(open.ForCosts(1e-3, 1.0), 1u);

  GossipPeriod period(kGossipEveryAuto, 16'000, kSixteenRounds);
  // Two workers calibrated: the slowest round plus the hand-off (2.5 s) and the mean step
  // (0.7 s): K = ceil(67.9).
  const RoundTimes calibrated[] = {
      {.calib_round_s = 2.5 - GossipPeriod::kRoundLatencyS, .calib_step_s = 0.6},
      {.calib_round_s = 1.0, .calib_step_s = 0.8}};
  period.Start(calibrated);
  EXPECT_EQ(period.every(), 68u);
  // Rounds took 8% of the epoch: inside the band, K stays.
  const auto epoch = [](double round_s, double epoch_s) {
    return RoundTimes{.round_s = round_s, .epoch_s = epoch_s, .rounds = 10, .steps = 570};
  };
  const RoundTimes inside[] = {epoch(8, 100), epoch(8, 100)};
  EXPECT_FALSE(period.Measure(inside));
  EXPECT_EQ(period.every(), 68u);
  EXPECT_DOUBLE_EQ(period.share(), 0.08);
  // 20%: above the band; K from the measured costs (round 2 s, step 80/570 s).
  const RoundTimes above[] = {epoch(20, 100), epoch(20, 100)};
  EXPECT_TRUE(period.Measure(above));
  EXPECT_EQ(period.every(), 271u);  // ceil(2 * 0.95 / (0.05 * 80 / 570)) = ceil(270.75)
  // 1%: below it; K shrinks.
  const RoundTimes below[] = {epoch(1, 100), epoch(1, 100)};
  EXPECT_TRUE(period.Measure(below));
  EXPECT_EQ(period.every(), 11u);  // ceil(0.1 * 0.95 / (0.05 * 99 / 570)) = ceil(10.94)

  GossipPeriod fixed(4, 16'000, kSixteenRounds);
  EXPECT_FALSE(fixed.Measure(above));
  EXPECT_EQ(fixed.every(), 4u);
}

// dcd's and ecd's drift rule (DriftRule) as a pure function of each epoch's K and drift, with
// the drifts measured on the Zipf set (flat, ~0.5) and on examples/dcd_ring.cc's problem (~1 at
// K = 8, 3.4 at 16): the limit grows 64-fold from an epoch at the limit whose drift stayed
// small, holds where it is moderate, and falls back when it jumps, never returning there.
TEST(DriftRule, GrowsWhileTheDriftStaysSmall) {
  using internal::DriftRule;
  DriftRule rule;
  EXPECT_EQ(rule.limit(), 8u);
  rule.Next(4, 0.5);  // the cost rule's K was below the limit: no basis to grow
  EXPECT_EQ(rule.limit(), 8u);
  rule.Next(8, 0.5);
  EXPECT_EQ(rule.limit(), 512u);
  rule.Next(512, 0.54);
  EXPECT_EQ(rule.limit(), 32'768u);
  EXPECT_DOUBLE_EQ(DriftRule::Of(1.0, 2.0), 0.5);
  EXPECT_EQ(DriftRule::Of(0, 0), 0.0);
  EXPECT_EQ(DriftRule::Of(1.0, 0), std::numeric_limits<double>::infinity());
}

TEST(DriftRule, HoldsWhereTheDriftIsModerateAndFallsBackWhereItJumps) {
  using internal::DriftRule;
  DriftRule ring;
  ring.Next(8, 1.68);  // dcd_ring at K = 8: moderate, the limit holds
  ring.Next(8, 0.87);
  EXPECT_EQ(ring.limit(), 8u);
  DriftRule rule;
  rule.Next(8, 0.5);
  EXPECT_EQ(rule.limit(), 512u);
  rule.Next(512, 3.4);  // jumped: back to the last good K, 512 is a ceiling
  EXPECT_EQ(rule.limit(), 8u);
  rule.Next(8, 0.5);  // grows again, but stays below the ceiling
  EXPECT_EQ(rule.limit(), 256u);
  rule.Next(256, std::numeric_limits<double>::infinity());  // a NaN/Inf drift is a jump too
  EXPECT_EQ(rule.limit(), 8u);
  rule.Next(8, 0.5);
  EXPECT_EQ(rule.limit(), 128u);
  DriftRule fresh;
  fresh.Next(8, 2.5);  // no good K yet: half
  EXPECT_EQ(fresh.limit(), 4u);
  fresh.Next(4, 0.1);
  EXPECT_EQ(fresh.limit(), 4u);  // 2 x 4 is not below the ceiling 8
}

// The drift rule inside the automatic period: the cost rule asks for 1,000 (the cap), the
// first epoch runs at the drift rule's start, later epochs at what both allow.
TEST(GossipPeriod, WatchingDriftTakesTheLesserOfTheCostAndDriftLimits) {
  using internal::GossipPeriod;
  using internal::RoundTimes;
  GossipPeriod period(kGossipEveryAuto, 16'000, kSixteenRounds);  // cap 1,000
  period.WatchDrift();
  const RoundTimes calibrated[] = {{.calib_round_s = 1.0, .calib_step_s = 1e-6}};
  period.Start(calibrated);
  EXPECT_EQ(period.every(), 8u);
  // Rounds of 1 s and steps of 1 ms: the cost rule asks for 19,000, capped at 1,000.
  const RoundTimes epoch[] = {{.round_s = 10, .epoch_s = 20, .rounds = 10, .steps = 10'000}};
  EXPECT_TRUE(period.Measure(epoch, 0.5));
  EXPECT_EQ(period.every(), 512u);
  EXPECT_TRUE(period.Measure(epoch, 0.5));
  EXPECT_EQ(period.every(), 1000u);  // the cost rule's cap
  EXPECT_TRUE(period.Measure(epoch, 3.0));
  EXPECT_EQ(period.every(), 512u);
  GossipPeriod fixed(16, 16'000, kSixteenRounds);  // a fixed K never moves
  fixed.WatchDrift();
  EXPECT_FALSE(fixed.Measure(epoch, 3.0));
  EXPECT_EQ(fixed.every(), 16u);
}

// Probes inside an epoch (GossipPeriod::Probe), from every worker's times over a window of
// rounds: each window whose drift stays small grows K at most 8-fold while the drift limit
// binds; the first window that does not grow K (a moderate drift holds, a jump falls back)
// ends the probing. The windows' costs reprice the cost rule: a calibration that priced rounds
// too cheap (K 95) does not stop the growth where the windows' dear rounds ask for the cap.
TEST(GossipPeriod, ProbesGrowEightFoldUntilAWindowDoesNotGrow) {
  using internal::GossipPeriod;
  using internal::RoundTimes;
  // Two workers' window of 8 rounds of 1 s after 8 steps of 1 us each, with drift `drift`.
  const auto window = [](double drift) {
    const RoundTimes one{.round_s = 8, .epoch_s = 8 + 64e-6, .rounds = 8, .steps = 64,
                         .pull_sq = drift, .own_sq = 1};
    return std::vector<RoundTimes>{one, one};
  };
  const RoundTimes dear_rounds[] = {{.calib_round_s = 1.0, .calib_step_s = 1e-6}};  // cost: the cap
  GossipPeriod period(kGossipEveryAuto, 16'000, kSixteenRounds);  // cap 1,000
  period.WatchDrift();
  period.Start(dear_rounds);
  ASSERT_TRUE(period.DriftLimited());
  EXPECT_TRUE(period.Probe(window(0.5)));
  EXPECT_EQ(period.every(), 64u);
  EXPECT_TRUE(period.Probe(window(0.5)));
  EXPECT_EQ(period.every(), 512u);
  EXPECT_FALSE(period.Probe(window(1.2)));  // moderate: holds, probing ends
  EXPECT_EQ(period.every(), 512u);

  GossipPeriod jumping(kGossipEveryAuto, 16'000, kSixteenRounds);
  jumping.WatchDrift();
  jumping.Start(dear_rounds);
  EXPECT_TRUE(jumping.Probe(window(0.5)));
  EXPECT_FALSE(jumping.Probe(window(3.0)));  // jumped at 64: back to the last good K
  EXPECT_EQ(jumping.every(), 8u);

  const RoundTimes cheaper_rounds[] = {{.calib_round_s = 3e-6, .calib_step_s = 1e-6}};  // cost: 95
  GossipPeriod repriced(kGossipEveryAuto, 16'000, kSixteenRounds);
  repriced.WatchDrift();
  repriced.Start(cheaper_rounds);
  EXPECT_TRUE(repriced.Probe(window(0.5)));
  EXPECT_EQ(repriced.every(), 64u);
  EXPECT_TRUE(repriced.Probe(window(0.5)));
  EXPECT_EQ(repriced.every(), 512u);  // past the calibration's 95
  EXPECT_FALSE(repriced.Probe(window(0.5)));
  EXPECT_EQ(repriced.every(), 1000u);

  GossipPeriod near_cap(kGossipEveryAuto, 320, kSixteenRounds);  // cap 20
  near_cap.WatchDrift();
  near_cap.Start(dear_rounds);
  EXPECT_FALSE(near_cap.Probe(window(0.5)));  // 8 -> the cap: the drift limit no longer binds
  EXPECT_EQ(near_cap.every(), 20u);

  const RoundTimes cheap_rounds[] = {{.calib_round_s = 1e-7, .calib_step_s = 1e-3}};  // cost: K = 1
  GossipPeriod cheap(kGossipEveryAuto, 16'000, kSixteenRounds);
  cheap.WatchDrift();
  cheap.Start(cheap_rounds);
  EXPECT_LT(cheap.every(), 8u);
  EXPECT_FALSE(cheap.DriftLimited());
  EXPECT_FALSE(cheap.Probe(window(0.1)));  // the cost rule binds: no probe starts
  GossipPeriod fixed(8, 16'000, kSixteenRounds);
  fixed.WatchDrift();
  EXPECT_FALSE(fixed.DriftLimited());
}

// How many rounds until every worker sees what each recorded at the same round, through the
// rounds' messages (KnowledgeLag): half a ring's length, one round on a complete graph, log2 n
// rounds for the one-peer exponential graph whatever round it starts at, and nullopt past the
// limit given.
TEST(KnowledgeLag, IsTheRoundsAMessageChainTakesToReachEveryWorker) {
  using internal::KnowledgeLag;
  EXPECT_EQ(KnowledgeLag(MakeTopology("ring", 2), 64), 1u);
  EXPECT_EQ(KnowledgeLag(MakeTopology("ring", 4), 64), 2u);
  EXPECT_EQ(KnowledgeLag(MakeTopology("ring", 9), 64), 4u);
  EXPECT_EQ(KnowledgeLag(MakeTopology("complete", 5), 64), 1u);
  EXPECT_EQ(KnowledgeLag(MakeTopology("one-peer-exponential", 8), 64), 3u);
  EXPECT_EQ(KnowledgeLag(MakeTopology("ring", 1), 64), 0u);
  EXPECT_EQ(KnowledgeLag(MakeTopology("ring", 200), 64), std::nullopt);
}

// local's rounds priced by what they carry (GossipPeriod::ForRoundCost): c(K) = c0 + c1 min(r K,
// m). A round whose work per step (c1 r) fits in the share takes the sparse branch; one that
// does not lands where the rounds are dense and cost c0 + c1 m; c1 = 0 is the constant rule.
// Measure prices an epoch's rounds from their wait (c0), their work per carried coordinate
// (c1) and the changes per step (r). The synchronous modes' cap keeps 4 rounds per epoch.
TEST(GossipPeriod, PricesSparseRoundsByTheirChanges) {
  using internal::GossipPeriod;
  using internal::RoundTimes;
  GossipPeriod open(kGossipEveryAuto, 16'000, kSixteenRounds);  // cap 1,000
  open.PriceChanges(100);                              // dense beyond 100 changes
  EXPECT_EQ(open.ForRoundCost(1.0, 0.001, 1, 1.0), 20u);  // sparse: ceil(0.95 / (0.05 - 0.95e-3)) = ceil(19.37)
  EXPECT_EQ(open.ForRoundCost(1.3, 0.1, 1, 1.0), 215u);   // c1 r > tau s: dense, ceil(11.3 x 19) = ceil(214.7)
  // The sparse branch would want K = 24, where 10 changes per step exceed 100: dense, c = 1.1.
  EXPECT_EQ(open.ForRoundCost(1.0, 0.001, 10, 1.0), 21u);  // ceil(20.9)
  EXPECT_EQ(open.ForRoundCost(1.0, 0.0, 5, 0.7), open.ForCosts(1.0, 0.7));
  EXPECT_EQ(open.ForCosts(1.0, 0.7), 28u);

  const RoundTimes calibrated[] = {{.calib_round_s = 1.9 - GossipPeriod::kRoundLatencyS, .calib_step_s = 1.0}};
  // Two workers, an epoch at K = 37 whose rounds took 20% (wait) or 30% (work) of the time,
  // carrying 20 changes each.
  const auto epoch = [](double round_s, double work_s) {
    return RoundTimes{.round_s = round_s, .encode_s = work_s / 2, .mix_s = work_s / 2, .epoch_s = 100,
                      .rounds = 10, .steps = 370, .changed = 200};
  };
  GossipPeriod waits(kGossipEveryAuto, 16'000, kSixteenRounds);
  waits.PriceChanges(100);
  waits.Start(calibrated);
  EXPECT_EQ(waits.every(), 37u);  // the calibration prices a dense round: ceil(1.9 x 19) = ceil(36.1)
  const RoundTimes waited[] = {epoch(20, 0.02), epoch(20, 0.02)};
  // c0 = 1.998, c1 = 1e-4, r = 20 / 37, s = 160 / 740: sparse, ceil(176.4).
  EXPECT_TRUE(waits.Measure(waited));
  EXPECT_EQ(waits.every(), 177u);
  GossipPeriod works(kGossipEveryAuto, 16'000, kSixteenRounds);
  works.PriceChanges(100);
  works.Start(calibrated);
  const RoundTimes worked[] = {epoch(30, 5), epoch(30, 5)};
  // c0 = 2.5, c1 = 0.025, s = 140 / 740: c1 r > tau s, dense at c = 5: ceil(502.1).
  EXPECT_TRUE(works.Measure(worked));
  EXPECT_EQ(works.every(), 503u);
  // Unpriced (every mode but local), the same epoch is the constant rule: c = 3, ceil(301.3).
  GossipPeriod flat(kGossipEveryAuto, 16'000, kSixteenRounds);
  flat.Start(calibrated);
  EXPECT_TRUE(flat.Measure(worked));
  EXPECT_EQ(flat.every(), 302u);
  // Rounds that were all dense (100 changes each) only bound r from below: the constant rule
  // too, rather than a sparse K the epoch cannot vouch for (c0 + c1 r K would be 1.998 + 0.02 K
  // / 37 here: K = 177 as above).
  GossipPeriod dense(kGossipEveryAuto, 16'000, kSixteenRounds);
  dense.PriceChanges(100);
  dense.Start(calibrated);
  RoundTimes saturated = epoch(20, 0.02);
  saturated.changed = 1'000;
  const RoundTimes all_dense[] = {saturated, saturated};
  EXPECT_TRUE(dense.Measure(all_dense));
  EXPECT_EQ(dense.every(), 176u);  // c = 2, s = 160 / 740: ceil(175.75)

  const GossipPeriod synchronous(kGossipEveryAuto, 16'000, GossipPeriod::kMinRoundsPerEpoch);
  EXPECT_EQ(synchronous.ForCosts(1.0, 1e-6), 4'000u);  // an epoch's steps / 4
}

// local at its automatic period: every epoch reports the K it ran with, at most an epoch's
// steps / 4, in the metrics and the summary (an automatic K depends on timing: no bits here).
TEST(Local, AutomaticPeriodIsReportedAndKeepsFourRoundsAnEpoch) {
  const SyntheticSplit data = testing::SmallProblem();
  const TrainResult r = Train(data.train, nullptr,
                              {.algorithm = Algorithm::kLocal, .l2 = kL2, .threads = 2, .epochs = 3,
                               .lr = 0.2f, .pin = Pin::kNone});
  const std::uint64_t cap = internal::StepsPerEpoch(data.train.rows(), 2, 1) / 4;
  ASSERT_EQ(r.history.size(), 3u);
  for (const EvalPoint& p : r.history) {
    ASSERT_TRUE(p.gossip_every.has_value()) << "epoch " << p.epoch;
    EXPECT_GE(*p.gossip_every, 1u);
    EXPECT_LE(*p.gossip_every, cap);
    EXPECT_TRUE(p.gossip_share.has_value());
  }
  // "(auto)", or "(auto, 12-40 over the run)" where K moved between epochs.
  bool said = false;
  for (const auto& [label, text] : r.summary) {
    said = said || (label == "gossip" && text.find("(auto") != std::string::npos);
  }
  EXPECT_TRUE(said);
  EXPECT_LT(r.history.back().objective, 1.1 * SmallProblemOptimum());
}

TEST(Dpsgd, OneWorkerIsSerialSgdBitForBit) {
  // With one worker W = [1]: mixing multiplies by 1.0f, so D-PSGD is hogwild's serial loop.
  // Batch 2: both then take Gradient() + ApplyStep() (hogwild's fused one-sample loop for
  // linear models multiplies by a per-epoch shrink table instead of dividing).
  const SyntheticSplit data = testing::SmallProblem();
  const TrainConfig serial{.algorithm = Algorithm::kHogwild, .l2 = kL2, .threads = 1, .epochs = 3,
                           .batch = 2, .lr = 0.2f, .seed = 3};
  TrainConfig replica = serial;
  replica.algorithm = Algorithm::kDpsgd;
  const TrainResult a = Train(data.train, nullptr, serial);
  const TrainResult b = Train(data.train, nullptr, replica);
  ASSERT_EQ(a.params.size(), b.params.size());
  for (std::size_t u = 0; u < a.params.size(); ++u) ASSERT_EQ(a.params[u], b.params[u]) << u;
  EXPECT_EQ(b.history.back().consensus.value(), 0.0);
  EXPECT_EQ(b.bytes_sent, 0u);
}

// A linear model at batch 1 with local steps (--gossip-every other than 1): a local step is
// hogwild's own (LinearStep) and a round's step the same arithmetic (RoundReplicas::Descend),
// so one worker is hogwild's serial loop bit for bit at every K, the automatic one included
// (with one worker every mix is the identity). Fails if a round's step and a local step differ
// by a rounding: the result would then depend on where the rounds fall.
TEST(LocalSteps, OneWorkerAtBatchOneIsHogwildsLoopAtEveryK) {
  const SyntheticSplit data = testing::SmallProblem();
  const std::pair<Algorithm, MixOrder> modes[] = {{Algorithm::kDpsgd, MixOrder::kMixThenStep},
                                                  {Algorithm::kDpsgd, MixOrder::kStepThenMix},
                                                  {Algorithm::kLocal, MixOrder::kMixThenStep},
                                                  {Algorithm::kChoco, MixOrder::kMixThenStep}};
  for (const ModelKind m : {ModelKind::kLogistic, ModelKind::kHinge, ModelKind::kSquared}) {
    const TrainConfig serial{.algorithm = Algorithm::kHogwild, .model = m, .l2 = kL2, .threads = 1,
                             .epochs = 2, .lr = 0.05f, .seed = 3, .pin = Pin::kNone, .hot_coords = 0};
    const TrainResult want = Train(data.train, nullptr, serial);
    for (const auto& [a, order] : modes) {
      for (const int every : {2, 7, 1000, kGossipEveryAuto}) {
        TrainConfig replica = serial;
        replica.algorithm = a;
        replica.gossip_every = every;
        replica.mix_order = order;
        replica.hot_coords = -1;  // the default; replica modes take none
        const TrainResult got = Train(data.train, nullptr, replica);
        ASSERT_EQ(got.params.size(), want.params.size());
        for (std::size_t u = 0; u < want.params.size(); ++u) {
          ASSERT_EQ(got.params[u], want.params[u]) << ToString(m) << " " << ToString(a) << " "
                                                   << ToString(order) << " K " << every << " coordinate " << u;
        }
      }
    }
  }
}

TEST(Dpsgd, SixteenWorkersOnARingCountEveryByte) {
  const SyntheticSplit data = testing::SmallProblem();
  const TrainResult r = Train(data.train, nullptr,
                              {.algorithm = Algorithm::kDpsgd, .l2 = kL2, .threads = 16,
                               .epochs = 3, .batch = 8, .lr = 0.2f, .topology = "ring",
                               .gossip_every = 1});
  ASSERT_EQ(r.history.size(), 3u);
  EXPECT_LT(r.history.back().objective, r.history.front().objective);
  // Every round each worker sends its whole model to its two ring neighbours.
  const std::uint64_t rounds_per_epoch = (3000 / 16 + 1 + 7) / 8;  // shards of 187 or 188 rows
  const std::uint64_t message = r.params.size() * sizeof(float);
  EXPECT_EQ(r.bytes_sent, 3 * rounds_per_epoch * 16 * 2 * message);
  EXPECT_EQ(r.bytes_sent_max, 3 * rounds_per_epoch * 2 * message);
  EXPECT_EQ(r.samples, 3 * rounds_per_epoch * 8 * 16);
}

TEST(Dpsgd, LinkTimeEntersTheVirtualClock) {
  const SyntheticSplit data = testing::SmallProblem();
  const TrainResult r = Train(data.train, nullptr,
                              {.algorithm = Algorithm::kDpsgd, .l2 = kL2, .threads = 4,
                               .epochs = 2, .batch = 16, .lr = 0.2f, .topology = "ring",
                               .link = "latency=1ms,bandwidth=10Mbit", .gossip_every = 1});
  ASSERT_EQ(r.history.size(), 2u);
  // Each round, the last message a worker mixes left its sender no earlier than the sender's
  // previous round ended, and takes b/bandwidth + latency: a lower bound that compute only adds to.
  const double rounds = 2.0 * std::ceil(750.0 / 16.0);
  const double message_s = static_cast<double>(r.params.size() * sizeof(float)) / 1.25e6 + 1e-3;
  EXPECT_GE(r.history.back().virtual_s, rounds * message_s);
  EXPECT_GT(r.history.back().virtual_s, r.history.front().virtual_s);
}

TEST(Dpsgd, RealtimeLinksHoldMessagesUntilDue) {
  const SyntheticSplit data = testing::SmallProblem();
  const TrainResult r = Train(data.train, nullptr,
                              {.algorithm = Algorithm::kDpsgd, .l2 = kL2, .threads = 4,
                               .epochs = 1, .batch = 64, .lr = 0.2f, .topology = "ring",
                               .link = "latency=2ms", .link_mode = "realtime", .gossip_every = 1});
  ASSERT_EQ(r.history.size(), 1u);
  // Every round waits at least one latency for real; virtual time is then the wall time.
  const double rounds = std::ceil(750.0 / 64.0);
  EXPECT_GE(r.history.back().train_s, rounds * 2e-3);
  EXPECT_EQ(r.history.back().virtual_s, r.history.back().train_s);
}

TEST(Sync, OnAStarPaysTheCentresSerialisedBroadcast) {
  const SyntheticSplit data = testing::SmallProblem();
  const TrainResult r = Train(data.train, nullptr,
                              {.algorithm = Algorithm::kSync, .l2 = kL2, .threads = 4,
                               .epochs = 1, .batch = 16, .lr = 0.2f, .topology = "star",
                               .link = "latency=1ms,bandwidth=10Mbit"});
  ASSERT_EQ(r.history.size(), 1u);
  // Every step the centre sends the model to 3 leaves through one NIC, after latency.
  const double steps = std::ceil(750.0 / 16.0);
  const double model_s = static_cast<double>(r.params.size() * sizeof(float)) / 1.25e6;
  EXPECT_GE(r.history.back().virtual_s, steps * (3 * model_s + 1e-3));
}

TEST(Local, ExactAveragesEveryStepConvergeWithIdenticalReplicas) {
  const SyntheticSplit data = testing::SmallProblem();
  const double optimum = SmallProblemOptimum();
  const TrainResult r = Train(data.train, nullptr,
                              {.algorithm = Algorithm::kLocal, .l2 = kL2, .threads = 4,
                               .epochs = 20, .batch = 4, .seed = 5, .gossip_every = 1});
  ASSERT_EQ(r.history.size(), 20u);
  EXPECT_LE(r.history.back().objective, optimum * 1.01) << "optimum " << optimum;
  // Every worker sums the same models in the same order: the replicas are bitwise equal.
  for (const EvalPoint& p : r.history) EXPECT_EQ(p.consensus.value(), 0.0) << "epoch " << p.epoch;
}

TEST(Local, ReplicasDriftBetweenAveragesAndMetricsRecordTheSettings) {
  const SyntheticSplit data = testing::SmallProblem();
  const auto path = std::filesystem::path(::testing::TempDir()) / "corral_replica.jsonl";
  // 750 rows per worker in batches of 4: 188 steps per epoch, not a multiple of H = 5, so the
  // epoch ends between averages.
  const TrainResult r = Train(data.train, nullptr,
                              {.algorithm = Algorithm::kLocal, .l2 = kL2, .threads = 4,
                               .epochs = 2, .batch = 4, .lr = 0.2f, .metrics_path = path.string(),
                               .gossip_every = 5});
  EXPECT_GT(r.history.back().consensus.value(), 0.0);
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_DOUBLE_EQ(lines[0]["consensus"].get<double>(), *r.history[0].consensus);
  EXPECT_DOUBLE_EQ(lines[0]["virtual_s"].get<double>(), r.history[0].virtual_s);
  EXPECT_EQ(lines[2]["algo"], "local");
  EXPECT_EQ(lines[2]["topology"], "complete");
  EXPECT_EQ(lines[2]["mix_order"], "step-then-mix");
  EXPECT_EQ(lines[2]["gossip_every"], 5);
}

TEST(Local, MetricsCountEveryDirectedEdgeAndSplitTheRound) {
  const SyntheticSplit data = testing::SmallProblem();
  const auto path = std::filesystem::path(::testing::TempDir()) / "corral_edges.jsonl";
  // 188 steps per epoch (as above), 2 epochs, a round every 5th step: 75 rounds, each sending
  // x_i (d floats) to all 3 others (20 rows of 12 features change more than local's sparse
  // messages carry, d / 64: sparse_changes.h).
  const TrainResult r = Train(data.train, nullptr,
                              {.algorithm = Algorithm::kLocal, .l2 = kL2, .threads = 4,
                               .epochs = 2, .batch = 4, .lr = 0.2f, .metrics_path = path.string(),
                               .gossip_every = 5});
  const std::uint64_t per_edge = 75 * r.params.size() * sizeof(float);
  ASSERT_EQ(r.edge_bytes.size(), 12u);
  std::uint64_t total = 0;
  for (const EdgeBytes& e : r.edge_bytes) {
    EXPECT_NE(e.from, e.to);
    EXPECT_EQ(e.bytes, per_edge) << e.from << " -> " << e.to;
    total += e.bytes;
  }
  EXPECT_EQ(total, r.bytes_sent);
  for (const EvalPoint& p : r.history) {
    ASSERT_TRUE(p.round_split.has_value()) << "epoch " << p.epoch;
    const RoundSplit& t = *p.round_split;
    EXPECT_GT(t.compute_s, 0.0);
    EXPECT_GE(t.wait_s, 0.0);
    EXPECT_GE(t.mix_s, 0.0);
    // local scans its changes (encode) and reads the others' messages (decode) every round:
    // ~37 timed laps an epoch, so neither sum can be 0.
    EXPECT_GT(t.encode_s, 0.0);
    EXPECT_GT(t.decode_s, 0.0);
  }
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_DOUBLE_EQ(lines[1]["round_wait_us"].get<double>(), 1e6 * r.history[1].round_split->wait_s);
  ASSERT_EQ(lines[2]["bytes_per_edge"].size(), 12u);
  EXPECT_EQ(lines[2]["bytes_per_edge"][0]["bytes"].get<std::uint64_t>(), per_edge);
  EXPECT_TRUE(lines[2].contains("round_mix_us"));
}

// local's sparse rounds (gossip/sparse_changes.h). A problem where a round's changes are a
// small share of d = 4001 coordinates, so that the sparse messages are the ones taken.
SyntheticSplit WideProblem() {
  return MakeSyntheticClassification(
      {.rows = 1800, .features = 4000, .nnz_per_row = 8, .zipf = 0.8, .label_noise = 0.05, .seed = 21}, 0);
}

// local as it was before sparse rounds: dpsgd on the complete graph, step-then-mix, sends x_i.
TrainConfig DenseLocal(TrainConfig local) {
  local.algorithm = Algorithm::kDpsgd;
  local.topology = "complete";
  local.mix_order = MixOrder::kStepThenMix;
  return local;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Steps per epoch: the longest shard in batches (every worker takes that many).
std::uint64_t StepsPerEpoch(std::size_t rows, int workers, int batch) {
  const std::size_t longest = (rows + static_cast<std::size_t>(workers) - 1) / static_cast<std::size_t>(workers);
  return (longest + static_cast<std::size_t>(batch) - 1) / static_cast<std::size_t>(batch);
}

// With 2 and 4 workers the dense formula gives n equal values back exactly (weights 1/2, 1/4),
// so sending only the changes and averaging only over their union is the dense round bit for
// bit; the bytes are a fraction of the dense messages'. Batch 1 takes the fused linear step,
// batch 3 the SparseGrad one: both mark what they write.
TEST(LocalSparse, TwoAndFourWorkersGiveTheDenseRoundsBitsForFewerBytes) {
  const SyntheticSplit data = WideProblem();
  for (const int workers : {2, 4}) {
    for (const int batch : {1, 3}) {
      // At most 48 rows' coordinates change between rounds: under d / 64 = 62.
      const int every = batch == 1 ? 6 : 2;
      const TrainConfig local{.algorithm = Algorithm::kLocal, .l2 = kL2, .threads = workers,
                              .epochs = 2, .batch = batch, .lr = 0.2f, .seed = 4,
                              .pin = Pin::kNone, .gossip_every = every};
      const TrainResult sparse = Train(data.train, nullptr, local);
      const TrainResult dense = Train(data.train, nullptr, DenseLocal(local));
      const std::string where = std::to_string(workers) + " workers, batch " + std::to_string(batch);
      EXPECT_TRUE(SameBits(sparse.params, dense.params)) << where;
      EXPECT_LT(sparse.bytes_sent * 4, dense.bytes_sent) << where;
      // Every epoch ends with a round here: the replicas are bitwise equal then.
      ASSERT_EQ(StepsPerEpoch(data.train.rows(), workers, batch) % static_cast<std::uint64_t>(every), 0u) << where;
      for (const EvalPoint& p : sparse.history) EXPECT_EQ(p.consensus.value(), 0.0) << where;
    }
  }
}

// With 3 workers the dense formula may move a coordinate nobody changed by an ulp per round
// (1/3 is not a float); the sparse round keeps it. The runs then differ by rounding only: at
// most an ulp of the largest parameter per round (300 rounds here; measured: 9e-8, a few ulps,
// against the bound's 1.6e-5), and the replicas are
// still bitwise equal after every round (consensus 0 when an epoch ends with one).
TEST(LocalSparse, ThreeWorkersStayWithinRoundingOfTheDenseRoundsWithEqualReplicas) {
  const SyntheticSplit data = WideProblem();
  const TrainConfig local{.algorithm = Algorithm::kLocal, .l2 = kL2, .threads = 3, .epochs = 3,
                          .batch = 1, .lr = 0.2f, .seed = 4, .pin = Pin::kNone, .gossip_every = 6};
  const TrainResult sparse = Train(data.train, nullptr, local);
  const TrainResult dense = Train(data.train, nullptr, DenseLocal(local));
  ASSERT_EQ(sparse.params.size(), dense.params.size());
  float largest = 0;
  for (const float v : dense.params) largest = std::max(largest, std::abs(v));
  const double rounds = 3.0 * static_cast<double>(StepsPerEpoch(data.train.rows(), 3, 1)) / 6.0;
  const double bound = rounds * std::numeric_limits<float>::epsilon() * largest;
  double worst = 0;
  for (std::size_t u = 0; u < sparse.params.size(); ++u) {
    worst = std::max(worst, static_cast<double>(std::abs(sparse.params[u] - dense.params[u])));
  }
  EXPECT_LE(worst, bound) << "largest parameter " << largest;
  EXPECT_EQ(StepsPerEpoch(data.train.rows(), 3, 1) % 6, 0u);
  for (const EvalPoint& p : sparse.history) EXPECT_EQ(p.consensus.value(), 0.0) << "epoch " << p.epoch;
  EXPECT_LT(sparse.bytes_sent * 4, dense.bytes_sent);
}

// When a round changed more than the sparse form carries (d / 64), x_i goes: 641 coordinates
// and 16 steps of 40 features between rounds (a logistic model), and a dense model (every step
// writes all of the MLP's weights). Every message is then d floats.
TEST(LocalSparse, MostCoordinatesChangedSendsTheDenseMessage) {
  const SyntheticSplit narrow = MakeSyntheticClassification(
      {.rows = 640, .features = 640, .nnz_per_row = 40, .seed = 5}, 0);
  const TrainConfig linear{.algorithm = Algorithm::kLocal, .l2 = kL2, .threads = 2, .epochs = 2,
                           .batch = 1, .lr = 0.1f, .seed = 4, .pin = Pin::kNone, .gossip_every = 16};
  TrainConfig mlp = linear;
  mlp.model = ModelKind::kMlp;
  mlp.hidden = {8};
  mlp.batch = 4;
  mlp.gossip_every = 1;
  for (const TrainConfig& config : {linear, mlp}) {
    const TrainResult r = Train(narrow.train, nullptr, config);
    const std::uint64_t rounds =
        2 * StepsPerEpoch(narrow.train.rows(), 2, config.batch) / static_cast<std::uint64_t>(config.gossip_every);
    EXPECT_EQ(r.bytes_sent, rounds * 2 * r.params.size() * sizeof(float)) << ToString(config.model);
    const TrainResult dense = Train(narrow.train, nullptr, DenseLocal(config));
    EXPECT_TRUE(SameBits(r.params, dense.params)) << ToString(config.model);
  }
}

// The message's form at its threshold: k changes take 4 + 8k bytes, sent while k <= d / 64.
TEST(LocalSparse, MessageIsSparseOnlyUpToOneChangeIn64) {
  constexpr std::size_t d = 383;  // at most 5 changes
  ASSERT_EQ(internal::MaxSparseChanges(d), 5u);
  EXPECT_EQ(internal::MaxSparseChanges(63), 0u);
  std::vector<float> base(d, 1.0f);
  std::vector<float> x = base;
  internal::ChangedCoords marks;
  internal::ChangeMessage message;
  marks.Init(d);
  message.Init(d);
  for (const std::uint32_t u : {7u, 2u, 9u, 4u}) {
    x[u] = 2.0f + static_cast<float>(u);
    marks.Mark(u);
  }
  marks.Mark(5);  // written but bitwise unchanged: not sent
  const std::span<const std::byte> sparse = message.Encode(x, base, marks);
  ASSERT_EQ(sparse.size(), 4u + 8u * 4u);
  const auto* words = reinterpret_cast<const std::uint32_t*>(sparse.data());
  EXPECT_EQ(words[0], 4u);
  EXPECT_EQ(std::vector<std::uint32_t>(words + 1, words + 5), (std::vector<std::uint32_t>{2, 4, 7, 9}));
  EXPECT_EQ(reinterpret_cast<const float*>(words + 5)[2], 9.0f);
  x[0] = -0.0f;  // +0 -> -0 is a change of bits
  base[0] = 0.0f;
  marks.Mark(0);  // 6 marks: more than 5, the round scans and finds 5 changes
  EXPECT_EQ(message.Encode(x, base, marks).size(), 4u + 8u * 5u);
  x[1] = 3.0f;
  marks.Mark(1);  // 6 changes
  EXPECT_EQ(message.Encode(x, base, marks).data(), reinterpret_cast<const std::byte*>(x.data()));
  marks.Clear();
  EXPECT_EQ(message.Encode(x, base, marks).size(), 4u);  // nothing marked: an empty message
  marks.Saturate();  // a scan finds all 6 changes
  EXPECT_EQ(message.Encode(x, base, marks).size(), d * sizeof(float));
}

// A malformed sparse message is an error naming the receiver, the sender and what is wrong.
TEST(LocalSparse, MalformedMessagesAreRefused) {
  constexpr std::size_t d = 300;  // at most 4 changes
  const auto parse = [&](std::vector<std::uint32_t> words, std::size_t bytes) {
    internal::Message m;
    m.header.sender = 3;
    m.header.bytes = static_cast<std::uint32_t>(bytes);
    m.payload = std::as_bytes(std::span<const std::uint32_t>(words));
    internal::ChangeTerm t;
    try {
      internal::ParseChanges(m, d, 1, "local", t);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kWorkerFailed);
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(parse({2, 3, 5, 0, 0}, 20), "");
  EXPECT_NE(parse({2, 5, 3, 0, 0}, 20).find("increasing indices below 300"), std::string::npos);
  EXPECT_NE(parse({2, 3, 300, 0, 0}, 20).find("has index 300"), std::string::npos);
  EXPECT_NE(parse({3, 3, 5, 0, 0}, 20).find("from worker 3"), std::string::npos);
  EXPECT_NE(parse({5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 44).find("at most 4"), std::string::npos);
  EXPECT_NE(parse({0, 0}, 6).find("worker 1 received a message of 6 bytes"), std::string::npos);
}

// Marks come back in increasing order, each once, and Clear forgets them.
TEST(LocalSparse, ChangedCoordsListsMarksInOrder) {
  internal::ChangedCoords marks;
  marks.Init(10000);
  for (const std::uint32_t u : {9999u, 64u, 0u, 4096u, 64u, 63u, 4095u}) marks.Mark(u);
  std::vector<std::uint32_t> seen;
  marks.ForEach([&](std::uint32_t u) { seen.push_back(u); });
  EXPECT_EQ(seen, (std::vector<std::uint32_t>{0, 63, 64, 4095, 4096, 9999}));
  marks.Clear();
  seen.clear();
  marks.Mark(5);
  marks.ForEach([&](std::uint32_t u) { seen.push_back(u); });
  EXPECT_EQ(seen, (std::vector<std::uint32_t>{5}));
}

using testing::ThrowingModel;

TEST(Dpsgd, AThrowingWorkerStopsEveryoneAndIsReported) {
  const SyntheticSplit data = testing::SmallProblem();
  std::atomic<int> calls{0};
  const ThrowingModel model(data.train, 2500, calls);
  const TrainConfig config{.algorithm = Algorithm::kDpsgd, .threads = 8, .epochs = 20,
                           .lr = 0.1f, .topology = "ring"};
  bool searched = false;
  internal::RunPlan plan = internal::PlanRun(model, data.train, config, 8, 1, searched);
  try {
    internal::Coordinate<ThrowingModel, internal::DpsgdMode<ThrowingModel>>(
        model, nullptr, std::move(plan), searched, 1e-3f, {});
    FAIL() << "expected the worker's error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kWorkerFailed);
    EXPECT_NE(std::string(e.what()).find("boom in the model"), std::string::npos) << e.what();
  }
  EXPECT_LT(calls.load(), 20 * 3000 / 2);
}

TEST(Dpsgd, TimeLimitStopsAllWorkersAndResumesAtAnEpochBoundary) {
  const SyntheticSplit data = testing::SmallProblem();
  const TrainResult r = Train(data.train, nullptr,
                              {.algorithm = Algorithm::kDpsgd, .l2 = kL2, .threads = 8,
                               .epochs = 1'000'000, .lr = 0.1f, .time_limit_s = 0.3,
                               .topology = "ring"});
  EXPECT_EQ(r.stop_reason, StopReason::kTimeLimit);
  ASSERT_FALSE(r.history.empty());
  EXPECT_TRUE(std::isfinite(r.history.back().objective));
  // A partial epoch is not resumable mid-way: no position, or every position 0.
  for (const std::uint64_t p : r.state.position) EXPECT_EQ(p, 0u);
}

TEST(ReplicaConfig, BadValuesAreConfigErrors) {
  const SyntheticSplit data = testing::SmallProblem();
  const auto expect_bad = [&](TrainConfig config, const std::string& names) {
    try {
      Train(data.train, nullptr, config);
      FAIL() << "expected a config error naming " << names;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
      EXPECT_NE(std::string(e.what()).find(names), std::string::npos) << e.what();
    }
  };
  const TrainConfig base{.algorithm = Algorithm::kDpsgd, .threads = 4, .epochs = 1};
  TrainConfig c = base;
  c.topology = "mesh";
  expect_bad(c, "mesh");
  c = base;
  c.topology = "hypercube";
  c.threads = 6;
  expect_bad(c, "power of two");
  c = base;
  c.gossip_every = -1;
  expect_bad(c, "--gossip-every");
  c = base;
  c.link = "latency=fast";
  expect_bad(c, "latency");
  c = base;
  c.link_mode = "warp";
  expect_bad(c, "warp");
  c = base;
  c.algorithm = Algorithm::kHogwild;
  c.link = "latency=1ms";
  expect_bad(c, "--link");
  c = base;
  c.algorithm = Algorithm::kSync;
  c.link = "latency=1ms";
  expect_bad(c, "--topology star");
  EXPECT_THROW(ParseMixOrder("sideways"), Error);
  EXPECT_EQ(ParseMixOrder("step-then-mix"), MixOrder::kStepThenMix);
}

}  // namespace
}  // namespace corral
