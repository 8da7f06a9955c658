// buckwild at every pair of data and model widths, compiled for the linear models (run_mode.h).
#include "engine/src/modes/run_mode.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include <corral/error.h>

#include "engine/src/modes/buckwild.h"

namespace corral::internal {

template <typename M>
TrainResult RunBuckwildFamily(const M& model, ModeRun run) {
  const auto start = [&]<typename D, typename T>() {
    return Coordinate<M, BuckwildMode<M, D, T>>(model, run.test, std::move(run.plan), run.lr_searched,
                                               run.l2, run.observer);
  };
  const TrainConfig& config = run.plan.config;
  if (config.bits == 8 && config.model_bits == 8) {
    // Products of two 8-bit grid values are at most 127^2; their int32 sum over a row
    // (buckwild.h) overflows past 2^31 / 127^2 stored values.
    constexpr std::size_t kMaxRowNnz = (std::size_t{1} << 31) / (127 * 127);
    const Dataset& train = run.plan.train;
    if (train.max_row_nnz() > kMaxRowNnz) {
      throw Error(ErrorCode::kBadConfig,
                  "--bits 8 --model-bits 8: " + train.name() + " has rows of " +
                      std::to_string(train.max_row_nnz()) + " values, but 8-bit x 8-bit dot "
                      "products sum in int32 and overflow past " + std::to_string(kMaxRowNnz) +
                      " values per row; use --model-bits 16 or --bits 16");
    }
    return start.template operator()<std::int8_t, std::int8_t>();
  }
  if (config.bits == 8) return start.template operator()<std::int8_t, std::int16_t>();
  if (config.model_bits == 8) return start.template operator()<std::int16_t, std::int8_t>();
  return start.template operator()<std::int16_t, std::int16_t>();
}

#define CORRAL_INSTANTIATE(M) CORRAL_INSTANTIATE_FAMILY(RunBuckwildFamily, M)
CORRAL_FOR_EACH_LINEAR_MODEL(CORRAL_INSTANTIATE)

}  // namespace corral::internal
