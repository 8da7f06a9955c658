// dpsgd and local, compiled for every trained model (run_mode.h).
#include "engine/src/modes/run_mode.h"

#include <utility>

#include "engine/src/modes/dpsgd.h"

namespace corral::internal {

template <typename M>
TrainResult RunDpsgdFamily(const M& model, ModeRun run) {
  return Coordinate<M, DpsgdMode<M>>(model, run.test, std::move(run.plan), run.lr_searched, run.l2,
                                      run.observer);
}

#define CORRAL_INSTANTIATE(M) CORRAL_INSTANTIATE_FAMILY(RunDpsgdFamily, M)
CORRAL_FOR_EACH_TRAINED_MODEL(CORRAL_INSTANTIATE)

}  // namespace corral::internal
