// How train.cc reaches a mode: each mode family is compiled once, in its own translation unit
// (modes/<family>.cc), for every model type the library trains, and exposes itself as one
// ModeRunner constant that its registry row (modes/registry.h) points to. train.cc only looks
// the runner up, so an edit to one mode's header rebuilds its own file.
#pragma once

#include <tuple>
#include <utility>

#include <corral/linear.h>
#include <corral/mf.h>
#include <corral/mlp.h>
#include <corral/softmax.h>
#include <corral/train.h>

#include "engine/src/runtime/coordinator.h"
#include "engine/src/runtime/erased_model.h"

namespace corral::internal {

// What the coordinator needs besides the model and the mode (Coordinate's arguments).
struct ModeRun {
  const Dataset* test;
  RunPlan plan;
  bool lr_searched;
  float l2;
  const TrainObserver& observer;
};

template <typename... Ms>
struct ModelList {};

// The model types the library trains: the built-in ones and a custom model's adapters.
using TrainedModels = ModelList<LogisticModel, HingeModel, SquaredModel, SoftmaxModel, MfModel,
                                MlpModel, ErasedModel<Task::kRegression>, ErasedModel<Task::kBinary>>;

template <typename M>
using RunFn = TrainResult (*)(const M& model, ModeRun run);

template <typename List>
struct RunFnsOf;
template <typename... Ms>
struct RunFnsOf<ModelList<Ms...>> {
  using type = std::tuple<RunFn<Ms>...>;
};

// A mode family's entry for every trained model: runs plan.config.algorithm's mode of the
// family under the coordinator.
struct ModeRunner {
  RunFnsOf<TrainedModels>::type run;

  template <typename M>
  TrainResult operator()(const M& model, ModeRun r) const {
    return std::get<RunFn<M>>(run)(model, std::move(r));
  }
};

template <typename Family, typename... Ms>
constexpr ModeRunner RunnerOfModels(ModelList<Ms...>) {
  return ModeRunner{{&Family::template Run<Ms>...}};
}

// The runner of `Family`, a class with a static member template Run<M>(const M&, ModeRun).
// Taking the address of each Run<M> compiles them all in the file that calls RunnerOf.
template <typename Family>
constexpr ModeRunner RunnerOf() {
  return RunnerOfModels<Family>(TrainedModels{});
}

// Runs Mode under the coordinator.
template <typename Mode, typename M>
TrainResult CoordinateMode(const M& model, ModeRun run) {
  return Coordinate<M, Mode>(model, run.test, std::move(run.plan), run.lr_searched, run.l2,
                             run.observer);
}

// The family of one mode template: Mode<M> for every model.
template <template <Model> class Mode>
struct OneMode {
  template <typename M>
  static TrainResult Run(const M& model, ModeRun run) {
    return CoordinateMode<Mode<M>>(model, std::move(run));
  }
};

}  // namespace corral::internal
