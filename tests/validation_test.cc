// Validation and early stopping (TrainConfig::validation, early_stop, metric) and the ROC AUC:
// a long run stops once the validation metric has not improved for N epochs and returns the
// best epoch's model (evaluated again from the saved file), the held-out split is seeded and
// disjoint from the training rows, and RocAuc matches values computed by hand.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <corral/corral.h>
#include <corral/predict.h>
#include <corral/synthetic.h>

namespace {

corral::SyntheticSplit Problem() {
  return corral::MakeSyntheticClassification(
      {.rows = 4000, .features = 400, .nnz_per_row = 10, .label_noise = 0.1, .seed = 11}, 2000);
}

std::string ErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const corral::Error& e) {
    EXPECT_TRUE(e.IsUsageError()) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no corral::Error thrown";
  return "";
}

TEST(RocAuc, MatchesHandComputedValues) {
  // Positives 0.35 and 0.8 against negatives 0.1 and 0.4: 3 of the 4 pairs ordered right.
  const std::vector<float> scores = {0.1f, 0.4f, 0.35f, 0.8f};
  const std::vector<float> labels = {-1, -1, 1, 1};
  EXPECT_DOUBLE_EQ(corral::RocAuc(scores, labels), 0.75);
  // A tie between a positive and a negative counts half: (0.5 + 1 + 1 + 1) / 4. 0/1 labels.
  const std::vector<float> tied = {0.5f, 0.5f, 0.2f, 0.9f};
  const std::vector<float> zero_one = {1, 0, 0, 1};
  EXPECT_DOUBLE_EQ(corral::RocAuc(tied, zero_one), 0.875);
  // Negated scores reverse every pair: 1 - 0.75.
  const std::vector<float> negated = {-0.1f, -0.4f, -0.35f, -0.8f};
  EXPECT_DOUBLE_EQ(corral::RocAuc(negated, labels), 0.25);
  // One class only: undefined.
  const std::vector<float> positives = {1, 1, 1, 1};
  EXPECT_TRUE(std::isnan(corral::RocAuc(scores, positives)));
}

TEST(RocAuc, EvalReportsItForBinaryModelsOnly) {
  const corral::SyntheticSplit data = Problem();
  const corral::TrainResult r = corral::Train(
      data.train, nullptr, {.threads = 1, .epochs = 2, .lr = 0.1f, .seed = 3});
  const corral::SavedModel saved = corral::ToSavedModel(r);
  const corral::Evaluation e = corral::EvaluateModel(saved, data.test);
  ASSERT_TRUE(e.auc);
  const corral::Predictions p = corral::PredictModel(saved, data.test);
  EXPECT_DOUBLE_EQ(*e.auc, corral::RocAuc(p.values, data.test.labels()));
  EXPECT_GT(*e.auc, 0.8);  // the planted model is learnable: far above chance
}

// A run far longer than it needs, with a constant step large enough to wander: it stops early,
// and the model it returns (and saves) is the best epoch's.
TEST(EarlyStop, StopsAndReturnsTheBestEpochsModel) {
  const corral::SyntheticSplit data = Problem();
  const corral::TrainConfig config{.threads = 1, .epochs = 200, .lr = 2.0f, .lr_decay = 1.0f,
                                   .seed = 5, .validation = "0.1", .early_stop = 3};
  const corral::TrainResult r = corral::Train(data.train, &data.test, config);
  ASSERT_EQ(r.stop_reason, corral::StopReason::kEarlyStop);
  ASSERT_LT(r.history.size(), 200u);
  ASSERT_TRUE(r.best_epoch);
  // The best epoch is the first with the lowest validation loss, 3 epochs before the end.
  const auto best = std::min_element(r.history.begin(), r.history.end(), [](const auto& a, const auto& b) {
    return *a.validation_loss < *b.validation_loss;
  });
  EXPECT_EQ(*r.best_epoch, best->epoch);
  EXPECT_EQ(r.history.back().epoch, best->epoch + 3);
  EXPECT_EQ(corral::ResultPoint(r), &*best);  // what the summaries report
  // Saved and loaded again, the model scores on the test set what the best epoch scored.
  const std::string path = (std::filesystem::path(testing::TempDir()) / "early_stop.model").string();
  corral::SaveModel(path, corral::ToSavedModel(r));
  const corral::Evaluation e = corral::EvaluateModel(corral::LoadModel(path), data.test);
  std::filesystem::remove(path);
  EXPECT_DOUBLE_EQ(e.loss, *best->test_loss);
  EXPECT_DOUBLE_EQ(*e.accuracy, *best->test_acc);
  EXPECT_NE(e.loss, *r.history.back().test_loss);  // not the last epoch's
}

TEST(EarlyStop, HigherIsBetterForAccuracyAndAuc) {
  const corral::SyntheticSplit data = Problem();
  for (const corral::Metric metric : {corral::Metric::kAccuracy, corral::Metric::kAuc}) {
    const corral::TrainConfig config{.threads = 1, .epochs = 200, .lr = 2.0f, .lr_decay = 1.0f,
                                     .seed = 5, .validation = "0.1", .early_stop = 2, .metric = metric};
    const corral::TrainResult r = corral::Train(data.train, nullptr, config);
    ASSERT_TRUE(r.best_epoch);
    const auto value = [metric](const corral::EvalPoint& p) {
      return metric == corral::Metric::kAuc ? *p.validation_auc : *p.validation_acc;
    };
    const auto best = std::max_element(r.history.begin(), r.history.end(),
                                       [&](const auto& a, const auto& b) { return value(a) < value(b); });
    EXPECT_EQ(*r.best_epoch, best->epoch) << corral::ToString(metric);
  }
}

// The held-out rows are seeded (the same split for the same seed) and not trained on: the
// run sees rows - round(0.25 rows) samples per epoch.
TEST(Validation, FractionHoldsOutSeededRows) {
  const corral::SyntheticSplit data = Problem();
  const corral::TrainConfig config{.threads = 1, .epochs = 1, .lr = 0.1f, .seed = 9, .validation = "0.25"};
  const corral::TrainResult a = corral::Train(data.train, nullptr, config);
  const corral::TrainResult b = corral::Train(data.train, nullptr, config);
  EXPECT_EQ(a.samples, 3000u);
  EXPECT_EQ(a.history[0].validation_loss, b.history[0].validation_loss);
  EXPECT_EQ(a.params, b.params);
  corral::TrainConfig other = config;
  other.seed = 10;
  EXPECT_NE(corral::Train(data.train, nullptr, other).history[0].validation_loss,
            a.history[0].validation_loss);
}

TEST(Validation, BadSettingsNameTheFlag) {
  const corral::SyntheticSplit data = Problem();
  const auto train = [&](corral::TrainConfig c) {
    c.threads = 1;
    corral::Train(data.train, nullptr, c);
  };
  EXPECT_NE(ErrorOf([&] { train({.early_stop = 3}); }).find("--early-stop watches a validation set"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { train({.validation = "1.5"}); }).find("--validation 1.5"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { train({.validation = "absent.svm"}); }).find("absent.svm"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { train({.model = corral::ModelKind::kSquared, .metric = corral::Metric::kAuc}); })
                .find("--metric auc does not apply to the squared model"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { train({.validation = "0.00001"}); }).find("holds out 0"), std::string::npos);
}

}  // namespace
