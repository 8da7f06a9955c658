// HOGWILD!'s sparse L2 weights, shared by the models over feature rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <corral/dataset.h>

namespace corral::internal {

// l2 * n / d_u per feature u, where d_u counts the rows of `train` with u present (explicit
// zeros included, as an update touches them too); 0 where d_u = 0. Summed over the n rows'
// touched coordinates, sample shares (l2/2)(n/d_u) w_u^2 give exactly (l2/2)|w|^2.
// From the counts themselves: n rows, d_u = rows_with[u] (TrainingFacts, a set spread over ranks).
template <typename Count>
std::vector<float> SparseL2Weights(const std::vector<Count>& rows_with, std::size_t rows, float l2) {
  const auto n = static_cast<double>(rows);
  std::vector<float> weights(rows_with.size(), 0.0f);
  for (std::size_t u = 0; u < rows_with.size(); ++u) {
    if (rows_with[u] > 0) weights[u] = static_cast<float>(l2 * n / static_cast<double>(rows_with[u]));
  }
  return weights;
}

inline std::vector<float> SparseL2Weights(const Dataset& train, float l2) {
  // A dense row holds every feature (Dataset::Row): d_u = n without reading the values (on
  // 100k x 2,000 floats the count was 5-7% of a 1-epoch run's time, perf).
  std::vector<std::size_t> rows_with(train.num_features(), train.is_dense() ? train.rows() : 0);
  for (std::size_t r = 0; !train.is_dense() && r < train.rows(); ++r) {
    for (const std::uint32_t u : train.Row(r).index) ++rows_with[u];
  }
  return SparseL2Weights(rows_with, train.rows(), l2);
}

}  // namespace corral::internal
