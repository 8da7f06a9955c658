// sync and qsgd, compiled for every trained model (run_mode.h).
#include "engine/src/modes/run_mode.h"

#include <utility>

#include "engine/src/modes/sync_sgd.h"

namespace corral::internal {

template <typename M>
TrainResult RunSyncFamily(const M& model, ModeRun run) {
  return Coordinate<M, SyncMode<M>>(model, run.test, std::move(run.plan), run.lr_searched, run.l2,
                                   run.observer);
}

#define CORRAL_INSTANTIATE(M) CORRAL_INSTANTIATE_FAMILY(RunSyncFamily, M)
CORRAL_FOR_EACH_TRAINED_MODEL(CORRAL_INSTANTIATE)

}  // namespace corral::internal
