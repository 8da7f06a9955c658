// The entry of each mode family. Each is compiled once, in its own translation unit
// (modes/<family>.cc), for every model type the library trains (CORRAL_FOR_EACH_TRAINED_MODEL);
// train.cc only dispatches to them, so an edit to one mode's header rebuilds its own file.
#pragma once

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

// Each runs plan.config.algorithm's mode of its family under the coordinator.
template <typename M> TrainResult RunHogwildFamily(const M& model, ModeRun run);  // hogwild, locked
template <typename M> TrainResult RunBuckwildFamily(const M& model, ModeRun run);  // linear models
template <typename M> TrainResult RunSyncFamily(const M& model, ModeRun run);      // sync, qsgd
template <typename M> TrainResult RunDpsgdFamily(const M& model, ModeRun run);     // dpsgd, local
template <typename M> TrainResult RunCompressedGossipFamily(const M& model, ModeRun run);  // dcd, ecd, choco
template <typename M> TrainResult RunAdpsgdFamily(const M& model, ModeRun run);
template <typename M> TrainResult RunHogwildPPFamily(const M& model, ModeRun run);

// The model types the library trains: the built-in ones and a custom model's adapters.
#define CORRAL_FOR_EACH_LINEAR_MODEL(X) X(LogisticModel) X(HingeModel) X(SquaredModel)
#define CORRAL_FOR_EACH_TRAINED_MODEL(X)                                              \
  CORRAL_FOR_EACH_LINEAR_MODEL(X) X(SoftmaxModel) X(MfModel) X(MlpModel)             \
  X(ErasedModel<Task::kRegression>) X(ErasedModel<Task::kBinary>)

// Explicit instantiation of family entry F for model M (in the family's .cc).
#define CORRAL_INSTANTIATE_FAMILY(F, M) template TrainResult F<M>(const M&, ModeRun);

}  // namespace corral::internal
