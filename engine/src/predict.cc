#include <corral/error.h>
#include <corral/limits.h>
#include <corral/predict.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>
#include <string>
#include <type_traits>

#include "engine/src/runtime/model_registry.h"

namespace corral {

Predictions PredictModel(const SavedModel& model, const Dataset& data) {
  return internal::WithSavedParams(model, [&](const auto& m) {
    using M = std::decay_t<decltype(m)>;
    constexpr bool kPerClass = std::is_same_v<M, SoftmaxModel> || std::is_same_v<M, MlpModel>;
    if constexpr (std::is_same_v<M, MfModel>) {
      if (data.ratings() == nullptr) {
        throw Error(ErrorCode::kBadInput,
                    data.name() +
                        ": an mf model predicts ratings sets (user, item pairs), "
                        "this is a feature matrix");
      }
    }
    Predictions p{.rows = data.rows(), .columns = 1};
    if constexpr (kPerClass) p.columns = m.classes().size();
    p.values.resize(p.rows * p.columns);
    const std::span<const float> w(model.params);
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, data.rows(), 256),
                      [&](const tbb::blocked_range<std::size_t>& range) {
                        for (std::size_t r = range.begin(); r < range.end(); ++r) {
                          float* out = p.values.data() + r * p.columns;
                          if constexpr (kPerClass) {
                            m.Probabilities(w, data.Row(r), std::span(out, p.columns));
                          } else if constexpr (std::is_same_v<M, MfModel>) {
                            *out = m.PredictRow(w, data, r);
                          } else {
                            *out = m.RowMargin(w, data, r);
                          }
                        }
                      });
    return p;
  });
}

double RocAuc(std::span<const float> scores, std::span<const float> labels) {
  // A NaN score has no rank (and would break the sort's ordering).
  if (std::any_of(scores.begin(), scores.end(), [](float s) { return std::isnan(s); })) {
    return std::nan("");
  }
  std::vector<std::size_t> order(scores.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return scores[a] < scores[b]; });
  double positive_ranks = 0;  // sum of the positives' 1-based ranks, ties at their mean rank
  double positives = 0;
  for (std::size_t begin = 0; begin < order.size();) {
    std::size_t end = begin + 1;
    while (end < order.size() && scores[order[end]] == scores[order[begin]]) ++end;
    const double mean_rank = 0.5 * static_cast<double>(begin + 1 + end);
    for (std::size_t i = begin; i < end; ++i) {
      if (labels[order[i]] > 0) {
        positive_ranks += mean_rank;
        positives += 1;
      }
    }
    begin = end;
  }
  const double negatives = static_cast<double>(scores.size()) - positives;
  if (positives == 0 || negatives == 0) return std::nan("");
  return (positive_ranks - positives * (positives + 1) / 2) / (positives * negatives);
}

}  // namespace corral
