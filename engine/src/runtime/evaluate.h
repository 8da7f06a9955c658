// Evaluation of a model on a dataset with oneTBB: mean loss and accuracy or RMSE.
//
// Runs on the coordinating thread (oneTBB's own threads help) on a snapshot of the parameters
// while workers wait, so it never touches a worker's hot path. Reductions are deterministic
// (fixed grain, ordered combine), so one seed gives one history.
#pragma once

#include <cmath>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include <corral/dataset.h>
#include <corral/model.h>
#include <corral/predict.h>

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

// Binary models with a margin (logistic, hinge): the area under the ROC curve of the margins
// on `data` (RocAuc); nullopt for the other models. O(rows log rows).
template <typename M>
std::optional<double> EvaluateAuc(const M& model, std::span<const float> w, const Dataset& data) {
  if constexpr (M::kTask == Task::kBinary && requires { model.Margin(w, data.Row(0)); }) {
    if (data.rows() == 0) return std::nullopt;
    std::vector<float> margins(data.rows());
    TsanHandOff handoff;  // as in Evaluate: the caller rewrites `w` afterwards
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, data.rows(), 1024),
                      [&](const tbb::blocked_range<std::size_t>& range) {
                        handoff.TaskBegins();
                        for (std::size_t r = range.begin(); r < range.end(); ++r) {
                          margins[r] = model.Margin(w, data.Row(r));
                        }
                        handoff.TaskEnds();
                      });
    handoff.Joined();
    return RocAuc(margins, data.labels());
  } else {
    return std::nullopt;
  }
}

}  // namespace corral::internal
