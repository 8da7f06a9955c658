// --optimizer adagrad under hogwild: convergence to the full-batch optimum, bit-for-bit runs at
// one thread, racing workers, and the refusals naming --optimizer.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <corral/corral.h>

#include "logistic_oracle.h"
#include "test_data.h"

namespace corral {
namespace {

TrainConfig AdaGrad(int threads, int epochs) {
  return {.l2 = 1e-2f, .threads = threads, .epochs = epochs, .lr = 0.5f,
          .optimizer = Optimizer::kAdaGrad, .lr_decay = 1.0f, .seed = 3};
}

// The full-batch optimum of testing::SmallProblem() at l2 1e-2, computed once.
double Optimum() {
  static const double optimum = testing::OptimalObjective(testing::SmallProblem().train, 1e-2);
  return optimum;
}

TEST(AdaGrad, OneThreadReachesTheFullBatchOptimum) {
  const SyntheticSplit data = testing::SmallProblem();
  const double optimum = Optimum();
  const TrainResult r = Train(data.train, nullptr, AdaGrad(1, 20));
  const double reached = r.history.back().objective;
  EXPECT_GE(reached, optimum - 1e-6);
  EXPECT_LE(reached, optimum * 1.01) << "optimum " << optimum;
  // It is not plain SGD's run at the same step.
  TrainConfig sgd = AdaGrad(1, 20);
  sgd.optimizer = Optimizer::kSgd;
  EXPECT_NE(Train(data.train, nullptr, sgd).params, r.params);
}

TEST(AdaGrad, OneThreadRepeatsBitForBitForASeed) {
  const SyntheticSplit data = testing::SmallProblem();
  const TrainResult a = Train(data.train, nullptr, AdaGrad(1, 2));
  const TrainResult b = Train(data.train, nullptr, AdaGrad(1, 2));
  EXPECT_EQ(a.params, b.params);
  TrainConfig other = AdaGrad(1, 2);
  other.seed = 4;
  EXPECT_NE(Train(data.train, nullptr, other).params, a.params);
}

// Four workers race on the weights and the accumulators (relaxed loads and stores, lost
// updates allowed): the run still converges near the optimum. Runs under ThreadSanitizer.
TEST(AdaGrad, FourRacingWorkersConverge) {
  const SyntheticSplit data = testing::SmallProblem();
  const double optimum = Optimum();
  const TrainResult r = Train(data.train, nullptr, AdaGrad(4, 10));
  EXPECT_EQ(r.threads, 4);
  EXPECT_LE(r.history.back().objective, optimum * 1.03) << "optimum " << optimum;
}

void ExpectRefused(TrainConfig config, const std::string& why) {
  const SyntheticSplit data = testing::SmallProblem();
  config.threads = 1;
  config.epochs = 1;
  try {
    Train(data.train, nullptr, config);
    ADD_FAILURE() << "trained";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("--optimizer adagrad"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr(why));
  }
}

TEST(AdaGrad, OtherModesModelsAndBatchesAreRefused) {
  for (const Algorithm a : {Algorithm::kLocked, Algorithm::kBuckwild, Algorithm::kSync,
                            Algorithm::kDpsgd, Algorithm::kHogwildPP}) {
    TrainConfig c = AdaGrad(1, 1);
    c.algorithm = a;
    ExpectRefused(c, "not --algo " + std::string(ToString(a)));
  }
  TrainConfig softmax = AdaGrad(1, 1);
  softmax.model = ModelKind::kSoftmax;
  ExpectRefused(softmax, "not --model softmax");
  TrainConfig batched = AdaGrad(1, 1);
  batched.batch = 4;
  ExpectRefused(batched, "not --batch 4");
  TrainConfig seeded = AdaGrad(1, 1);
  seeded.seeded_tau = 2;
  ExpectRefused(seeded, "not --schedule seeded:2");
  EXPECT_EQ(ParseOptimizer("adagrad"), Optimizer::kAdaGrad);
  EXPECT_EQ(ToString(Optimizer::kSgd), "sgd");
  EXPECT_THROW(ParseOptimizer("adam"), Error);
}

}  // namespace
}  // namespace corral
