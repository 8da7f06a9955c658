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

}  // namespace
}  // namespace corral
