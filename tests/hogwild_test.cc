// HOGWILD! end to end: convergence to the optimum found by a full-batch solver (with and without
// the hot head), bit-for-bit reproducibility with one thread, oversubscribed workers, and the a9a
// target.
#include <algorithm>
#include <bit>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include <corral/corral.h>

#include "logistic_oracle.h"
#include "test_data.h"

namespace corral {
namespace {

using testing::Objective;
using testing::OptimalObjective;

TrainConfig Config(int threads, int epochs) {
  return {.l2 = 1e-2f, .threads = threads, .epochs = epochs, .seed = 11, .pin = Pin::kCompact};
}

// (workers, hot_coords): the hot head automatic, off (the plain HOGWILD! loop), and a head of
// 16 coordinates all synced every 16 samples (many syncs racing with the tail's updates).
class HogwildConverges : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(HogwildConverges, ToTheFullBatchOptimum) {
  const auto [threads, hot] = GetParam();
  const SyntheticSplit data = testing::SmallProblem();
  const double optimum = OptimalObjective(data.train, 1e-2);
  TrainConfig config = Config(threads, 30);
  config.hot_coords = hot;
  config.hot_sync = hot > 0 ? 1 : 0;  // every coordinate synced every 16 samples
  const TrainResult r = Train(data.train, &data.test, config);
  ASSERT_EQ(r.history.size(), 30u);
  const double reached = r.history.back().objective;
  EXPECT_GE(reached, optimum - 1e-6);  // nobody beats the optimum
  EXPECT_LE(reached, optimum * 1.01) << "optimum " << optimum;
  // The engine's objective agrees with an independent double-precision computation.
  std::vector<double> w(r.params.begin(), r.params.end());
  EXPECT_NEAR(Objective(data.train, w, 1e-2), reached, 1e-5);
  EXPECT_EQ(r.samples, 30u * data.train.rows());
  if (hot > 0) {
    EXPECT_EQ(r.hot_coords, hot);
  } else if (hot == 0) {
    EXPECT_EQ(r.hot_coords, 0);
  }
}

// 1 and 2 workers, and 8 workers on however few cores (oversubscribed: correctness only); the
// small head with frequent syncs only where syncs race (the one-thread head is compared with
// the plain loop below).
INSTANTIATE_TEST_SUITE_P(Workers, HogwildConverges,
                         ::testing::Values(std::tuple(1, -1), std::tuple(2, -1), std::tuple(8, -1),
                                           std::tuple(1, 0), std::tuple(2, 0), std::tuple(8, 0),
                                           std::tuple(2, 16), std::tuple(8, 16)),
                         [](const auto& test) {
                           const int hot = std::get<1>(test.param);
                           return std::to_string(std::get<0>(test.param)) + "_threads_hot_" +
                                  (hot < 0 ? std::string("auto") : std::to_string(hot));
                         });

TEST(Hogwild, HotHeadIsChosenOnlyWhereItCanHelp) {
  const SyntheticSplit data = testing::SmallProblem();
  // 3,000 rows: automatic takes the coordinates in >= 5 rows (1/512), at most 1,024.
  const TrainResult automatic = Train(data.train, nullptr, Config(2, 1));
  EXPECT_GT(automatic.hot_coords, 0);
  EXPECT_LE(automatic.hot_coords, 300);
  // Automatic syncs: 32 x the head's entries per row, a power of 2 (hot_head_test.cc has the rule).
  EXPECT_GE(automatic.hot_sync, 32);
  EXPECT_EQ(std::popcount(static_cast<unsigned>(automatic.hot_sync)), 1) << automatic.hot_sync;
  TrainConfig batched = Config(2, 1);
  batched.batch = 4;  // the generic loop: no head
  EXPECT_EQ(Train(data.train, nullptr, batched).hot_coords, 0);
  TrainConfig locked = Config(2, 1);
  locked.algorithm = Algorithm::kLocked;
  EXPECT_EQ(Train(data.train, nullptr, locked).hot_coords, 0);
  // Dense data: every sample touches every coordinate, a private head would be the whole model.
  const Dataset dense = Dataset::Dense(std::vector<float>(40, 0.5f), std::vector<float>(10, 1.0f), 4);
  EXPECT_EQ(Train(dense, nullptr, Config(2, 1)).hot_coords, 0);
  TrainConfig bad = Config(2, 1);
  bad.hot_coords = -2;
  EXPECT_THROW(Train(data.train, nullptr, bad), Error);
  bad = Config(2, 1);
  bad.hot_sync = -1;
  EXPECT_THROW(Train(data.train, nullptr, bad), Error);
}

// With one thread the head changes only the order of the margin's sum: the same model up to
// float rounding, every coordinate.
TEST(Hogwild, OneThreadHotHeadMatchesThePlainLoop) {
  const SyntheticSplit data = testing::SmallProblem();
  TrainConfig config = Config(1, 3);
  config.lr = 0.25f;
  config.hot_sync = 5;
  const TrainResult hot = Train(data.train, nullptr, config);
  config.hot_coords = 0;
  const TrainResult plain = Train(data.train, nullptr, config);
  ASSERT_GT(hot.hot_coords, 0);
  ASSERT_EQ(hot.params.size(), plain.params.size());
  double largest = 0;
  for (const float v : plain.params) largest = std::max(largest, std::abs(static_cast<double>(v)));
  for (std::size_t u = 0; u < plain.params.size(); ++u) {
    EXPECT_NEAR(hot.params[u], plain.params[u], 1e-5 * largest) << u;
  }
}

TEST(Hogwild, OneThreadIsBitForBitReproducible) {
  const SyntheticSplit data = testing::SmallProblem();
  const TrainResult a = Train(data.train, nullptr, Config(1, 3));
  const TrainResult b = Train(data.train, nullptr, Config(1, 3));
  EXPECT_EQ(a.params, b.params);
  EXPECT_EQ(a.lr, b.lr);
  TrainConfig other = Config(1, 3);
  other.seed = 12;
  const TrainResult c = Train(data.train, nullptr, other);
  EXPECT_NE(a.params, c.params) << "the seed must change the visiting order";
}

TEST(Hogwild, StepSizeSearchIsUsedOnlyWithoutLr) {
  const SyntheticSplit data = testing::SmallProblem();
  TrainConfig config = Config(1, 1);
  const TrainResult searched = Train(data.train, nullptr, config);
  EXPECT_TRUE(searched.lr_searched);
  EXPECT_GT(searched.lr, 0.0f);
  config.lr = 0.25f;
  const TrainResult given = Train(data.train, nullptr, config);
  EXPECT_FALSE(given.lr_searched);
  EXPECT_EQ(given.lr, 0.25f);
}

TEST(Hogwild, ObserverCanStopEarly) {
  const SyntheticSplit data = testing::SmallProblem();
  TrainObserver observer;
  observer.on_eval = [](const EvalPoint& p) { return p.epoch < 2; };
  const TrainResult r = Train(data.train, nullptr, Config(2, 10), observer);
  EXPECT_EQ(r.history.size(), 2u);
}

// The epoch named in "... diverged at epoch N: ...".
int EpochNamedIn(const std::string& message) {
  const std::size_t at = message.find("at epoch ");
  return at == std::string::npos ? -1 : std::stoi(message.substr(at + 9));
}

TEST(Hogwild, DivergenceIsAnError) {
  // Values so large that the first step overflows the margin: the loss becomes +inf.
  const Dataset huge({0, 1, 3}, {0, 0, 1}, {1e30f, 1e30f, 1.0f}, {1.0f, -1.0f}, 2, "huge");
  TrainConfig config = Config(2, 3);
  config.lr = 1.0f;
  try {
    Train(huge, nullptr, config);
    FAIL() << "expected divergence";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDiverged);
    // Epoch 1 or 2: with the hot head each worker's first step stays private until the epoch's
    // sync, and the sum of two huge finite steps overflows only in the next epoch.
    EXPECT_NE(std::string(e.what()).find("diverged at epoch "), std::string::npos) << e.what();
    EXPECT_LE(EpochNamedIn(e.what()), 2) << e.what();
  }
}

TEST(Hogwild, InvalidConfigIsRejected) {
  const SyntheticSplit data = testing::SmallProblem();
  EXPECT_THROW(Train(data.train, nullptr, {.epochs = 0}), Error);
  EXPECT_THROW(Train(data.train, nullptr, {.lr_decay = 1.5f}), Error);
  EXPECT_THROW(Train(data.train, nullptr, {.threads = -1}), Error);
  EXPECT_THROW(ParseAlgorithm("nope"), Error);
}

// DEVELOPERS.md's acceptance run: a9a, 2 threads, 20 epochs, no --lr.
TEST(Hogwild, A9aReachesLiblinearsObjective) {
  const auto dir = testing::SharedDataDir();
  if (dir.empty()) GTEST_SKIP() << "../shared/data not present";
  const Dataset train = ReadLibsvm((dir / "a9a" / "a9a").string());
  const Dataset test = ReadLibsvm((dir / "a9a" / "a9a.t").string(), {.num_features = 123});
  const TrainResult r = Train(train, &test, {.l2 = 3.0712e-5f, .threads = 2, .epochs = 20});
  // LIBLINEAR's optimum for C=1 is 0.32338 (10529.6 / 32561).
  EXPECT_LE(r.history.back().objective, 0.3266);
  EXPECT_GE(r.history.back().objective, 0.3233);
  EXPECT_GE(*r.history.back().test_acc, 0.848);
}

}  // namespace
}  // namespace corral
