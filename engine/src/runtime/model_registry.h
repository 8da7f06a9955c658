// The built-in models by kind: building one from training data or from a saved ModelInfo, and
// describing a built one. Adding a model touches this file and the ModelKind list.
#pragma once

#include <string>
#include <utility>

#include <corral/error.h>
#include <corral/linear.h>
#include <corral/mf.h>
#include <corral/mlp.h>
#include <corral/model_file.h>
#include <corral/softmax.h>
#include <corral/train.h>

namespace corral::internal {

inline ModelInfo Describe(ModelKind kind, const LogisticModel& m) { return {kind, m.l2(), m.NumParams()}; }
inline ModelInfo Describe(ModelKind kind, const HingeModel& m) { return {kind, m.l2(), m.NumParams()}; }
inline ModelInfo Describe(ModelKind kind, const SquaredModel& m) { return {kind, m.l2(), m.NumParams()}; }
inline ModelInfo Describe(ModelKind kind, const SoftmaxModel& m) {
  return {.kind = kind, .l2 = m.l2(), .num_features = m.num_features(), .classes = m.classes().labels()};
}
inline ModelInfo Describe(ModelKind kind, const MlpModel& m) {
  return {.kind = kind, .l2 = m.l2(), .num_features = m.inputs(), .classes = m.classes().labels(),
          .hidden = m.hidden()};
}
inline ModelInfo Describe(ModelKind kind, const MfModel& m, const Dataset& train) {
  const RatingsInfo& ids = *train.ratings();
  return {.kind = kind, .l2 = m.l2(), .rank = m.rank(), .users = m.users(), .items = m.items(),
          .mean = m.mean(),
          .user_ids = {ids.user_ids.begin(), ids.user_ids.begin() + static_cast<std::ptrdiff_t>(m.users())},
          .item_ids = {ids.item_ids.begin(), ids.item_ids.begin() + static_cast<std::ptrdiff_t>(m.items())}};
}
// Models whose description does not depend on the training data.
template <typename M>
ModelInfo Describe(ModelKind kind, const M& m, const Dataset& /*train*/) {
  return Describe(kind, m);
}

// Calls f(model) with the model of config.model built for training on `train`.
template <typename F>
decltype(auto) WithTrainingModel(const TrainConfig& config, const Dataset& train, float l2, F&& f) {
  const bool takes_bias = config.model == ModelKind::kSoftmax || config.model == ModelKind::kMf;
  if (!config.bias && !takes_bias) {
    throw Error(ErrorCode::kBadConfig,
                "--no-bias applies to models softmax and mf, not '" +
                    std::string(ToString(config.model)) +
                    "' (logistic, hinge and squared have no bias; mlp always learns its biases)");
  }
  const Bias bias = config.bias ? Bias::kLearned : Bias::kNone;
  switch (config.model) {
    case ModelKind::kLogistic: return f(LogisticModel(train, l2));
    case ModelKind::kHinge: return f(HingeModel(train, l2));
    case ModelKind::kSquared: return f(SquaredModel(train, l2));
    case ModelKind::kSoftmax: return f(SoftmaxModel(train, l2, bias));
    case ModelKind::kMf: return f(MfModel(train, config.rank, l2, bias));
    case ModelKind::kMlp: return f(MlpModel(train, config.hidden, l2));
  }
  throw Error(ErrorCode::kBadConfig, "unknown model kind");
}

// Calls f(model) with the model a saved file describes.
template <typename F>
decltype(auto) WithSavedModel(const ModelInfo& info, F&& f) {
  switch (info.kind) {
    case ModelKind::kLogistic: return f(LogisticModel(info.num_features, info.l2));
    case ModelKind::kHinge: return f(HingeModel(info.num_features, info.l2));
    case ModelKind::kSquared: return f(SquaredModel(info.num_features, info.l2));
    case ModelKind::kSoftmax: return f(SoftmaxModel(info.num_features, ClassMap(info.classes), info.l2));
    case ModelKind::kMf: return f(MfModel(info.users, info.items, info.rank, info.mean, info.l2));
    case ModelKind::kMlp: return f(MlpModel(info.num_features, info.hidden, ClassMap(info.classes), info.l2));
  }
  throw Error(ErrorCode::kBadInput, "unknown model kind");
}

// WithSavedModel for a model and its parameters: first checks that the parameters fit the
// model the description builds (kBadInput otherwise).
template <typename F>
decltype(auto) WithSavedParams(const SavedModel& model, F&& f) {
  return WithSavedModel(model.info, [&](const auto& m) -> decltype(auto) {
    if (m.NumParams() != model.params.size()) {
      throw Error(ErrorCode::kBadInput, "model has " + std::to_string(model.params.size()) +
                                            " parameters, its description needs " +
                                            std::to_string(m.NumParams()));
    }
    return f(m);
  });
}

}  // namespace corral::internal
