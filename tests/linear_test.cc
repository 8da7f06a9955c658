// Linear models (logistic, hinge, squared): gradients against finite differences, the sparse
// L2 form, loss edge cases.
#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include <corral/corral.h>

#include "gradient_check.h"
#include "test_data.h"

namespace corral {
namespace {

std::vector<float> RandomWeights(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> w(n);
  for (float& v : w) v = (rng.UniformFloat() - 0.5f) * scale;
  return w;
}

template <typename M>
class LinearGradient : public ::testing::Test {};
using LinearModels = ::testing::Types<LogisticModel, HingeModel, SquaredModel>;
TYPED_TEST_SUITE(LinearGradient, LinearModels);

TYPED_TEST(LinearGradient, MatchesFiniteDifferencesForSingleRowsAndBatches) {
  const SyntheticSplit data = testing::SmallProblem();
  const TypeParam model(data.train, 0.01f);
  const std::vector<float> w = RandomWeights(model.NumParams(), 3);
  std::vector<std::uint32_t> rows;
  for (std::uint32_t r = 0; r < 40; ++r) {
    // The hinge has a kink at margin 1: skip rows whose margin is near it.
    const float m = model.Margin(std::span<const float>(w), data.train.Row(r));
    if (std::abs(1.0f - BinarySign(data.train.Label(r)) * m) < 0.1f) continue;
    testing::ExpectGradientMatches(model, w, data.train, {r});
    rows.push_back(r);
  }
  testing::ExpectGradientMatches(model, w, data.train, rows);
}

TYPED_TEST(LinearGradient, WorksOnDenseLookingRows) {
  // Every feature present in every row: the sparse L2 weights collapse to plain l2.
  std::vector<std::uint64_t> row_ptr{0};
  std::vector<std::uint32_t> index;
  std::vector<float> value, label;
  Rng rng(5);
  for (int r = 0; r < 50; ++r) {
    for (std::uint32_t u = 0; u < 8; ++u) {
      index.push_back(u);
      value.push_back(rng.UniformFloat() - 0.5f);
    }
    row_ptr.push_back(index.size());
    label.push_back(rng.UniformFloat() < 0.5f ? -1.0f : 1.0f);
  }
  const Dataset dense(row_ptr, index, value, label, 8, "dense");
  const TypeParam model(dense, 0.1f);
  const std::vector<float> w = RandomWeights(8, 9, 0.2f);
  testing::ExpectGradientMatches(model, w, dense, {0, 1, 2, 3});
  auto grad = model.MakeGrad(dense, 1);
  typename TypeParam::Workspace ws;
  const std::uint32_t row = 0;
  std::vector<float> copy = w;
  model.Gradient(Params(copy), dense, std::span(&row, 1), grad, ws);
  for (std::size_t k = 0; k < grad.size(); ++k) EXPECT_FLOAT_EQ(grad.l2(k), 0.1f);
}

TEST(LinearModel, SparseL2SumsToTheFullRegularizer) {
  // Summed over all samples, the per-coordinate weights l2*n/d_u give l2 per coordinate in
  // the mean: d/dw_u of (l2/2)|w|^2 = l2 w_u.
  const SyntheticSplit data = testing::SmallProblem();
  const float l2 = 0.05f;
  const LogisticModel model(data.train, l2);
  std::vector<double> total(model.NumParams(), 0.0);
  std::vector<bool> touched(model.NumParams(), false);
  std::vector<float> w(model.NumParams(), 0.0f);
  SparseGrad grad = model.MakeGrad(data.train, 1);
  LogisticModel::Workspace ws;
  for (std::uint32_t r = 0; r < data.train.rows(); ++r) {
    model.Gradient(Params(w), data.train, std::span(&r, 1), grad, ws);
    for (std::size_t k = 0; k < grad.size(); ++k) {
      total[grad.index(k)] += grad.l2(k);
      touched[grad.index(k)] = true;
    }
  }
  const auto n = static_cast<double>(data.train.rows());
  for (std::size_t u = 0; u < total.size(); ++u) {
    if (touched[u]) {
      EXPECT_NEAR(total[u] / n, l2, 1e-5) << "coordinate " << u;
    }
  }
}

TEST(LinearModel, EvaluationReportsAccuracyOrRmse) {
  const SyntheticSplit data = testing::SmallProblem();
  const std::vector<float> w = RandomWeights(data.train.num_features(), 4);
  const EvalSums cls = LogisticModel(data.train, 0).Evaluate(w, data.train, 0, 100);
  EXPECT_EQ(cls.rows, 100);
  EXPECT_GT(cls.correct, 0);
  EXPECT_EQ(cls.sq_err, 0);
  const EvalSums reg = SquaredModel(data.train, 0).Evaluate(w, data.train, 0, 100);
  EXPECT_EQ(reg.correct, 0);
  EXPECT_NEAR(reg.loss, reg.sq_err / 2, 1e-9 * reg.sq_err);
}

// A dense row's margin (detail::DenseDot: sixteen partial sums) against a double reference,
// and the same set stored sparse and dense evaluated alike, at widths around the lanes: below
// sixteen (tail only), exact multiples, and a remainder; and a model narrower than the rows
// (features beyond the model's ignored, as Margin does).
TEST(LinearModel, DenseRowsEvaluateAsTheirSparseForm) {
  for (const std::size_t d : {1u, 7u, 16u, 33u, 2000u}) {
    Rng rng(d);
    const std::size_t rows = 40;
    std::vector<float> values(rows * d), labels(rows);
    std::vector<std::uint64_t> row_ptr{0};
    std::vector<std::uint32_t> index;
    for (std::size_t r = 0; r < rows; ++r) {
      labels[r] = rng.UniformFloat() < 0.5f ? -1.0f : 1.0f;
      for (std::size_t u = 0; u < d; ++u) {
        values[r * d + u] = rng.UniformFloat() * 2 - 1;
        index.push_back(static_cast<std::uint32_t>(u));
      }
      row_ptr.push_back(index.size());
    }
    const Dataset sparse(row_ptr, index, values, labels, d, "sparse");
    const Dataset dense = Dataset::Dense(values, labels, d, "dense");
    for (const std::size_t params : {d, (d + 1) / 2}) {
      const std::vector<float> w = RandomWeights(params, d + params);
      const LogisticModel model(params, 0.1f);
      for (std::size_t r = 0; r < rows; ++r) {
        double reference = 0, magnitude = 0;
        for (std::size_t u = 0; u < params; ++u) {
          reference += double{w[u]} * values[r * d + u];
          magnitude += std::abs(double{w[u]} * values[r * d + u]);
        }
        const float margin = model.RowMargin(w, dense, r);
        EXPECT_NEAR(margin, reference, 1e-6 * magnitude) << "d " << d << " params " << params << " row " << r;
        EXPECT_NEAR(margin, model.RowMargin(w, sparse, r), 1e-6 * magnitude);
      }
      const EvalSums a = model.Evaluate(w, dense, 0, rows);
      const EvalSums b = model.Evaluate(w, sparse, 0, rows);
      EXPECT_NEAR(a.loss, b.loss, 1e-5 * b.loss) << "d " << d;
      EXPECT_EQ(a.rows, b.rows);
    }
  }
}

TEST(Losses, AreStableAndCorrectAtTheEdges) {
  EXPECT_NEAR(LogLoss(0.0), std::log(2.0), 1e-15);
  EXPECT_NEAR(LogLoss(800.0), 0.0, 1e-300);
  EXPECT_NEAR(LogLoss(-800.0), 800.0, 1e-9);
  EXPECT_TRUE(std::isfinite(LogLoss(-1e30)));
  EXPECT_EQ(HingeLoss::Value(2.0f, 1.0f), 0.0);
  EXPECT_EQ(HingeLoss::Value(0.5f, -1.0f), 1.5);
  EXPECT_EQ(HingeLoss::Derivative(0.5f, 1.0f), -1.0f);
  EXPECT_EQ(HingeLoss::Derivative(1.5f, 1.0f), 0.0f);
  EXPECT_EQ(SquaredLoss::Value(3.0f, 1.0f), 2.0);
}

TEST(Losses, LabelsZeroOneAndMinusOneAgree) {
  EXPECT_EQ(BinarySign(0.0f), -1.0f);
  EXPECT_EQ(BinarySign(-1.0f), -1.0f);
  EXPECT_EQ(BinarySign(1.0f), 1.0f);
}

TEST(LinearModel, RejectsNegativeL2) {
  const SyntheticSplit data = testing::SmallProblem();
  EXPECT_THROW(LogisticModel(data.train, -1.0f), Error);
  EXPECT_THROW(HingeModel(10, std::nanf("")), Error);
}

}  // namespace
}  // namespace corral
