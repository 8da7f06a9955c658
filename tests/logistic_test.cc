// LogisticModel: analytic gradients against finite differences, and the sparse L2 form.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include <corral/corral.h>

#include "test_data.h"

namespace corral {
namespace {

// Per-sample objective: log-loss plus the sample's share of the regulariser.
double SampleObjective(const LogisticModel& model, const std::vector<float>& w, SparseRow x,
                       float label, const SparseGrad& weights) {
  std::vector<float> copy = w;
  const Params p(copy);
  double reg = 0;
  for (std::size_t k = 0; k < weights.size(); ++k) {
    const double v = w[weights.index(k)];
    reg += 0.5 * weights.l2(k) * v * v;
  }
  return model.Evaluate(p, x, label).loss + reg;
}

TEST(LogisticModel, GradientMatchesFiniteDifferences) {
  const SyntheticSplit data = testing::SmallProblem();
  const LogisticModel model(data.train, 0.01f);
  Rng rng(3);
  std::vector<float> w(model.NumParams());
  for (float& v : w) v = rng.UniformFloat() - 0.5f;
  SparseGrad grad(model.MaxTouched(data.train));
  for (std::size_t r = 0; r < 50; ++r) {
    const SparseRow x = data.train.Row(r);
    const float y = data.train.Label(r);
    model.Gradient(Params(w), x, y, grad);
    ASSERT_EQ(grad.size(), x.nnz());
    for (std::size_t k = 0; k < grad.size(); ++k) {
      const std::uint32_t u = grad.index(k);
      const double analytic = grad.grad(k) + grad.l2(k) * w[u];
      constexpr float kEps = 1e-2f;
      std::vector<float> plus = w, minus = w;
      plus[u] += kEps;
      minus[u] -= kEps;
      const double numeric = (SampleObjective(model, plus, x, y, grad) -
                              SampleObjective(model, minus, x, y, grad)) / (2 * kEps);
      EXPECT_NEAR(analytic, numeric, 2e-3 * std::max(1.0, std::abs(numeric)))
          << "row " << r << " coordinate " << u;
    }
  }
}

TEST(LogisticModel, SparseL2SumsToTheFullRegularizer) {
  // Summed over all samples, the per-coordinate weights l2*n/d_u give l2*w_u per unit of
  // w_u and mean: d/dw_u of (l2/2)|w|^2.
  const SyntheticSplit data = testing::SmallProblem();
  const float l2 = 0.05f;
  const LogisticModel model(data.train, l2);
  std::vector<double> total(model.NumParams(), 0.0);
  std::vector<bool> touched(model.NumParams(), false);
  std::vector<float> w(model.NumParams(), 0.0f);
  SparseGrad grad(model.MaxTouched(data.train));
  for (std::size_t r = 0; r < data.train.rows(); ++r) {
    model.Gradient(Params(w), data.train.Row(r), data.train.Label(r), grad);
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

TEST(LogisticModel, LossIsStableForLargeMargins) {
  EXPECT_NEAR(LogisticModel::LogLoss(0.0), std::log(2.0), 1e-15);
  EXPECT_NEAR(LogisticModel::LogLoss(800.0), 0.0, 1e-300);
  EXPECT_NEAR(LogisticModel::LogLoss(-800.0), 800.0, 1e-9);
  EXPECT_TRUE(std::isfinite(LogisticModel::LogLoss(-1e30)));
}

TEST(LogisticModel, LabelsZeroOneAndMinusOneAgree) {
  EXPECT_EQ(LogisticModel::Sign(0.0f), -1.0f);
  EXPECT_EQ(LogisticModel::Sign(-1.0f), -1.0f);
  EXPECT_EQ(LogisticModel::Sign(1.0f), 1.0f);
}

TEST(LogisticModel, RejectsNegativeL2) {
  const SyntheticSplit data = testing::SmallProblem();
  EXPECT_THROW(LogisticModel(data.train, -1.0f), Error);
}

}  // namespace
}  // namespace corral
