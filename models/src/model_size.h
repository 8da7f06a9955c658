// The size check every built-in model runs before its first allocation: a shape from a flag
// (--features, --rank, --hidden) or from a model file's header must neither overflow nor need
// more memory than the machine has (<corral/limits.h>).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <corral/error.h>
#include <corral/limits.h>

namespace corral::internal {

// How a model addresses its gradient: SparseGrad entries carry uint32 indices, so a model
// written with them must have at most 2^32 parameters; a dense gradient has no such limit.
enum class GradIndex { kUint32, kSizeT };

// Returns `num_params` (computed by the caller in double precision, so that a hostile shape
// cannot wrap around) as a size_t once it is known to fit. `shape` names it for the message
// ("mf: rank 1000000000 with 3 users and 4 items"). Counted per parameter: the shared value,
// its per-coordinate L2 weight, and a worker's snapshot or gradient: three floats at least.
inline std::size_t CheckedNumParams(double num_params, std::string_view shape, GradIndex index) {
  if (index == GradIndex::kUint32) {
    CheckIndexable(num_params, ErrorCode::kBadConfig, shape, "the model");
  }
  CheckMemory({num_params, 3 * sizeof(float)}, ErrorCode::kBadConfig, shape,
              "the model's parameters");
  return static_cast<std::size_t>(num_params);
}

}  // namespace corral::internal
