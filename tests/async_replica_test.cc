// The asynchronous replica modes: adpsgd (AD-PSGD's pairwise averages with random neighbours)
// and hogwild++ (hogwild inside groups, groups on a token ring). Convergence to the full-batch
// optimum, exact pairwise averages (the replicas' mean is preserved), more workers than cores
// without deadlock, and failures that stop everyone. White-box where a test needs a hook: the
// mode goes straight into the engine's runner.
#include <atomic>
#include <cctype>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <corral/corral.h>

#include "engine/src/compress/compressor.h"
#include "engine/src/modes/adpsgd.h"
#include "engine/src/modes/hogwild_pp.h"
#include "logistic_oracle.h"
#include "test_data.h"
#include "throwing_model.h"

namespace corral {
namespace {

constexpr float kL2 = 1e-2f;

double SmallProblemOptimum() {
  static const double optimum = testing::OptimalObjective(testing::SmallProblem().train, kL2);
  return optimum;
}

// The reached objective is near the optimum and is the objective of the returned parameters.
void ExpectOptimum(const SyntheticSplit& data, const TrainResult& r, double tolerance) {
  const double optimum = SmallProblemOptimum();
  const double reached = r.history.back().objective;
  EXPECT_GE(reached, optimum - 1e-6);
  EXPECT_LE(reached, optimum * (1 + tolerance)) << "optimum " << optimum;
  const std::vector<double> w(r.params.begin(), r.params.end());
  EXPECT_NEAR(testing::Objective(data.train, w, kL2), reached, 1e-5);
}

struct AdpsgdCase {
  int workers;
  const char* topology;
  int batch = 4;  // 1: a linear model's hot head (hot_head.h) on the small problem's sparse rows
};

std::string AdpsgdName(const ::testing::TestParamInfo<AdpsgdCase>& info) {
  return std::string(info.param.topology) + "_" + std::to_string(info.param.workers) + "workers" +
         (info.param.batch == 1 ? "_hot_head" : "");
}

class AdpsgdConverges : public ::testing::TestWithParam<AdpsgdCase> {};

TEST_P(AdpsgdConverges, ToTheFullBatchOptimum) {
  const AdpsgdCase& c = GetParam();
  const SyntheticSplit data = testing::SmallProblem();
  const TrainResult r = Train(data.train, nullptr,
                              {.algorithm = Algorithm::kAdpsgd, .l2 = kL2, .threads = c.workers,
                               .epochs = 20, .batch = c.batch, .seed = 5, .topology = c.topology,
                               .gossip_every = 1});
  ASSERT_EQ(r.history.size(), 20u);
  EXPECT_EQ(r.hot_coords > 0, c.batch == 1);
  ExpectOptimum(data, r, 0.01);
  ASSERT_TRUE(r.history.back().consensus.has_value());
  EXPECT_GT(*r.history.front().consensus, 0.0);
  EXPECT_LT(*r.history.back().consensus, *r.history.front().consensus);
  EXPECT_GT(r.bytes_sent, 0u);
}

INSTANTIATE_TEST_SUITE_P(Topologies, AdpsgdConverges,
                         ::testing::Values(AdpsgdCase{4, "ring"}, AdpsgdCase{8, "ring"},
                                           AdpsgdCase{4, "complete"}, AdpsgdCase{4, "ring", 1}),
                         AdpsgdName);

// Compressed exchange (CHOCO-style public copies per edge): converges for unbiased and biased
// codecs alike, and each average sends a codec's message instead of the model.
class AdpsgdCompressedConverges : public ::testing::TestWithParam<const char*> {};

TEST_P(AdpsgdCompressedConverges, ToTheFullBatchOptimum) {
  const SyntheticSplit data = testing::SmallProblem();
  const TrainConfig config{.algorithm = Algorithm::kAdpsgd, .l2 = kL2, .threads = 4, .epochs = 20,
                           .batch = 4, .seed = 5, .compress = GetParam(), .topology = "ring",
                           .gossip_every = 1};
  const TrainResult r = Train(data.train, nullptr, config);
  ASSERT_EQ(r.history.size(), 20u);
  ExpectOptimum(data, r, 0.01);
  EXPECT_GT(r.gamma, 0.0);
  EXPECT_LE(r.gamma, 1.0);
  EXPECT_LT(*r.history.back().consensus, *r.history.front().consensus);
  // Every average sends one message each way, of the codec's size.
  const std::size_t d = r.params.size();
  const std::uint64_t message = internal::MakeCompressor(GetParam(), d)->WireBytes(d);
  EXPECT_GT(r.bytes_sent, 0u);
  EXPECT_EQ(r.bytes_sent % message, 0u);
  EXPECT_LT(message, d * sizeof(float));
}

INSTANTIATE_TEST_SUITE_P(Codecs, AdpsgdCompressedConverges,
                         ::testing::Values("qsgd:8", "qsgd:2", "topk:0.1", "randk:0.2:unscaled",
                                           "sign", "quant:4"),
                         [](const auto& test) {
                           std::string name = test.param;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

TEST(Adpsgd, OneWorkerIsSerialSgdBitForBit) {
  // No neighbour to average with: adpsgd is hogwild's serial Gradient() + ApplyStep() loop
  // (batch 2: hogwild's fused one-sample loop multiplies by a shrink table instead).
  const SyntheticSplit data = testing::SmallProblem();
  const TrainConfig serial{.algorithm = Algorithm::kHogwild, .l2 = kL2, .threads = 1, .epochs = 3,
                           .batch = 2, .lr = 0.2f, .seed = 3};
  TrainConfig async = serial;
  async.algorithm = Algorithm::kAdpsgd;
  const TrainResult a = Train(data.train, nullptr, serial);
  const TrainResult b = Train(data.train, nullptr, async);
  ASSERT_EQ(a.params.size(), b.params.size());
  for (std::size_t u = 0; u < a.params.size(); ++u) ASSERT_EQ(a.params[u], b.params[u]) << u;
  EXPECT_EQ(b.bytes_sent, 0u);
}

TEST(Adpsgd, OneWorkerWithTheHotHeadIsHogwildsSplitLoopBitForBit) {
  // Batch 1 on sparse rows: both keep the hot head. adpsgd's hot values are its replica's own
  // coordinates in slot order, and hogwild's one worker stores its copy back at every sync: the
  // same split steps (hot_head.h) on the same rows in the same order, so the same bits.
  const SyntheticSplit data = testing::SmallProblem();
  const TrainConfig serial{.algorithm = Algorithm::kHogwild, .l2 = kL2, .threads = 1, .epochs = 3,
                           .lr = 0.2f, .seed = 3};
  TrainConfig async = serial;
  async.algorithm = Algorithm::kAdpsgd;
  const TrainResult a = Train(data.train, nullptr, serial);
  const TrainResult b = Train(data.train, nullptr, async);
  EXPECT_GT(b.hot_coords, 0);
  EXPECT_EQ(a.hot_coords, b.hot_coords);
  ASSERT_EQ(a.params.size(), b.params.size());
  for (std::size_t u = 0; u < a.params.size(); ++u) ASSERT_EQ(a.params[u], b.params[u]) << u;
  // Without the head: the fused generic step, the same model up to rounding.
  async.hot_coords = 0;
  const TrainResult c = Train(data.train, nullptr, async);
  EXPECT_EQ(c.hot_coords, 0);
  EXPECT_NEAR(c.history.back().objective, b.history.back().objective, 1e-4 * b.history.back().objective);
}

// AD-PSGD whose workers start from different random replicas (a test hook on Setup).
template <typename M>
class SpreadReplicas : public internal::AdpsgdMode<M> {
 public:
  using internal::AdpsgdMode<M>::AdpsgdMode;
  void Setup(int w) {
    internal::AdpsgdMode<M>::Setup(w);
    Rng rng(99, static_cast<std::uint64_t>(w));
    for (float& v : this->Replica(w)) v = 2 * rng.UniformFloat() - 1;
  }
};

// Runs `config` (adpsgd, logistic on the small problem) from SpreadReplicas' starting replicas.
TrainResult RunFromSpreadReplicas(const TrainConfig& config) {
  const SyntheticSplit data = testing::SmallProblem();
  const LogisticModel model(data.train, kL2);
  bool searched = false;
  internal::RunPlan plan =
      internal::PlanRun(model, data.train, config, config.threads, 1, searched);
  return internal::Coordinate<LogisticModel, SpreadReplicas<LogisticModel>>(
      model, nullptr, std::move(plan), searched, kL2, {});
}

// The mean of SpreadReplicas' starting replicas for `workers` workers and d parameters.
std::vector<double> SpreadMean(int workers, std::size_t d) {
  std::vector<double> mean(d, 0.0);
  for (int w = 0; w < workers; ++w) {
    Rng rng(99, static_cast<std::uint64_t>(w));
    for (double& m : mean) m += (2.0 * rng.UniformFloat() - 1) / workers;
  }
  return mean;
}

TEST(Adpsgd, PairwiseAveragesPreserveTheMeanAndReachConsensus) {
  // Pure gossip (a step too small to change anything): every average is exclusive on both
  // replicas, so the replicas' mean stays what it was (up to float rounding) while they agree.
  // Racy averages would shift the mean by O(|x_i - x_j|). 16 workers on few cores. Batch 1:
  // with the hot head, whose hot values start from the spread replicas (AfterSetup), are
  // averaged, and are written back at the epochs' ends (EndEpoch); each of those missing
  // fails the mean or the consensus below.
  const int workers = 16;
  const TrainConfig config{.algorithm = Algorithm::kAdpsgd, .threads = workers, .epochs = 2,
                           .lr = 1e-30f, .lr_decay = 1, .topology = "ring", .gossip_every = 1};
  const TrainResult r = RunFromSpreadReplicas(config);
  ASSERT_EQ(r.history.size(), 2u);
  EXPECT_GT(r.hot_coords, 0);
  const std::vector<double> mean = SpreadMean(workers, r.params.size());
  for (std::size_t u = 0; u < mean.size(); ++u) ASSERT_NEAR(r.params[u], mean[u], 1e-4) << u;
  // Uniform(-1, 1) replicas start at consensus distance about d/3, and every epoch of averages
  // brings them closer. How much closer depends on the schedule (16 threads on 2 cores run
  // their epochs almost one after another, so averages sweep the ring rather than mix it at
  // random), so the bounds are loose.
  const double start = static_cast<double>(r.params.size()) / 3;
  EXPECT_LT(r.history.front().consensus.value(), start / 3);
  EXPECT_LT(r.history.back().consensus.value(), r.history.front().consensus.value());
  // One average per step unless both neighbours were busy (rare).
  const std::uint64_t averages = r.bytes_sent / (2 * sizeof(float) * r.params.size());
  EXPECT_LE(averages, 2u * 3000u);
  EXPECT_GT(averages, 3000u);
}

TEST(Adpsgd, CompressedAveragesPreserveTheMeanAndMoveTowardConsensus) {
  // x_i += m, x_j -= m: the pair's sum, and so the replicas' mean, is what it was (up to float
  // rounding) whatever the codec's error, while the public copies pull the replicas together.
  const int workers = 8;
  const TrainConfig config{.algorithm = Algorithm::kAdpsgd, .threads = workers, .epochs = 3,
                           .lr = 1e-30f, .lr_decay = 1, .compress = "qsgd:4",
                           .topology = "ring", .gossip_every = 1};
  const TrainResult r = RunFromSpreadReplicas(config);
  ASSERT_EQ(r.history.size(), 3u);
  const std::vector<double> mean = SpreadMean(workers, r.params.size());
  for (std::size_t u = 0; u < mean.size(); ++u) ASSERT_NEAR(r.params[u], mean[u], 1e-4) << u;
  const double start = static_cast<double>(r.params.size()) / 3;
  EXPECT_LT(r.history.back().consensus.value(), start / 3);
  const std::size_t d = r.params.size();
  const std::uint64_t message = internal::MakeCompressor("qsgd:4", d)->WireBytes(d);
  EXPECT_EQ(r.bytes_sent % message, 0u);
  EXPECT_GT(r.bytes_sent / (2 * message), 3000u);  // about one average per step
}

class AdpsgdStress : public ::testing::TestWithParam<int> {};

TEST_P(AdpsgdStress, ManyWorkersOnFewCoresFinishAndStayFinite) {
  const int workers = GetParam();
  const SyntheticSplit data = testing::SmallProblem();
  const TrainResult r = Train(data.train, nullptr,
                              {.algorithm = Algorithm::kAdpsgd, .l2 = kL2, .threads = workers,
                               .epochs = 4, .lr = 0.2f, .topology = "ring"});
  ASSERT_EQ(r.history.size(), 4u);
  for (const EvalPoint& p : r.history) EXPECT_TRUE(std::isfinite(p.objective)) << p.epoch;
  EXPECT_EQ(r.samples, 4u * 3000u);
  // Every average moves the model once each way; at most one average per step.
  const std::uint64_t per_average = 2 * r.params.size() * sizeof(float);
  EXPECT_EQ(r.bytes_sent % per_average, 0u);
  EXPECT_GT(r.bytes_sent, 0u);
  EXPECT_LE(r.bytes_sent / per_average, r.samples);
  EXPECT_LE(r.bytes_sent_max, r.bytes_sent);
}

INSTANTIATE_TEST_SUITE_P(Workers, AdpsgdStress, ::testing::Values(2, 3, 8, 16));

// The compressed exchange touches four buffers of the pair (two replicas, two public copies)
// under both flags: the same stress, for ThreadSanitizer to check those accesses.
class AdpsgdCompressedStress : public ::testing::TestWithParam<int> {};

TEST_P(AdpsgdCompressedStress, ManyWorkersOnFewCoresFinishAndStayFinite) {
  const int workers = GetParam();
  const SyntheticSplit data = testing::SmallProblem();
  const TrainResult r = Train(data.train, nullptr,
                              {.algorithm = Algorithm::kAdpsgd, .l2 = kL2, .threads = workers,
                               .epochs = 3, .lr = 0.2f, .compress = "qsgd:4",
                               .topology = "ring"});
  ASSERT_EQ(r.history.size(), 3u);
  for (const EvalPoint& p : r.history) EXPECT_TRUE(std::isfinite(p.objective)) << p.epoch;
  EXPECT_EQ(r.samples, 3u * 3000u);
  EXPECT_GT(r.bytes_sent, 0u);
}

INSTANTIATE_TEST_SUITE_P(Workers, AdpsgdCompressedStress, ::testing::Values(2, 8, 16));

struct GroupCase {
  int threads;
  int group_size;
};

std::string GroupName(const ::testing::TestParamInfo<GroupCase>& info) {
  return std::to_string(info.param.threads) + "threads_groups_of_" +
         std::to_string(info.param.group_size);
}

class HogwildPPConverges : public ::testing::TestWithParam<GroupCase> {};

TEST_P(HogwildPPConverges, ToTheFullBatchOptimum) {
  const GroupCase& c = GetParam();
  const SyntheticSplit data = testing::SmallProblem();
  const TrainResult r = Train(data.train, nullptr,
                              {.algorithm = Algorithm::kHogwildPP, .l2 = kL2, .threads = c.threads,
                               .epochs = 30, .seed = 5, .group_size = c.group_size});
  ASSERT_EQ(r.history.size(), 30u);
  ExpectOptimum(data, r, 0.01);
  ASSERT_TRUE(r.history.back().consensus.has_value());
  // The groups synchronised: each sync moves 2 d floats.
  const std::uint64_t per_sync = 2 * r.params.size() * sizeof(float);
  EXPECT_GT(r.bytes_sent, 0u);
  EXPECT_EQ(r.bytes_sent % per_sync, 0u);
}

INSTANTIATE_TEST_SUITE_P(Groups, HogwildPPConverges,
                         ::testing::Values(GroupCase{2, 1}, GroupCase{4, 2}, GroupCase{3, 1}),
                         GroupName);

// Many groups on few cores: the token must keep going round (a holder never waits for anyone),
// every worker finishes its epochs, and the replicas stay finite. Under ThreadSanitizer this is
// the race check of the token hand-off and the cross-group writes.
class HogwildPPStress : public ::testing::TestWithParam<GroupCase> {};

TEST_P(HogwildPPStress, ManyGroupsOnFewCoresFinishAndStayFinite) {
  const GroupCase& c = GetParam();
  const SyntheticSplit data = testing::SmallProblem();
  const TrainResult r = Train(data.train, nullptr,
                              {.algorithm = Algorithm::kHogwildPP, .l2 = kL2, .threads = c.threads,
                               .epochs = 3, .lr = 0.2f, .gossip_every = 2,
                               .group_size = c.group_size});
  ASSERT_EQ(r.history.size(), 3u);
  for (const EvalPoint& p : r.history) EXPECT_TRUE(std::isfinite(p.objective)) << p.epoch;
  EXPECT_EQ(r.samples, 3u * 3000u);
  EXPECT_GT(r.bytes_sent, 0u);  // the token went round
  EXPECT_TRUE(std::isfinite(r.history.back().consensus.value()));
}

INSTANTIATE_TEST_SUITE_P(Workers, HogwildPPStress,
                         ::testing::Values(GroupCase{2, 1}, GroupCase{3, 1}, GroupCase{8, 1},
                                           GroupCase{16, 1}, GroupCase{16, 4}),
                         GroupName);

TEST(HogwildPP, OneGroupIsHogwildBitForBit) {
  // One thread in one group: no ring, the same loop (fused linear) on the same shuffles.
  // hogwild++ runs the plain HOGWILD! loop inside a group (no hot head).
  const SyntheticSplit data = testing::SmallProblem();
  const TrainConfig plain{.algorithm = Algorithm::kHogwild, .l2 = kL2, .threads = 1, .epochs = 3,
                          .lr = 0.2f, .seed = 3, .hot_coords = 0};
  TrainConfig pp = plain;
  pp.algorithm = Algorithm::kHogwildPP;
  pp.group_size = 1;
  const TrainResult a = Train(data.train, nullptr, plain);
  const TrainResult b = Train(data.train, nullptr, pp);
  ASSERT_EQ(a.params.size(), b.params.size());
  for (std::size_t u = 0; u < a.params.size(); ++u) ASSERT_EQ(a.params[u], b.params[u]) << u;
  EXPECT_EQ(b.bytes_sent, 0u);
  EXPECT_EQ(b.history.back().consensus.value(), 0.0);
}

TEST(HogwildPP, RingConstantsSolveThePapersEquation) {
  for (int n = 1; n <= 16; ++n) {
    const double beta = internal::HogwildPPBeta(n);
    EXPECT_GT(beta, 0.0);
    EXPECT_LT(beta, 1.0);
    EXPECT_NEAR(std::pow(beta, n) + beta - 1, 0.0, 1e-12) << n;
  }
  EXPECT_NEAR(internal::HogwildPPBeta(2), (std::sqrt(5.0) - 1) / 2, 1e-12);  // the golden ratio
}

TEST(HogwildPP, GroupsBySizeByCacheDomainOrOnePerThread) {
  using V = std::vector<int>;
  EXPECT_EQ(ReplicaGroups(5, 2, {}), (V{0, 0, 1, 1, 2}));
  EXPECT_EQ(ReplicaGroups(4, 0, {1, 1, 0, 0}), (V{0, 0, 1, 1}));
  EXPECT_EQ(ReplicaGroups(3, 0, {0, 0, 0}), (V{0, 0, 0}));
  EXPECT_EQ(ReplicaGroups(3, 0, {0, -1, 0}), (V{0, 1, 2}));  // unknown: c = 1
  EXPECT_EQ(ReplicaGroups(4, 3, {0, 0, 1, 1}), (V{0, 0, 0, 1}));  // c wins
}

using testing::ThrowingModel;

template <typename Mode>
void ExpectWorkerFailure(TrainConfig config) {
  const SyntheticSplit data = testing::SmallProblem();
  std::atomic<int> calls{0};
  const ThrowingModel model(data.train, 2500, calls);
  config.epochs = 20;
  config.lr = 0.1f;
  bool searched = false;
  internal::RunPlan plan = internal::PlanRun(model, data.train, config, config.threads, 1, searched);
  try {
    internal::Coordinate<ThrowingModel, Mode>(model, nullptr, std::move(plan), searched, 1e-3f, {});
    FAIL() << "expected the worker's error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kWorkerFailed);
    EXPECT_NE(std::string(e.what()).find("boom in the model"), std::string::npos) << e.what();
  }
  EXPECT_LT(calls.load(), 20 * 3000 / 2);  // stopped soon after the failure
}

TEST(AsyncFailure, AdpsgdStopsAndReports) {
  ExpectWorkerFailure<internal::AdpsgdMode<ThrowingModel>>(
      {.algorithm = Algorithm::kAdpsgd, .threads = 8, .topology = "ring"});
}
TEST(AsyncFailure, HogwildPPStopsAndReports) {
  // 2 groups of 2 threads (ThrowingModel is no LinearModel: the generic loop, which calls
  // Gradient()).
  ExpectWorkerFailure<internal::HogwildPPMode<ThrowingModel>>(
      {.algorithm = Algorithm::kHogwildPP, .threads = 4, .group_size = 2});
}

TEST(AsyncStops, TimeLimitStopsEveryWorker) {
  const SyntheticSplit data = testing::SmallProblem();
  for (const Algorithm a : {Algorithm::kAdpsgd, Algorithm::kHogwildPP}) {
    const TrainResult r = Train(data.train, nullptr,
                                {.algorithm = a, .l2 = kL2, .threads = 6, .epochs = 1'000'000,
                                 .lr = 0.1f, .time_limit_s = 0.3, .group_size = 2});
    EXPECT_EQ(r.stop_reason, StopReason::kTimeLimit) << ToString(a);
    ASSERT_FALSE(r.history.empty());
    EXPECT_TRUE(std::isfinite(r.history.back().objective));
  }
}

TEST(AsyncConfig, BadValuesAreConfigErrors) {
  const SyntheticSplit data = testing::SmallProblem();
  const auto expect_bad = [&](const TrainConfig& config, const std::string& names) {
    try {
      Train(data.train, nullptr, config);
      FAIL() << "expected a config error naming " << names;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
      EXPECT_NE(std::string(e.what()).find(names), std::string::npos) << e.what();
    }
  };
  expect_bad({.algorithm = Algorithm::kAdpsgd, .threads = 4, .topology = "mesh"}, "mesh");
  expect_bad({.algorithm = Algorithm::kAdpsgd, .threads = 4, .compress = "topk:2"}, "topk:2");
  // Public copies already feed the error back: ef: on top diverges (choco too).
  expect_bad({.algorithm = Algorithm::kAdpsgd, .threads = 4, .compress = "ef:topk:0.1"},
             "error feedback on top");
  expect_bad({.algorithm = Algorithm::kChoco, .threads = 4, .compress = "ef:sign"},
             "Use the inner codec ('sign')");
  expect_bad({.algorithm = Algorithm::kAdpsgd, .threads = 4, .compress = "topk:0.1",
              .gamma = kGammaTheory},
             "--gamma theory");
  expect_bad({.algorithm = Algorithm::kHogwildPP, .threads = 4, .group_size = -1}, "--group-size");
  expect_bad({.algorithm = Algorithm::kAdpsgd, .threads = 4, .link = "latency=1ms"}, "--link");
  EXPECT_EQ(ParseAlgorithm("adpsgd"), Algorithm::kAdpsgd);
  EXPECT_EQ(ParseAlgorithm("hogwild++"), Algorithm::kHogwildPP);
  EXPECT_EQ(ToString(Algorithm::kHogwildPP), "hogwild++");
}

}  // namespace
}  // namespace corral
