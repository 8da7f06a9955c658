// --eval-every: which epochs end with an evaluation point (auto: every epoch when something
// watches them, else the last only), the same parameters whatever the cadence, and its parser.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <corral/corral.h>

#include "test_data.h"

namespace corral {
namespace {

TrainConfig EvalConfig(int epochs, int eval_every) {
  return {.threads = 1, .epochs = epochs, .seed = 5, .eval_every = eval_every};
}

std::vector<int> Epochs(const TrainResult& r) {
  std::vector<int> epochs;
  for (const EvalPoint& p : r.history) epochs.push_back(p.epoch);
  return epochs;
}

TEST(EvalEvery, AutoUnwatchedEvaluatesTheLastEpochOnlyWithTheSameModel) {
  const SyntheticSplit data = testing::SmallProblem();
  const TrainResult every = Train(data.train, nullptr, EvalConfig(4, 1));
  const TrainResult last = Train(data.train, nullptr, EvalConfig(4, kEvalAuto));
  EXPECT_EQ(Epochs(every), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(Epochs(last), (std::vector<int>{4}));
  EXPECT_EQ(last.params, every.params);  // bit for bit: evaluating never touches the model
  EXPECT_EQ(last.history.back().objective, every.history.back().objective);
  EXPECT_EQ(last.history.back().step, every.history.back().step);
  EXPECT_EQ(last.state.epochs_done, 4);
}

TEST(EvalEvery, EveryNEvaluatesItsMultiplesAndTheLastEpoch) {
  const SyntheticSplit data = testing::SmallProblem();
  const TrainResult every = Train(data.train, nullptr, EvalConfig(5, 1));
  const TrainResult second = Train(data.train, nullptr, EvalConfig(5, 2));
  ASSERT_EQ(Epochs(second), (std::vector<int>{2, 4, 5}));
  for (const EvalPoint& p : second.history) {
    EXPECT_EQ(p.objective, every.history[static_cast<std::size_t>(p.epoch - 1)].objective) << p.epoch;
  }
  EXPECT_EQ(second.params, every.params);
}

TEST(EvalEvery, AutoEvaluatesEveryEpochWhenWatched) {
  const SyntheticSplit data = testing::SmallProblem();
  // By a test set, by an observer (the CLI's per-epoch lines, Python callbacks), by a target.
  EXPECT_EQ(Train(data.train, &data.test, EvalConfig(3, kEvalAuto)).history.size(), 3u);
  int seen = 0;
  TrainObserver observer;
  observer.on_eval = [&seen](const EvalPoint&) { return ++seen > 0; };
  EXPECT_EQ(Train(data.train, nullptr, EvalConfig(3, kEvalAuto), observer).history.size(), 3u);
  EXPECT_EQ(seen, 3);
  TrainConfig target = EvalConfig(3, kEvalAuto);
  target.target_loss = -1.0;  // never reached
  EXPECT_EQ(Train(data.train, nullptr, target).history.size(), 3u);
}

TEST(EvalEvery, AStoppedRunEvaluatesTheEpochItStoppedAfter) {
  const SyntheticSplit data = testing::SmallProblem();
  TrainConfig config = EvalConfig(50, kEvalAuto);
  config.time_limit_s = 1e-9;  // cuts the first epoch short
  const TrainResult r = Train(data.train, nullptr, config);
  EXPECT_EQ(r.stop_reason, StopReason::kTimeLimit);
  ASSERT_EQ(r.history.size(), 1u);
  EXPECT_EQ(r.history.back().epoch, 1);
  EXPECT_TRUE(std::isfinite(r.history.back().objective));
}

// The message of the kDiverged error a run throws ("" when it does not diverge).
std::string DivergenceOf(const Dataset& data, const TrainConfig& config) {
  try {
    Train(data, nullptr, config);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kDiverged) return e.what();
    throw;
  }
  return "";
}

TEST(EvalEvery, ADivergenceIsCaughtAtTheNextEvaluation) {
  // Values so large that the first step overflows the margin: the loss is +inf from epoch 1
  // on (hogwild_test's set) while the model stays finite, so only an evaluation sees it.
  const Dataset huge({0, 1, 3}, {0, 0, 1}, {1e30f, 1e30f, 1.0f}, {1.0f, -1.0f}, 2, "huge");
  TrainConfig config = EvalConfig(6, 1);
  config.lr = 1.0f;
  EXPECT_NE(DivergenceOf(huge, config).find("diverged at epoch 1: the loss is not finite"),
            std::string::npos);
  config.eval_every = 4;
  EXPECT_NE(DivergenceOf(huge, config).find("diverged at epoch 4: the loss is not finite"),
            std::string::npos);
  config.eval_every = kEvalAuto;
  EXPECT_NE(DivergenceOf(huge, config).find("diverged at epoch 6: the loss is not finite"),
            std::string::npos);
}

TEST(EvalEvery, ParsesEpochsOrAutoAndNamesTheFlagOtherwise) {
  EXPECT_EQ(ParseEvalEvery("auto"), kEvalAuto);
  EXPECT_EQ(ParseEvalEvery("3"), 3);
  for (const char* bad : {"0", "-1", "2x", "", "every"}) {
    try {
      ParseEvalEvery(bad);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
      EXPECT_NE(std::string(e.what()).find("--eval-every '" + std::string(bad) + "'"), std::string::npos)
          << e.what();
    }
  }
  TrainConfig config;
  config.eval_every = -2;
  EXPECT_THROW(config.Validate(), Error);
}

}  // namespace
}  // namespace corral
