// adpsgd, compiled for every trained model (run_mode.h).
#include "engine/src/modes/run_mode.h"

#include "engine/src/modes/adpsgd.h"
#include "engine/src/modes/registry.h"

namespace corral::internal {

constinit const ModeRunner kAdpsgdFamily = RunnerOf<OneMode<AdpsgdMode>>();

}  // namespace corral::internal
