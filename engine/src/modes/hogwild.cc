// hogwild (free-running or --schedule seeded) and locked, compiled for every trained model (run_mode.h).
#include "engine/src/modes/run_mode.h"

#include <utility>

#include "engine/src/modes/hogwild.h"
#include "engine/src/modes/hogwild_seeded.h"
#include "engine/src/modes/registry.h"

namespace corral::internal {
namespace {

struct HogwildFamily {
  template <typename M>
  static TrainResult Run(const M& model, ModeRun run) {
    if (run.plan.config.algorithm == Algorithm::kLocked) {
      return CoordinateMode<HogwildMode<M, true>>(model, std::move(run));
    }
    if (run.plan.config.seeded_tau) return CoordinateMode<SeededHogwildMode<M>>(model, std::move(run));
    return CoordinateMode<HogwildMode<M, false>>(model, std::move(run));
  }
};

}  // namespace

constinit const ModeRunner kHogwildFamily = RunnerOf<HogwildFamily>();

}  // namespace corral::internal
