// An independent oracle for L2 logistic regression: the objective and its gradient in double
// precision, and the optimum by full-batch gradient descent.
#pragma once

#include <cmath>
#include <vector>

#include <corral/dataset.h>

namespace corral::testing {

// Objective of L2 logistic regression in double precision.
inline double Objective(const Dataset& d, const std::vector<double>& w, double l2,
                 std::vector<double>* grad = nullptr) {
  double loss = 0;
  if (grad != nullptr) grad->assign(w.size(), 0.0);
  for (std::size_t r = 0; r < d.rows(); ++r) {
    const SparseRow x = d.Row(r);
    const double y = d.Label(r) > 0 ? 1.0 : -1.0;
    double m = 0;
    for (std::size_t k = 0; k < x.nnz(); ++k) m += w[x.index[k]] * x.value[k];
    const double z = y * m;
    loss += z > 0 ? std::log1p(std::exp(-z)) : -z + std::log1p(std::exp(z));
    if (grad != nullptr) {
      const double dm = -y / (1 + std::exp(z));
      for (std::size_t k = 0; k < x.nnz(); ++k) (*grad)[x.index[k]] += dm * x.value[k];
    }
  }
  const auto n = static_cast<double>(d.rows());
  double reg = 0;
  for (std::size_t u = 0; u < w.size(); ++u) {
    reg += w[u] * w[u];
    if (grad != nullptr) (*grad)[u] = (*grad)[u] / n + l2 * w[u];
  }
  return loss / n + 0.5 * l2 * reg;
}

// The optimum by full-batch gradient descent with step 1/L (rows have unit norm, so the
// loss's curvature is at most 1/4; the problem is l2-strongly convex, so this converges).
inline double OptimalObjective(const Dataset& d, double l2) {
  std::vector<double> w(d.num_features(), 0.0), grad;
  const double step = 1.0 / (0.25 + l2);
  for (int it = 0; it < 3000; ++it) {
    Objective(d, w, l2, &grad);
    for (std::size_t u = 0; u < w.size(); ++u) w[u] -= step * grad[u];
  }
  return Objective(d, w, l2);
}

}  // namespace corral::testing
