// Evaluation of a model on a dataset with oneTBB: mean loss and accuracy or RMSE; across ranks
// each rank evaluates its own rows and the sums are added (collectives.h).
//
// Runs on the coordinating thread (oneTBB's own threads help) on a snapshot of the parameters
// while workers wait, so it never touches a worker's hot path. Reductions are deterministic
// (fixed grain, ordered combine), so one seed gives one history.
#pragma once

#include <algorithm>
#include <array>
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

#include "engine/src/cluster/collectives.h"
#include "engine/src/runtime/tsan_handoff.h"

namespace corral::internal {

struct EvalResult {
  double loss = 0;      // mean data loss
  double accuracy = 0;  // classification: fraction right
  double rmse = 0;      // regression: root mean squared error
};

// The sums of Evaluate (zero for no rows).
template <typename M>
EvalSums EvaluateSums(const M& model, std::span<const float> w, const Dataset& data) {
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
  return sums;
}

inline EvalResult MeansOf(const EvalSums& sums) {
  if (sums.rows == 0) return {};
  return {sums.loss / sums.rows, sums.correct / sums.rows, std::sqrt(sums.sq_err / sums.rows)};
}

template <typename M>
EvalResult Evaluate(const M& model, std::span<const float> w, const Dataset& data) {
  return MeansOf(EvaluateSums(model, w, data));
}

// Across ranks: `data` is this rank's part of the set (the parts together are the set, each
// row on one rank); each rank sums its rows and the sums are added in rank order (GatherAll),
// so every rank gets the same numbers. One process: Evaluate.
template <typename M>
EvalResult Evaluate(const M& model, std::span<const float> w, const Dataset& data, Cluster& cluster) {
  if (cluster.ranks() == 1) return Evaluate(model, w, data);
  const EvalSums mine = EvaluateSums(model, w, data);
  const std::array<double, 4> parts{mine.loss, mine.correct, mine.sq_err, mine.rows};
  const std::vector<double> all = GatherAll(cluster, std::span<const double>(parts));
  EvalSums sums;
  for (std::size_t at = 0; at < all.size(); at += parts.size()) {
    sums = sums + EvalSums{all[at], all[at + 1], all[at + 2], all[at + 3]};
  }
  return MeansOf(sums);
}

// The margins of a binary model with one (logistic, hinge) on every row of `data`, in row
// order; nullopt for the other models.
template <typename M>
std::optional<std::vector<float>> Margins(const M& model, std::span<const float> w, const Dataset& data) {
  if constexpr (M::kTask == Task::kBinary && requires { model.RowMargin(w, data, 0); }) {
    std::vector<float> margins(data.rows());
    TsanHandOff handoff;  // as in Evaluate: the caller rewrites `w` afterwards
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, data.rows(), 1024),
                      [&](const tbb::blocked_range<std::size_t>& range) {
                        handoff.TaskBegins();
                        for (std::size_t r = range.begin(); r < range.end(); ++r) {
                          margins[r] = model.RowMargin(w, data, r);
                        }
                        handoff.TaskEnds();
                      });
    handoff.Joined();
    return margins;
  } else {
    return std::nullopt;
  }
}

// Binary models with a margin (logistic, hinge): the area under the ROC curve of the margins
// on `data` (RocAuc); nullopt for the other models. O(rows log rows).
template <typename M>
std::optional<double> EvaluateAuc(const M& model, std::span<const float> w, const Dataset& data) {
  if (data.rows() == 0) return std::nullopt;
  const std::optional<std::vector<float>> margins = Margins(model, w, data);
  if (!margins) return std::nullopt;
  return RocAuc(*margins, data.labels());
}

// Across ranks (`data` this rank's part, as for Evaluate): every rank's margins and labels are
// gathered in rank order, padded to the longest part, and ranked together (the AUC needs them
// all: O(rows) floats on every rank, the --test set's margins, not its features).
template <typename M>
std::optional<double> EvaluateAuc(const M& model, std::span<const float> w, const Dataset& data,
                                  Cluster& cluster) {
  if (cluster.ranks() == 1) return EvaluateAuc(model, w, data);
  std::optional<std::vector<float>> margins = Margins(model, w, data);
  if (!margins) return std::nullopt;
  const std::vector<std::size_t> counts =
      GatherAll(cluster, std::span<const std::size_t>(std::array<std::size_t, 1>{data.rows()}));
  const std::size_t longest = *std::max_element(counts.begin(), counts.end());
  std::vector<float> labels(data.labels().begin(), data.labels().end());
  margins->resize(longest, 0.0f);
  labels.resize(longest, 0.0f);
  const std::vector<float> all_margins = GatherAll(cluster, std::span<const float>(*margins));
  const std::vector<float> all_labels = GatherAll(cluster, std::span<const float>(labels));
  std::vector<float> m, l;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    m.insert(m.end(), all_margins.begin() + static_cast<std::ptrdiff_t>(r * longest),
             all_margins.begin() + static_cast<std::ptrdiff_t>(r * longest + counts[r]));
    l.insert(l.end(), all_labels.begin() + static_cast<std::ptrdiff_t>(r * longest),
             all_labels.begin() + static_cast<std::ptrdiff_t>(r * longest + counts[r]));
  }
  if (m.empty()) return std::nullopt;
  return RocAuc(m, l);
}

}  // namespace corral::internal
