// The built-in models by kind: building one from training data or from a saved ModelInfo, and
// describing a built one. Adding a model touches this file and the ModelKind list.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <corral/error.h>
#include <corral/linear.h>
#include <corral/mf.h>
#include <corral/mlp.h>
#include <corral/model_file.h>
#include <corral/softmax.h>
#include <corral/train.h>

#include "engine/src/runtime/describe.h"

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

// The models --class-weight applies to (TrainConfig::Validate refuses it for the others).
inline bool TakesClassWeight(ModelKind kind) {
  return kind == ModelKind::kLogistic || kind == ModelKind::kHinge || kind == ModelKind::kSoftmax;
}

// `spec` as one weight per class id of a model with `classes` ids, `class_id(label)` the id
// of a label (-1: no class of the training set); empty for none. balanced is scikit-learn's
// n / (k * n_c), k the classes present in `train` and n_c the rows of class c.
template <typename ClassIdOf>
std::vector<float> ResolveClassWeight(const ClassWeight& spec, const Dataset& train,
                                      std::size_t classes, ClassIdOf&& class_id) {
  if (spec.none()) return {};
  std::vector<float> weights(classes, 1.0f);
  if (spec.balanced) {
    std::vector<std::size_t> rows(classes, 0);
    for (const float label : train.labels()) ++rows[static_cast<std::size_t>(class_id(label))];
    const auto present = static_cast<double>(std::count_if(rows.begin(), rows.end(), [](std::size_t n) { return n > 0; }));
    for (std::size_t c = 0; c < classes; ++c) {
      if (rows[c] > 0) {
        weights[c] = static_cast<float>(static_cast<double>(train.rows()) / (present * static_cast<double>(rows[c])));
      }
    }
    return weights;
  }
  std::vector<std::optional<float>> named_by(classes);  // the label that set each class
  for (const auto& [label, weight] : spec.weights) {
    const int c = class_id(label);
    const std::string spelled = "--class-weight " + ClassWeightSpec(spec) + ": label " + Number(label);
    if (c < 0) {
      throw Error(ErrorCode::kBadConfig, spelled + " is not a class of the training set " + train.name());
    }
    const auto id = static_cast<std::size_t>(c);
    if (named_by[id]) {
      throw Error(ErrorCode::kBadConfig, spelled + " names the same class as label " +
                                             Number(*named_by[id]) +
                                             " (binary models: labels > 0 are the positive class)");
    }
    named_by[id] = label;
    weights[id] = weight;
  }
  return weights;
}

// Calls f(model) with the model of config.model built for training on `train`, or, when
// `facts` is not null, on the set those facts describe (a run whose ranks hold parts of it;
// `train` is then this rank's part, read for --class-weight's classes only).
template <typename F>
decltype(auto) WithTrainingModel(const TrainConfig& config, const Dataset& train,
                                 const TrainingFacts* facts, float l2, F&& f) {
  const bool takes_bias = config.model == ModelKind::kSoftmax || config.model == ModelKind::kMf;
  if (!config.bias && !takes_bias) {
    throw Error(ErrorCode::kBadConfig,
                "--no-bias applies to models softmax and mf, not '" +
                    std::string(ToString(config.model)) +
                    "' (logistic, hinge and squared have no bias; mlp always learns its biases)");
  }
  const Bias bias = config.bias ? Bias::kLearned : Bias::kNone;
  const auto binary_weights = [&] {
    return ResolveClassWeight(config.class_weight, train, LogisticModel::kClasses, &LogisticModel::ClassId);
  };
  switch (config.model) {
    case ModelKind::kLogistic:
      return facts ? f(LogisticModel(*facts, l2, binary_weights())) : f(LogisticModel(train, l2, binary_weights()));
    case ModelKind::kHinge:
      return facts ? f(HingeModel(*facts, l2, binary_weights())) : f(HingeModel(train, l2, binary_weights()));
    case ModelKind::kSquared: return facts ? f(SquaredModel(*facts, l2)) : f(SquaredModel(train, l2));
    case ModelKind::kSoftmax: {
      const ClassMap classes = facts ? facts->classes : ClassMap::Of(train);
      const std::vector<float> weights = ResolveClassWeight(
          config.class_weight, train, classes.size(), [&](float label) { return classes.Id(label); });
      return facts ? f(SoftmaxModel(*facts, l2, bias, weights)) : f(SoftmaxModel(train, l2, bias, weights));
    }
    case ModelKind::kMf:
      if (facts) throw Error(ErrorCode::kBadConfig, "--model mf reads its ratings whole on every rank, not by rank");
      return f(MfModel(train, config.rank, l2, bias));
    case ModelKind::kMlp: return facts ? f(MlpModel(*facts, config.hidden, l2)) : f(MlpModel(train, config.hidden, l2));
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
