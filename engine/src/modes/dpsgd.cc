// dpsgd and local, compiled for every trained model (run_mode.h).
#include "engine/src/modes/run_mode.h"

#include "engine/src/modes/dpsgd.h"
#include "engine/src/modes/registry.h"

namespace corral::internal {

constinit const ModeRunner kDpsgdFamily = RunnerOf<OneMode<DpsgdMode>>();

}  // namespace corral::internal
