// MfModel: gradients against finite differences, unseen users and items, and recovery of a
// planted low-rank matrix.
#include <cmath>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include <corral/corral.h>

#include "gradient_check.h"
#include "test_data.h"

namespace corral {
namespace {

TEST(MfModel, GradientMatchesFiniteDifferences) {
  const Dataset data = testing::PlantedRatings(20, 15, 3, 300, 0.1, 1);
  const MfModel model(data, 3, 0.05f);
  ASSERT_EQ(model.NumParams(), (20u + 15u) * 4u);
  std::vector<float> w(model.NumParams());
  Rng rng(2);
  model.Init(std::span(w), rng);
  for (float& v : w) v += rng.UniformFloat() - 0.5f;  // biases away from zero too
  for (std::uint32_t r = 0; r < 10; ++r) testing::ExpectGradientMatches(model, w, data, {r});
  testing::ExpectGradientMatches(model, w, data, {20, 21, 22, 23});
}

TEST(MfModel, InitIsSeededAndBiasesStartAtZero) {
  const Dataset data = testing::PlantedRatings(5, 4, 2, 40, 0.1, 1);
  const MfModel model(data, 2, 0.0f);
  std::vector<float> a(model.NumParams()), b(model.NumParams()), c(model.NumParams());
  Rng ra(7), rb(7), rc(8);
  model.Init(std::span(a), ra);
  model.Init(std::span(b), rb);
  model.Init(std::span(c), rc);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (std::size_t j = 0; j < 9; ++j) EXPECT_EQ(a[j * 3 + 2], 0.0f) << "bias of block " << j;
}

// Var <p_u, q_i> over all pairs of Init's factors, against the train ratings' variance.
double InitDotVarianceRatio(const Dataset& data, int rank) {
  const MfModel model(data, rank, 0.0f);
  std::vector<float> w(model.NumParams());
  Rng rng(3);
  model.Init(std::span(w), rng);
  const auto k = static_cast<std::size_t>(rank);
  double sum = 0, sum_sq = 0, pairs = 0;
  for (std::size_t u = 0; u < model.users(); ++u) {
    for (std::size_t i = 0; i < model.items(); ++i) {
      double dot = 0;
      const std::size_t ub = u * (k + 1), ib = (model.users() + i) * (k + 1);
      for (std::size_t j = 0; j < k; ++j) dot += double{w[ub + j]} * w[ib + j];
      sum += dot;
      sum_sq += dot * dot;
      ++pairs;
    }
  }
  const double init_var = sum_sq / pairs - (sum / pairs) * (sum / pairs);
  double mean = 0, label_var = 0;
  for (const float y : data.labels()) mean += y;
  mean /= static_cast<double>(data.rows());
  for (const float y : data.labels()) label_var += (y - mean) * (y - mean);
  label_var /= static_cast<double>(data.rows());
  return init_var / label_var;
}

TEST(MfModel, InitSpreadMatchesTheRatingsVariance) {
  // Planted rank-r factors uniform in [-1, 1]: the ratings' variance is about r/9, so the two
  // sets differ 4x and a fixed init scale could not match both.
  const Dataset low = testing::PlantedRatings(120, 100, 2, 6000, 0.1, 1);
  const Dataset high = testing::PlantedRatings(120, 100, 8, 6000, 0.1, 2);
  EXPECT_NEAR(InitDotVarianceRatio(low, 2), 1.0, 0.25);
  EXPECT_NEAR(InitDotVarianceRatio(high, 8), 1.0, 0.25);
  EXPECT_GT(MfModel(high, 8, 0.0f).init_scale(), MfModel(low, 8, 0.0f).init_scale());
}

TEST(MfModel, WithoutBiasReportsNoBiasGradient) {
  const Dataset data = testing::PlantedRatings(20, 15, 3, 300, 0.1, 1);
  const MfModel model(data, 3, 0.05f, Bias::kNone);
  ASSERT_EQ(model.bias(), Bias::kNone);
  std::vector<float> w(model.NumParams());
  Rng rng(2);
  model.Init(std::span(w), rng);
  auto grad = model.MakeGrad(data, 4);
  auto ws = model.MakeWorkspace(4);
  std::vector<float> copy = w;
  const std::vector<std::uint32_t> rows{0, 1, 2, 3};
  model.Gradient(Params(copy), data, rows, grad, ws);
  ASSERT_EQ(grad.size(), 4u * 2 * 3);  // factors only
  for (std::size_t k = 0; k < grad.size(); ++k) EXPECT_NE(grad.index(k) % 4, 3u) << "a bias entry";
  for (std::uint32_t r = 0; r < 5; ++r) testing::ExpectGradientMatches(model, w, data, {r});
}

TEST(MfModel, RejectsNonRatingsData) {
  const Dataset plain({0, 1}, {0}, {1.0f}, {1.0f}, 1, "plain.svm");
  try {
    MfModel(plain, 4, 0.1f);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("plain.svm"), std::string::npos) << e.what();
  }
}

TEST(MfModel, UnseenUsersFallBackToTheMean) {
  const Dataset data = testing::PlantedRatings(5, 4, 2, 40, 0.1, 1);
  const MfModel model(data, 2, 0.0f);
  std::vector<float> w(model.NumParams(), 0.5f);
  // Unknown user and item: only the mean remains.
  EXPECT_FLOAT_EQ(model.Predict(w, 99, 99), model.mean());
  // Known item, unknown user: the mean plus the item's bias.
  EXPECT_FLOAT_EQ(model.Predict(w, 99, 1), model.mean() + 0.5f);
}

TEST(MfModel, HogwildRecoversAPlantedLowRankMatrix) {
  // 3,000 ratings of a 60 x 50 rank-3 matrix with noise sd 0.1: held-out RMSE near the noise.
  const Dataset all = testing::PlantedRatings(60, 50, 3, 3600, 0.1, 5);
  const Dataset train = all.Slice(0, 3000).WithRatings(all.ratings_shared());
  const Dataset test = all.Slice(3000, 3600).WithRatings(all.ratings_shared());
  const TrainResult r = Train(train, &test,
                              {.model = ModelKind::kMf, .l2 = 1e-4f, .threads = 2, .epochs = 60,
                               .rank = 3, .lr = 0.05f, .lr_decay = 0.97f, .seed = 3});
  ASSERT_TRUE(r.history.back().test_rmse.has_value());
  EXPECT_LT(*r.history.back().test_rmse, 0.25);
  EXPECT_LT(*r.history.back().train_rmse, 0.2);
}

TEST(MfModel, HogwildWithoutBiasRecoversThePlantedMatrixAndKeepsBiasesAtZero) {
  const Dataset all = testing::PlantedRatings(60, 50, 3, 3600, 0.1, 5);
  const Dataset train = all.Slice(0, 3000).WithRatings(all.ratings_shared());
  const Dataset test = all.Slice(3000, 3600).WithRatings(all.ratings_shared());
  const TrainResult r = Train(train, &test,
                              {.model = ModelKind::kMf, .l2 = 1e-4f, .threads = 2, .epochs = 60,
                               .rank = 3, .bias = false, .lr = 0.05f, .lr_decay = 0.97f,
                               .seed = 3});
  for (std::size_t j = 0; j < 60 + 50; ++j) EXPECT_EQ(r.params[j * 4 + 3], 0.0f) << "block " << j;
  EXPECT_LT(*r.history.back().test_rmse, 0.25);
}

}  // namespace
}  // namespace corral
