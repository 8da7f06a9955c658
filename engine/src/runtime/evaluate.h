// Evaluation of a model on a dataset with oneTBB: mean loss and accuracy or RMSE.
//
// Runs on the coordinating thread (oneTBB's own threads help) on a snapshot of the parameters
// while workers wait, so it never touches a worker's hot path. Reductions are deterministic
// (fixed grain, ordered combine), so one seed gives one history.
#pragma once

#include <cmath>
#include <functional>
#include <span>

#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>

#include <corral/dataset.h>
#include <corral/model.h>

#include "engine/src/runtime/tsan_handoff.h"

namespace corral::internal {

struct EvalResult {
  double loss = 0;      // mean data loss
  double accuracy = 0;  // classification: fraction right
  double rmse = 0;      // regression: root mean squared error
};

template <typename M>
EvalResult Evaluate(const M& model, std::span<const float> w, const Dataset& data) {
  if (data.rows() == 0) return {};
  constexpr std::size_t kGrain = 1024;
  // The caller rewrites `w` (its snapshot buffer) after this returns: tell TSan the tasks'
  // reads of it happened before.
  TsanHandOff handoff;
  const EvalSums sums = tbb::parallel_deterministic_reduce(
      tbb::blocked_range<std::size_t>(0, data.rows(), kGrain), EvalSums{},
      [&](const tbb::blocked_range<std::size_t>& range, EvalSums acc) {
        handoff.TaskBegins();
        acc = acc + model.Evaluate(w, data, range.begin(), range.end());
        handoff.TaskEnds();
        return acc;
      },
      std::plus<>());
  handoff.Joined();
  return {sums.loss / sums.rows, sums.correct / sums.rows, std::sqrt(sums.sq_err / sums.rows)};
}

}  // namespace corral::internal
