// Finite-difference check of any corral::Model's analytic gradient.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include <corral/corral.h>

namespace corral::testing {

// The objective a gradient buffer describes, on `rows`: mean data loss plus the L2 terms the
// buffer reports (per entry for SparseGrad, over all of w for DenseGrad).
template <typename M>
double BatchObjective(const M& model, const std::vector<float>& w, const Dataset& data,
                      std::span<const std::uint32_t> rows, const typename M::Grad& grad) {
  double loss = 0;
  for (const std::uint32_t r : rows) loss += model.Evaluate(w, data, r, r + 1).loss;
  double reg = 0;
  if constexpr (std::is_same_v<typename M::Grad, SparseGrad>) {
    for (std::size_t k = 0; k < grad.size(); ++k) {
      const double v = w[grad.index(k)];
      reg += 0.5 * grad.l2(k) * v * v;
    }
  } else {
    for (const float v : w) reg += 0.5 * grad.l2 * double{v} * v;
  }
  return loss / static_cast<double>(rows.size()) + reg;
}

// Compares every touched coordinate's analytic derivative (data gradient + L2 weight * w) with
// a central difference of BatchObjective, at up to `max_coords` coordinates.
template <typename M>
void ExpectGradientMatches(const M& model, const std::vector<float>& w, const Dataset& data,
                           std::vector<std::uint32_t> rows, std::size_t max_coords = 400,
                           double eps = 1e-2, double rel_tol = 2e-3) {
  auto grad = model.MakeGrad(data, rows.size());
  auto ws = model.MakeWorkspace(rows.size());
  std::vector<float> copy = w;
  model.Gradient(Params(copy), data, rows, grad, ws);
  std::map<std::uint32_t, double> analytic;
  if constexpr (std::is_same_v<typename M::Grad, SparseGrad>) {
    for (std::size_t k = 0; k < grad.size(); ++k) {
      analytic[grad.index(k)] += grad.grad(k) + grad.l2(k) * w[grad.index(k)];
    }
  } else {
    for (std::size_t u = 0; u < grad.grad.size(); ++u) {
      analytic[static_cast<std::uint32_t>(u)] = grad.grad[u] + grad.l2 * w[u];
    }
  }
  ASSERT_FALSE(analytic.empty());
  const std::size_t stride = std::max<std::size_t>(1, analytic.size() / max_coords);
  std::size_t i = 0;
  for (const auto& [u, derivative] : analytic) {
    if (i++ % stride != 0) continue;
    std::vector<float> plus = w, minus = w;
    plus[u] += static_cast<float>(eps);
    minus[u] -= static_cast<float>(eps);
    const double numeric = (BatchObjective(model, plus, data, rows, grad) -
                            BatchObjective(model, minus, data, rows, grad)) / (2 * eps);
    EXPECT_NEAR(derivative, numeric, rel_tol * std::max(1.0, std::abs(numeric)))
        << "coordinate " << u;
  }
}

}  // namespace corral::testing
