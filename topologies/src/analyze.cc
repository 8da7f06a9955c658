// Analyze: the weights check and the spectral numbers that bound how fast gossip averages.
//
// Decentralized SGD's rates depend on W through the spectral gap 1 - max(|lambda_2|, |lambda_n|)
// (Lian et al. 2017, D-PSGD) and through beta = ||I - W||_2 (Koloskova et al. 2019, CHOCO-SGD).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

// GCC 12 reports its own AVX-512 intrinsics, inlined into Eigen's packing code, as "maybe
// uninitialized" (GCC bug 105593, fixed in GCC 13); the pragma covers only these headers.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Dense>
#pragma GCC diagnostic pop

#include <corral/error.h>
#include <corral/topology.h>

namespace corral {
namespace {

Eigen::MatrixXd Dense(const Topology& t, int round) {
  const int n = t.workers();
  Eigen::MatrixXd w = Eigen::MatrixXd::Zero(n, n);
  const auto r = static_cast<std::uint64_t>(round);
  for (int i = 0; i < n; ++i) {
    w(i, i) = t.SelfWeight(i, r);
    for (const Neighbour& nb : t.Neighbours(i, r)) w(i, nb.worker) = nb.weight;
  }
  return w;
}

// ||M||_2: the square root of the largest eigenvalue of M^T M.
double SpectralNorm(const Eigen::MatrixXd& m) {
  const Eigen::MatrixXd gram = m.transpose() * m;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(gram, Eigen::EigenvaluesOnly);
  return std::sqrt(std::max(0.0, solver.eigenvalues().maxCoeff()));
}

bool Connected(const Topology& t) {
  const int n = t.workers();
  std::vector<char> seen(static_cast<std::size_t>(n), 0);
  std::vector<int> stack{0};
  seen[0] = 1;
  int reached = 1;
  while (!stack.empty()) {
    const int i = stack.back();
    stack.pop_back();
    for (int r = 0; r < t.period(); ++r) {
      const auto round = static_cast<std::uint64_t>(r);
      for (const auto& list : {t.Neighbours(i, round), t.Recipients(i, round)}) {
        for (const Neighbour& nb : list) {
          if (!seen[static_cast<std::size_t>(nb.worker)]) {
            seen[static_cast<std::size_t>(nb.worker)] = 1;
            ++reached;
            stack.push_back(nb.worker);
          }
        }
      }
    }
  }
  return reached == n;
}

}  // namespace

TopologyReport Analyze(const Topology& t) {
  const int n = t.workers();
  if (n > kMaxAnalyzedWorkers) {
    throw Error(ErrorCode::kBadConfig, "topology '" + t.spec() + "': " + std::to_string(n) +
                                           " workers are too many to analyse densely: expected at most " +
                                           std::to_string(kMaxAnalyzedWorkers));
  }
  TopologyReport report{.workers = n, .edges = t.edges(), .period = t.period()};
  report.min_degree = n;
  report.max_degree = 0;
  report.symmetric = true;
  std::vector<Eigen::MatrixXd> rounds;
  for (int r = 0; r < t.period(); ++r) {
    for (int i = 0; i < n; ++i) {
      const int degree = static_cast<int>(t.Neighbours(i, static_cast<std::uint64_t>(r)).size());
      report.min_degree = std::min(report.min_degree, degree);
      report.max_degree = std::max(report.max_degree, degree);
    }
    const Eigen::MatrixXd w = Dense(t, r);
    report.symmetric = report.symmetric && (w - w.transpose()).cwiseAbs().maxCoeff() <= kStochasticTolerance;
    const double row_error = (w.rowwise().sum().array() - 1.0).abs().maxCoeff();
    const double col_error = (w.colwise().sum().array() - 1.0).abs().maxCoeff();
    const double negative = std::max(0.0, -w.minCoeff());
    report.stochastic_error = std::max({report.stochastic_error, row_error, col_error, negative});
    rounds.push_back(w);
  }
  report.doubly_stochastic = report.stochastic_error <= kStochasticTolerance;
  report.connected = Connected(t);

  const Eigen::MatrixXd identity = Eigen::MatrixXd::Identity(n, n);
  if (rounds.size() == 1 && report.symmetric) {
    // Symmetric: the eigenvalues, ascending; lambda_1 is the last, lambda_2 the one before it.
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(rounds[0], Eigen::EigenvaluesOnly);
    const Eigen::VectorXd& lambda = solver.eigenvalues();
    report.gap = n == 1 ? 1.0 : 1.0 - std::max(std::abs(lambda(n - 2)), std::abs(lambda(0)));
    report.beta = (1.0 - lambda.array()).abs().maxCoeff();
  } else {
    // Not symmetric, or time-varying: the product over one period, measured by how much it
    // shrinks the disagreement x - mean(x): ||P - J||_2, which equals max(|lambda_2|, |lambda_n|)
    // for a symmetric doubly stochastic matrix.
    Eigen::MatrixXd product = identity;
    for (const Eigen::MatrixXd& w : rounds) product = w * product;
    const Eigen::MatrixXd average = Eigen::MatrixXd::Constant(n, n, 1.0 / n);
    report.gap = 1.0 - SpectralNorm(product - average);
    report.beta = SpectralNorm(identity - product);
  }
  return report;
}

}  // namespace corral
