// SoftmaxModel: gradients against finite differences, class mapping, and convergence.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <corral/corral.h>

#include "gradient_check.h"
#include "test_data.h"

namespace corral {
namespace {

// 3 classes labelled 1, 2, 5 (so ids and labels differ): the class is the argmax of three
// planted linear scores.
Dataset ThreeClasses(std::size_t rows, std::uint64_t seed) {
  Rng rng(seed);
  constexpr std::uint32_t kFeatures = 12;
  std::vector<float> planted(3 * kFeatures);
  for (float& v : planted) v = rng.UniformFloat() * 2 - 1;
  std::vector<std::uint64_t> row_ptr{0};
  std::vector<std::uint32_t> index;
  std::vector<float> value, label;
  const float names[3] = {1, 2, 5};
  for (std::size_t r = 0; r < rows; ++r) {
    float score[3] = {0, 0, 0};
    for (std::uint32_t u = 0; u < kFeatures; ++u) {
      if (rng.UniformFloat() < 0.5f) continue;
      const float v = rng.UniformFloat();
      index.push_back(u);
      value.push_back(v);
      for (int c = 0; c < 3; ++c) score[c] += planted[c * kFeatures + u] * v;
    }
    row_ptr.push_back(index.size());
    const int best = static_cast<int>(std::max_element(score, score + 3) - score);
    label.push_back(names[best]);
  }
  return Dataset(row_ptr, index, value, label, kFeatures, "three-classes");
}

TEST(SoftmaxModel, GradientMatchesFiniteDifferences) {
  const Dataset data = ThreeClasses(200, 1);
  const SoftmaxModel model(data, 0.02f);
  ASSERT_EQ(model.classes().size(), 3u);
  ASSERT_EQ(model.NumParams(), 12u * 3 + 3);
  Rng rng(2);
  std::vector<float> w(model.NumParams());
  for (float& v : w) v = rng.UniformFloat() - 0.5f;
  for (std::uint32_t r = 0; r < 10; ++r) testing::ExpectGradientMatches(model, w, data, {r});
  testing::ExpectGradientMatches(model, w, data, {10, 11, 12, 13, 14, 15});
}

TEST(SoftmaxModel, WithoutBiasReportsNoBiasGradient) {
  const Dataset data = ThreeClasses(200, 1);
  const SoftmaxModel learned(data, 0.02f);
  const SoftmaxModel none(data, 0.02f, Bias::kNone);
  ASSERT_EQ(none.bias(), Bias::kNone);
  ASSERT_EQ(none.NumParams(), learned.NumParams());  // same layout: saved models load alike
  Rng rng(2);
  std::vector<float> w(none.NumParams());
  for (float& v : w) v = rng.UniformFloat() - 0.5f;
  const std::size_t first_bias = 12u * 3;
  const auto bias_entries = [&](const SoftmaxModel& model) {
    auto grad = model.MakeGrad(data, 4);
    auto ws = model.MakeWorkspace(4);
    std::vector<float> copy = w;
    const std::vector<std::uint32_t> rows{0, 1, 2, 3};
    model.Gradient(Params(copy), data, rows, grad, ws);
    int count = 0;
    for (std::size_t k = 0; k < grad.size(); ++k) count += grad.index(k) >= first_bias ? 1 : 0;
    return count;
  };
  EXPECT_EQ(bias_entries(learned), 4 * 3);
  EXPECT_EQ(bias_entries(none), 0);
  // The weights' gradient is unchanged.
  for (std::uint32_t r = 0; r < 5; ++r) testing::ExpectGradientMatches(none, w, data, {r});
}

TEST(SoftmaxModel, TrainWithoutBiasKeepsTheBiasesAtZero) {
  const Dataset train = ThreeClasses(600, 4);
  const TrainResult r = Train(train, nullptr,
                              {.model = ModelKind::kSoftmax, .l2 = 1e-3f, .threads = 1,
                               .epochs = 5, .bias = false, .lr = 0.5f});
  ASSERT_EQ(r.params.size(), 12u * 3 + 3);
  for (std::size_t c = 0; c < 3; ++c) EXPECT_EQ(r.params[12 * 3 + c], 0.0f) << "class " << c;
  EXPECT_GT(*r.history.back().train_acc, 0.8);
}

TEST(SoftmaxModel, NoBiasIsRejectedForModelsWithoutThatChoice) {
  const Dataset train = ThreeClasses(50, 4);
  for (const ModelKind kind : {ModelKind::kLogistic, ModelKind::kMlp}) {
    try {
      Train(train, nullptr, {.model = kind, .threads = 1, .epochs = 1, .bias = false});
      FAIL() << "expected an error for " << ToString(kind);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
      EXPECT_NE(std::string(e.what()).find("--no-bias"), std::string::npos) << e.what();
    }
  }
}

TEST(SoftmaxModel, ClassMapUsesSortedDistinctLabels) {
  const ClassMap map(std::vector<float>{5, 1, 2, 5, 1});
  ASSERT_EQ(map.size(), 3u);
  EXPECT_EQ(map.Id(1), 0);
  EXPECT_EQ(map.Id(2), 1);
  EXPECT_EQ(map.Id(5), 2);
  EXPECT_EQ(map.Id(3), -1);
  EXPECT_EQ(map.Label(2), 5.0f);
}

TEST(SoftmaxModel, SerialSgdLearnsThePlantedClasses) {
  const Dataset train = ThreeClasses(3000, 3);
  const Dataset test = ThreeClasses(1000, 3).Slice(0, 1000);
  const SoftmaxModel model(train, 1e-4f);
  std::vector<float> storage(model.NumParams());
  const Params w(storage);
  auto grad = model.MakeGrad(train, 1);
  auto ws = model.MakeWorkspace(1);
  for (int epoch = 0; epoch < 20; ++epoch) {
    for (std::uint32_t r = 0; r < train.rows(); ++r) {
      model.Gradient(w, train, std::span(&r, 1), grad, ws);
      ApplyStep(w, grad, 0.5f * std::pow(0.85f, static_cast<float>(epoch)));
    }
  }
  const EvalSums s = model.Evaluate(storage, train, 0, train.rows());
  EXPECT_GT(s.correct / s.rows, 0.93);
  // Predict agrees with Evaluate's argmax.
  double agree = 0;
  for (std::size_t r = 0; r < 200; ++r) {
    agree += model.Predict(storage, train.Row(r)) == train.Label(r) ? 1 : 0;
  }
  EXPECT_NEAR(agree / 200, model.Evaluate(storage, train, 0, 200).correct / 200, 1e-12);
}

TEST(SoftmaxModel, NeedsTwoClasses) {
  const Dataset one({0, 1}, {0}, {1.0f}, {3.0f}, 1, "one-class");
  EXPECT_THROW(SoftmaxModel(one, 0.1f), Error);
}

}  // namespace
}  // namespace corral
