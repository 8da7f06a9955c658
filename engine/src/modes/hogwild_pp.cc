// hogwild++, compiled for every trained model (run_mode.h).
#include "engine/src/modes/run_mode.h"

#include "engine/src/modes/hogwild_pp.h"
#include "engine/src/modes/registry.h"

namespace corral::internal {

constinit const ModeRunner kHogwildPPFamily = RunnerOf<OneMode<HogwildPPMode>>();

}  // namespace corral::internal
