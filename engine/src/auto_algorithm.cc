// --algo auto: the one place that turns Algorithm::kAuto into a mode (ResolveAlgorithm,
// <corral/algorithms.h>). The rule and the measurements behind it: docs/algorithms.md,
// "Choosing the algorithm (--algo auto)".
#include <optional>
#include <string>

#include <corral/algorithms.h>
#include <corral/error.h>
#include <corral/model_file.h>

namespace corral {
namespace {

// The option set in `config` that only hogwild runs (TrainConfig::Validate refuses it under
// hogwild++), or "" for none.
std::string OnlyHogwildOption(const TrainConfig& config) {
  if (config.optimizer == Optimizer::kAdaGrad) return "--optimizer adagrad";
  if (config.optimizer == Optimizer::kMomentum) return "--optimizer momentum";
  if (config.seeded_tau) return "--schedule " + ScheduleSpec(config);
  return "";
}

// Whether every step of `model` writes every parameter (a dense gradient), rather than the
// coordinates of its rows (linear, softmax: the row's features; mf: a user's and an item's
// factors).
bool DenseGradient(ModelKind model) { return model == ModelKind::kMlp; }

// Whether `model` is linear (one weight per feature) and `train`'s rows dense: every step then
// writes every weight too, as a dense gradient's does.
bool LinearOnDenseRows(ModelKind model, const Dataset& train) {
  return train.is_dense() &&
         (model == ModelKind::kLogistic || model == ModelKind::kHinge || model == ModelKind::kSquared);
}

AlgorithmChoice Rule(const TrainConfig& config, const Dataset& train, int threads, int ranks) {
  const std::string model(ToString(config.model));
  const std::string at = " at " + std::to_string(threads) + " thread" + (threads == 1 ? "" : "s");
  const std::string only_hogwild = OnlyHogwildOption(config);
  if (!only_hogwild.empty() && config.group_size > 0) {
    throw Error(ErrorCode::kBadConfig,
                "--algo auto: " + only_hogwild + " runs under hogwild only, --group-size " +
                    std::to_string(config.group_size) +
                    " under hogwild++ only; give --algo hogwild or drop one of them");
  }
  if (!only_hogwild.empty()) {
    return {.algorithm = Algorithm::kHogwild, .group_size = config.group_size,
            .reason = only_hogwild + ": hogwild++ does not run it"};
  }
  if (config.group_size > 0) {
    return {.algorithm = Algorithm::kHogwildPP, .group_size = config.group_size,
            .reason = "--group-size " + std::to_string(config.group_size) + " is hogwild++'s"};
  }
  const bool dense = DenseGradient(config.model);
  if (ranks > 1) {
    const std::string across = "across " + std::to_string(ranks) + " ranks";
    if (dense) {
      return {.algorithm = Algorithm::kHogwildPP, .group_size = 1,
              .reason = "dense model " + model + " " + across + ", groups of 1"};
    }
    return {.algorithm = Algorithm::kHogwildPP, .group_size = 0,
            .reason = across + ": hogwild inside each rank, one group per rank"};
  }
  if (threads < 2) return {.algorithm = Algorithm::kHogwild, .reason = "1 thread"};
  if (dense) {
    return {.algorithm = Algorithm::kHogwildPP, .group_size = 1,
            .reason = "dense model " + model + at + ", groups of 1"};
  }
  if (LinearOnDenseRows(config.model, train)) {
    return {.algorithm = Algorithm::kHogwildPP, .group_size = 1,
            .reason = model + " on dense rows" + at + " writes every weight every step, groups of 1"};
  }
  return {.algorithm = Algorithm::kHogwild, .group_size = config.group_size,
          .reason = model + " updates its rows' coordinates" + at +
                    (train.is_dense() ? " (dense rows)" : " (sparse rows)")};
}

}  // namespace

AlgorithmChoice ResolveAlgorithm(const TrainConfig& config, const Dataset& train, int threads,
                                 int ranks) {
  if (config.algorithm != Algorithm::kAuto) {
    return {.algorithm = config.algorithm, .group_size = config.group_size};
  }
  AlgorithmChoice choice = Rule(config, train, threads, ranks);
  if (!config.resume_path.empty()) {
    // A checkpoint continues only under its own algorithm (CheckResumable): the rule gives way
    // to it, so that resuming works whatever --algo the saved run was given.
    const std::optional<TrainingState> saved = LoadModel(config.resume_path).training;
    if (saved && saved->algorithm != choice.algorithm) {
      choice = {.algorithm = saved->algorithm, .group_size = config.group_size,
                .reason = "the algorithm of the run --resume continues"};
    }
  }
  return choice;
}

}  // namespace corral
