// Per-sample weights (Dataset::WithWeights, --weights): every model's weighted gradient against
// finite differences of its weighted loss; copies keep each row's weight; and every mode
// reaches the optimum the weights define, on a set whose weights undo half of its rows. That
// the weights travel with their rows through the epoch's re-layout, the hot head's split rows
// and windows, bit for bit against the in-place run, is tested with the rest of those in
// shuffle_test.cc.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <corral/corral.h>

#include "algorithm_names.h"
#include "gradient_check.h"
#include "logistic_oracle.h"
#include "test_data.h"

namespace corral {
namespace {

using testing::PlantedRatings;
using testing::SmallProblem;

// Weights in [0, 2), a few exactly 0.
std::vector<float> RandomRowWeights(std::size_t rows, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> w(rows);
  for (float& v : w) v = rng.Below(8) == 0 ? 0.0f : 2 * rng.UniformFloat();
  return w;
}

Dataset Weighted(const Dataset& data, std::uint64_t seed) {
  return data.WithWeights(RandomRowWeights(data.rows(), seed), "weights");
}

std::vector<float> RandomParams(std::size_t n, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> w(n);
  for (float& v : w) v = rng.UniformFloat() - 0.5f;
  return w;
}

// Rows of `features` uniform values in [-1, 1], labels from {1, 2, 5} at random.
Dataset ThreeClassDense(std::size_t rows, std::size_t features, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> values(rows * features), labels(rows);
  for (float& v : values) v = 2 * rng.UniformFloat() - 1;
  for (float& l : labels) l = std::vector<float>{1, 2, 5}[rng.Below(3)];
  return Dataset::Dense(std::move(values), std::move(labels), features, "three-classes");
}

TEST(SampleWeight, CopiesAndViewsKeepEachRowsWeight) {
  const Dataset data = Weighted(SmallProblem().train, 1);
  const std::vector<std::size_t> rows = {5, 2, 2, 900};
  const Dataset gathered = data.Gather(rows);
  for (std::size_t k = 0; k < rows.size(); ++k) EXPECT_EQ(gathered.Weight(k), data.Weight(rows[k]));
  const Dataset slice = data.Slice(10, 20), view = data.Rows(10, 20);
  for (std::size_t r = 0; r < 10; ++r) {
    EXPECT_EQ(slice.Weight(r), data.Weight(10 + r));
    EXPECT_EQ(view.Weight(r), data.Weight(10 + r));
  }
  const Dataset dense = ThreeClassDense(6, 3, 2).WithWeights({1, 2, 3, 4, 5, 6}, "w");
  const Dataset wide = dense.WithNumFeatures(5);
  EXPECT_EQ(std::vector<float>(wide.weights().begin(), wide.weights().end()),
            std::vector<float>({1, 2, 3, 4, 5, 6}));
  EXPECT_FALSE(SmallProblem().train.weighted());
  EXPECT_EQ(SmallProblem().train.Weight(3), 1.0f);
  EXPECT_FALSE(data.WithWeights(std::vector<float>(), "none").weighted());
}

TEST(SampleWeight, RefusesAWrongCountANegativeAndANonFiniteWeight) {
  const Dataset data = ThreeClassDense(3, 2, 3);
  const auto message = [&](std::vector<float> w) {
    try {
      data.WithWeights(std::move(w), "w.txt");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadInput);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message({1, 2}), "w.txt: has 2 weights for the 3 rows of three-classes, expected one weight per row");
  EXPECT_EQ(message({1, -2, 1}), "w.txt: row 1's weight is -2, expected a finite number >= 0");
  EXPECT_EQ(message({1, 1, NAN}), "w.txt: row 2's weight is nan, expected a finite number >= 0");
  EXPECT_NE(message({1, 1, INFINITY}).find("expected a finite number >= 0"), std::string::npos);
}

// The objective the finite differences see is Evaluate's, which weighs each row's loss; the
// analytic gradient is Gradient's, which weighs each row's step: one weight, two code paths.
TEST(SampleWeight, WeightedGradientsMatchFiniteDifferences) {
  const Dataset data = Weighted(SmallProblem().train, 2);
  const LogisticModel logistic(data, 0.01f, std::vector<float>{0.5f, 3.0f});
  const std::vector<float> w = RandomParams(logistic.NumParams(), 3);
  for (std::uint32_t r = 0; r < 6; ++r) testing::ExpectGradientMatches(logistic, w, data, {r});
  testing::ExpectGradientMatches(logistic, w, data, {6, 7, 8, 9, 10, 11, 12, 13});
  const SquaredModel squared(data, 0.01f);
  testing::ExpectGradientMatches(squared, w, data, {1, 2, 3, 4, 5});

  const Dataset three = Weighted(ThreeClassDense(40, 6, 4), 5);
  const SoftmaxModel softmax(three, 0.02f);
  const std::vector<float> ws = RandomParams(softmax.NumParams(), 6);
  for (std::uint32_t r = 0; r < 5; ++r) testing::ExpectGradientMatches(softmax, ws, three, {r});
  const MlpModel mlp(three, {5, 4}, 0.01f);
  std::vector<float> wm(mlp.NumParams());
  Rng rng(7);
  mlp.Init(std::span(wm), rng);
  // As mlp_test.cc: eps 1e-3 keeps the central difference off the ReLU kinks.
  testing::ExpectGradientMatches(mlp, wm, three, {0}, 400, 1e-3, 1e-3);
  testing::ExpectGradientMatches(mlp, wm, three, {1, 2, 3, 4, 5, 6, 7}, 400, 1e-3, 1e-3);

  const Dataset ratings = Weighted(PlantedRatings(20, 15, 3, 300, 0.1, 1), 8);
  const MfModel mf(ratings, 3, 0.05f);
  std::vector<float> wf(mf.NumParams());
  mf.Init(std::span(wf), rng);
  for (float& v : wf) v += rng.UniformFloat() - 0.5f;
  for (std::uint32_t r = 0; r < 6; ++r) testing::ExpectGradientMatches(mf, wf, ratings, {r});
}

TEST(SampleWeight, ScalesARowsDataGradientAndNotItsRegulariser) {
  const Dataset plain = SmallProblem().train;
  const Dataset data = Weighted(plain, 9);
  const LogisticModel model(plain, 0.01f);
  std::vector<float> w = RandomParams(model.NumParams(), 10);
  SparseGrad a = model.MakeGrad(plain, 1), b = model.MakeGrad(data, 1);
  LogisticModel::Workspace ws;
  for (std::uint32_t r = 0; r < 30; ++r) {
    model.Gradient(Params(w), plain, std::span(&r, 1), a, ws);
    model.Gradient(Params(w), data, std::span(&r, 1), b, ws);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
      EXPECT_FLOAT_EQ(b.grad(k), data.Weight(r) * a.grad(k));
      EXPECT_EQ(b.l2(k), a.l2(k));
    }
  }
}

// SmallProblem's rows, each followed by a copy with the opposite label: weight 2 on the rows
// and 0 on the copies make the weighted objective (1/2n) sum 2 loss_i + (l2/2)|w|^2, exactly
// SmallProblem's own, whose optimum the oracle computes without weights. Unweighted, the copies
// cancel the rows (the optimum is near w = 0, loss log 2).
Dataset RowsAndTheirOpposites(const Dataset& rows) {
  std::vector<std::uint64_t> row_ptr{0};
  std::vector<std::uint32_t> index;
  std::vector<float> value, label, weight;
  for (std::size_t r = 0; r < rows.rows(); ++r) {
    const SparseRow x = rows.Row(r);
    for (const float sign : {1.0f, -1.0f}) {
      index.insert(index.end(), x.index.begin(), x.index.end());
      value.insert(value.end(), x.value.begin(), x.value.end());
      row_ptr.push_back(index.size());
      label.push_back(sign * BinarySign(rows.Label(r)));
      weight.push_back(sign > 0 ? 2.0f : 0.0f);
    }
  }
  return Dataset(row_ptr, index, value, label, rows.num_features(), "rows-and-opposites")
      .WithWeights(weight, "weights");
}

class WeightedModes : public ::testing::TestWithParam<Algorithm> {};

TEST_P(WeightedModes, ReachTheOptimumTheWeightsDefine) {
  const SyntheticSplit data = SmallProblem();
  const double l2 = 1e-3;
  const double optimum = testing::OptimalObjective(data.train, l2);
  // Unweighted, a run would end near log 2: well outside the tolerance below.
  ASSERT_LT(optimum, 0.85 * std::log(2.0)) << "the weights must matter";
  const Dataset weighted = RowsAndTheirOpposites(data.train);
  TrainConfig config{.algorithm = GetParam(), .l2 = static_cast<float>(l2), .threads = 2, .epochs = 20,
                     .seed = 5, .pin = Pin::kNone};
  if (GetParam() == Algorithm::kEcd) {  // as all_modes_test.cc: ECD with qsgd is stable for ~4/omega rounds
    config.batch = 64;
    config.epochs = 10;
  }
  const TrainResult r = Train(weighted, nullptr, config);
  const double objective = r.history.back().objective;
  EXPECT_GE(objective, optimum - 1e-6);
  EXPECT_LE(objective, optimum * 1.05) << "optimum " << optimum;
  // Corral's weighted objective at its parameters is the oracle's unweighted one on the rows.
  const std::vector<double> w(r.params.begin(), r.params.end());
  EXPECT_NEAR(objective, testing::Objective(data.train, w, l2), 1e-5 * objective);
}

INSTANTIATE_TEST_SUITE_P(Every, WeightedModes, ::testing::ValuesIn(Algorithms()), AlgorithmTestName);

TEST(SampleWeight, RefusesWeightsThatAreAllZero) {
  const Dataset data = SmallProblem().train;
  try {
    Train(data.WithWeights(std::vector<float>(data.rows(), 0.0f), "zeros"), nullptr, {.threads = 1});
    ADD_FAILURE() << "trained";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("every sample weight is 0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace corral
