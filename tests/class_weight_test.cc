// --class-weight: weighted gradients against finite differences, "balanced" computed exactly,
// weights of 1 bit for bit the unweighted run, and every bad spelling refused.
#include <cmath>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <corral/corral.h>

#include "gradient_check.h"
#include "test_data.h"

namespace corral {
namespace {

std::vector<float> RandomParams(std::size_t n, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> w(n);
  for (float& v : w) v = rng.UniformFloat() - 0.5f;
  return w;
}

// Rows with labels `labels` (one per row), each with two random features of 6.
Dataset Labelled(const std::vector<float>& labels, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<std::uint64_t> row_ptr{0};
  std::vector<std::uint32_t> index;
  std::vector<float> value;
  for (std::size_t r = 0; r < labels.size(); ++r) {
    const auto u = static_cast<std::uint32_t>(r % 3);
    index.insert(index.end(), {u, u + 3});
    value.insert(value.end(), {rng.UniformFloat() + 0.5f, rng.UniformFloat() - 0.5f});
    row_ptr.push_back(index.size());
  }
  return Dataset(row_ptr, index, value, labels, 6, "labelled");
}

TEST(ClassWeight, WeightedGradientsMatchFiniteDifferences) {
  const SyntheticSplit data = testing::SmallProblem();
  const std::vector<float> weights = {0.3f, 4.0f};
  const LogisticModel logistic(data.train, 0.01f, weights);
  const std::vector<float> w = RandomParams(logistic.NumParams(), 3);
  testing::ExpectGradientMatches(logistic, w, data.train, {0});
  testing::ExpectGradientMatches(logistic, w, data.train, {1, 2, 3, 4, 5, 6, 7, 8});
  const HingeModel hinge(data.train, 0.01f, weights);
  for (std::uint32_t r = 9; r < 20; ++r) {
    // The hinge has a kink at margin 1: rows near it are skipped.
    const float m = hinge.Margin(std::span<const float>(w), data.train.Row(r));
    if (std::abs(1.0f - BinarySign(data.train.Label(r)) * m) < 0.1f) continue;
    testing::ExpectGradientMatches(hinge, w, data.train, {r});
  }

  const Dataset three = Labelled({1, 2, 5, 1, 2, 5, 5, 5}, 4);
  const SoftmaxModel softmax(three, 0.02f, Bias::kLearned, std::vector<float>{0.5f, 2.0f, 3.0f});
  const std::vector<float> ws = RandomParams(softmax.NumParams(), 5);
  for (std::uint32_t r = 0; r < 3; ++r) testing::ExpectGradientMatches(softmax, ws, three, {r});
  testing::ExpectGradientMatches(softmax, ws, three, {0, 1, 2, 3, 4, 5, 6, 7});
}

TEST(ClassWeight, ScalesARowsDataGradientByItsClassWeight) {
  const SyntheticSplit data = testing::SmallProblem();
  const LogisticModel plain(data.train, 0.01f);
  const LogisticModel weighted(data.train, 0.01f, std::vector<float>{0.25f, 3.0f});
  std::vector<float> w = RandomParams(plain.NumParams(), 6);
  SparseGrad a = plain.MakeGrad(data.train, 1), b = weighted.MakeGrad(data.train, 1);
  LogisticModel::Workspace ws;
  for (std::uint32_t r = 0; r < 20; ++r) {
    plain.Gradient(Params(w), data.train, std::span(&r, 1), a, ws);
    weighted.Gradient(Params(w), data.train, std::span(&r, 1), b, ws);
    const float c = data.train.Label(r) > 0 ? 3.0f : 0.25f;
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
      EXPECT_FLOAT_EQ(b.grad(k), c * a.grad(k));
      EXPECT_EQ(b.l2(k), a.l2(k));  // the regulariser is not weighted
    }
  }
}

// The reported objective at the returned parameters, against the unweighted model's per-row
// losses times the expected "balanced" weights n / (k * n_c).
template <typename M>
void ExpectBalancedObjective(const TrainResult& r, const M& unweighted, const Dataset& data,
                             const std::vector<std::pair<float, double>>& expected) {
  double loss = 0;
  for (std::size_t row = 0; row < data.rows(); ++row) {
    double c = -1;
    for (const auto& [label, weight] : expected) {
      if ((std::is_same_v<M, SoftmaxModel> ? data.Label(row) == label
                                            : (data.Label(row) > 0) == (label > 0))) {
        c = weight;
      }
    }
    ASSERT_GT(c, 0) << "row " << row;
    loss += c * unweighted.Evaluate(r.params, data, row, row + 1).loss;
  }
  const double objective = loss / static_cast<double>(data.rows()) + unweighted.Regularizer(r.params);
  EXPECT_NEAR(r.history.back().objective, objective, 1e-6 * objective);
}

TEST(ClassWeight, BalancedIsRowsOverClassesTimesClassRows) {
  // 8 negatives, 2 positives: 10 / (2 * 8) = 0.625 and 10 / (2 * 2) = 2.5.
  const Dataset binary = Labelled({-1, -1, 1, -1, -1, -1, 1, -1, -1, -1}, 7);
  const TrainConfig config{.threads = 1, .epochs = 2, .lr = 0.5f, .class_weight = {.balanced = true}};
  const TrainResult r = Train(binary, nullptr, config);
  ExpectBalancedObjective(r, LogisticModel(binary, r.l2), binary, {{-1, 0.625}, {1, 2.5}});

  // Classes 1, 2, 5 with 5, 3 and 2 rows: 10 / (3 * n_c).
  const Dataset three = Labelled({1, 2, 5, 1, 2, 5, 1, 2, 1, 1}, 8);
  TrainConfig softmax = config;
  softmax.model = ModelKind::kSoftmax;
  const TrainResult s = Train(three, nullptr, softmax);
  ExpectBalancedObjective(s, SoftmaxModel(three, s.l2), three,
                          {{1, 10.0 / 15}, {2, 10.0 / 9}, {5, 10.0 / 6}});
}

// Weights of 1 for every class take the unweighted run's steps bit for bit, on the fused
// linear loop (batch 1) and the generic one (batch 4) alike.
TEST(ClassWeight, WeightsOfOneAreTheUnweightedRunBitForBit) {
  const SyntheticSplit data = testing::SmallProblem();
  for (const ModelKind model : {ModelKind::kLogistic, ModelKind::kHinge}) {
    for (const int batch : {1, 4}) {
      TrainConfig plain{.model = model, .threads = 1, .epochs = 2, .batch = batch, .lr = 0.25f};
      TrainConfig ones = plain;
      ones.class_weight = ParseClassWeight("+1:1,-1:1");
      const TrainResult a = Train(data.train, nullptr, plain);
      const TrainResult b = Train(data.train, nullptr, ones);
      EXPECT_EQ(a.params, b.params) << ToString(model) << " batch " << batch;
      EXPECT_EQ(a.history.back().objective, b.history.back().objective);
    }
  }
  const Dataset three = Labelled({1, 2, 5, 1, 2, 5, 1, 2, 1, 1}, 8);
  TrainConfig plain{.model = ModelKind::kSoftmax, .threads = 1, .epochs = 2, .lr = 0.25f};
  TrainConfig ones = plain;
  ones.class_weight = ParseClassWeight("1:1,2:1,5:1");
  EXPECT_EQ(Train(three, nullptr, plain).params, Train(three, nullptr, ones).params);
}

TEST(ClassWeight, ParsesTheCliSpellings) {
  EXPECT_TRUE(ParseClassWeight("none").none());
  EXPECT_TRUE(ParseClassWeight("balanced").balanced);
  const ClassWeight w = ParseClassWeight("+1:5,-1:0.5,3:0");
  ASSERT_EQ(w.weights.size(), 3u);
  EXPECT_EQ(w.weights[0], std::make_pair(1.0f, 5.0f));
  EXPECT_EQ(w.weights[1], std::make_pair(-1.0f, 0.5f));
  EXPECT_EQ(w.weights[2], std::make_pair(3.0f, 0.0f));
  EXPECT_EQ(ClassWeightSpec(w), "1:5,-1:0.5,3:0");
  EXPECT_EQ(ClassWeightSpec(ParseClassWeight(ClassWeightSpec(w))), ClassWeightSpec(w));
}

void ExpectRefused(const std::string& spec, const std::string& why) {
  try {
    ParseClassWeight(spec);
    ADD_FAILURE() << "accepted " << spec;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("--class-weight '" + spec + "'"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr(why));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("expected none, balanced or LABEL:W"));
  }
}

TEST(ClassWeight, RefusesBadSpellings) {
  ExpectRefused("1", "has no ':'");
  ExpectRefused("1:2,", "'' has no ':'");
  ExpectRefused("x:2", "'x' is not a label");
  ExpectRefused("1:", "'' is not a weight");
  ExpectRefused("1:-2", "'-2' is not a weight");
  ExpectRefused("1:inf", "'inf' is not a weight");
  ExpectRefused("1:2,1:3", "label 1 is given twice");
  ExpectRefused("Balanced", "has no ':'");
}

void ExpectTrainRefused(const Dataset& data, const TrainConfig& config, const std::string& why) {
  try {
    Train(data, nullptr, config);
    ADD_FAILURE() << "trained";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
    EXPECT_THAT(e.what(), ::testing::HasSubstr(why));
  }
}

TEST(ClassWeight, RefusesModelsWithoutClassesAndLabelsWithoutAClass) {
  const Dataset binary = Labelled({-1, 1, -1, 1}, 9);
  const ClassWeight balanced{.balanced = true};
  for (const ModelKind model : {ModelKind::kSquared, ModelKind::kMf, ModelKind::kMlp}) {
    ExpectTrainRefused(binary, {.model = model, .threads = 1, .class_weight = balanced},
                       "--class-weight balanced applies to logistic, hinge and softmax, not the " +
                           std::string(ToString(model)) + " model");
  }
  ExpectTrainRefused(binary, {.threads = 1, .class_weight = ParseClassWeight("1:2,2:3")},
                     "label 2 names the same class as label 1");
  const Dataset three = Labelled({1, 2, 5, 1}, 10);
  ExpectTrainRefused(three,
                     {.model = ModelKind::kSoftmax, .threads = 1, .class_weight = ParseClassWeight("3:2")},
                     "label 3 is not a class of the training set");
}

}  // namespace
}  // namespace corral
