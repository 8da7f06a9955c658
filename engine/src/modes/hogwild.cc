// hogwild and locked, compiled for every trained model (run_mode.h).
#include "engine/src/modes/run_mode.h"

#include <utility>

#include "engine/src/modes/hogwild.h"

namespace corral::internal {

template <typename M>
TrainResult RunHogwildFamily(const M& model, ModeRun run) {
  if (run.plan.config.algorithm == Algorithm::kLocked) {
    return Coordinate<M, HogwildMode<M, true>>(model, run.test, std::move(run.plan), run.lr_searched,
                                              run.l2, run.observer);
  }
  return Coordinate<M, HogwildMode<M, false>>(model, run.test, std::move(run.plan), run.lr_searched,
                                             run.l2, run.observer);
}

#define CORRAL_INSTANTIATE(M) CORRAL_INSTANTIATE_FAMILY(RunHogwildFamily, M)
CORRAL_FOR_EACH_TRAINED_MODEL(CORRAL_INSTANTIATE)

}  // namespace corral::internal
