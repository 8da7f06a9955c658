// dcd, ecd and choco, compiled for every trained model (run_mode.h).
#include "engine/src/modes/run_mode.h"

#include "engine/src/modes/compressed_gossip.h"
#include "engine/src/modes/registry.h"

namespace corral::internal {

constinit const ModeRunner kCompressedGossipFamily = RunnerOf<OneMode<CompressedGossipMode>>();

}  // namespace corral::internal
