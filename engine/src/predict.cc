#include <corral/error.h>
#include <corral/limits.h>
#include <corral/predict.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

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
                            *out = m.Margin(w, data.Row(r));
                          }
                        }
                      });
    return p;
  });
}

}  // namespace corral
