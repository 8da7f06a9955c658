// sync and qsgd, compiled for every trained model (run_mode.h).
#include "engine/src/modes/run_mode.h"

#include "engine/src/modes/sync_sgd.h"
#include "engine/src/modes/registry.h"

namespace corral::internal {

constinit const ModeRunner kSyncFamily = RunnerOf<OneMode<SyncMode>>();

}  // namespace corral::internal
