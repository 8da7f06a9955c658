// HOGWILD! end to end: convergence to the optimum found by a full-batch solver, bit-for-bit
// reproducibility with one thread, oversubscribed workers, and the a9a target.
#include <cmath>
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

class HogwildConverges : public ::testing::TestWithParam<int> {};

TEST_P(HogwildConverges, ToTheFullBatchOptimum) {
  const SyntheticSplit data = testing::SmallProblem();
  const double optimum = OptimalObjective(data.train, 1e-2);
  const TrainResult r = Train(data.train, &data.test, Config(GetParam(), 30));
  ASSERT_EQ(r.history.size(), 30u);
  const double reached = r.history.back().objective;
  EXPECT_GE(reached, optimum - 1e-6);  // nobody beats the optimum
  EXPECT_LE(reached, optimum * 1.01) << "optimum " << optimum;
  // The engine's objective agrees with an independent double-precision computation.
  std::vector<double> w(r.params.begin(), r.params.end());
  EXPECT_NEAR(Objective(data.train, w, 1e-2), reached, 1e-5);
  EXPECT_EQ(r.samples, 30u * data.train.rows());
}

// 1 and 2 workers, and 8 workers on however few cores (oversubscribed: correctness only).
INSTANTIATE_TEST_SUITE_P(Workers, HogwildConverges, ::testing::Values(1, 2, 8));

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
    EXPECT_NE(std::string(e.what()).find("diverged at epoch 1"), std::string::npos) << e.what();
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
