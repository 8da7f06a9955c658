// buckwild at every pair of data and model widths, compiled for the linear models (run_mode.h).
#include "engine/src/modes/run_mode.h"

#include <cstdint>
#include <utility>

#include "engine/src/modes/buckwild.h"

namespace corral::internal {

template <typename M>
TrainResult RunBuckwildFamily(const M& model, ModeRun run) {
  const auto start = [&]<typename D, typename T>() {
    return Coordinate<M, BuckwildMode<M, D, T>>(model, run.test, std::move(run.plan), run.lr_searched,
                                               run.l2, run.observer);
  };
  const TrainConfig& config = run.plan.config;
  if (config.bits == 8 && config.model_bits == 8) return start.template operator()<std::int8_t, std::int8_t>();
  if (config.bits == 8) return start.template operator()<std::int8_t, std::int16_t>();
  if (config.model_bits == 8) return start.template operator()<std::int16_t, std::int8_t>();
  return start.template operator()<std::int16_t, std::int16_t>();
}

#define CORRAL_INSTANTIATE(M) CORRAL_INSTANTIATE_FAMILY(RunBuckwildFamily, M)
CORRAL_FOR_EACH_LINEAR_MODEL(CORRAL_INSTANTIATE)

}  // namespace corral::internal
