// Evaluation of a model on a dataset with oneTBB: mean loss and accuracy.
//
// Runs on the coordinating thread (oneTBB's own threads help) while workers wait, so it never
// touches a worker's hot path. Reductions are deterministic (fixed grain, ordered combine).
#pragma once

#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>
#include <tbb/partitioner.h>

#include <corral/dataset.h>
#include <corral/params.h>

namespace corral::internal {

struct EvalSums {
  double loss = 0;
  double correct = 0;
  EvalSums operator+(const EvalSums& o) const { return {loss + o.loss, correct + o.correct}; }
};

struct EvalResult {
  double loss = 0;      // mean data loss
  double accuracy = 0;  // fraction right
};

template <typename Model>
EvalResult Evaluate(const Model& model, Params w, const Dataset& data) {
  if (data.rows() == 0) return {};
  constexpr std::size_t kGrain = 1024;
  const EvalSums sums = tbb::parallel_deterministic_reduce(
      tbb::blocked_range<std::size_t>(0, data.rows(), kGrain), EvalSums{},
      [&](const tbb::blocked_range<std::size_t>& range, EvalSums acc) {
        for (std::size_t r = range.begin(); r < range.end(); ++r) {
          const auto e = model.Evaluate(w, data.Row(r), data.Label(r));
          acc.loss += e.loss;
          acc.correct += e.correct ? 1.0 : 0.0;
        }
        return acc;
      },
      std::plus<>());
  const auto n = static_cast<double>(data.rows());
  return {sums.loss / n, sums.correct / n};
}

}  // namespace corral::internal
