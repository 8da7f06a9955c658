// buckwild at every pair of data and model widths, for the linear models; the other trained
// models are refused (run_mode.h).
#include "engine/src/modes/run_mode.h"

#include <cstdint>
#include <string>
#include <utility>

#include <corral/error.h>

#include "engine/src/modes/buckwild.h"
#include "engine/src/modes/linear_step.h"
#include "engine/src/modes/registry.h"

namespace corral::internal {
namespace {

struct BuckwildFamily {
  template <typename M>
  static TrainResult Run(const M& model, ModeRun run) {
    if constexpr (kIsLinear<M>) {
      return RunLinear(model, std::move(run));
    } else {
      throw Error(ErrorCode::kBadConfig,
                  "buckwild trains the linear models (logistic, hinge, squared), not " +
                      std::string(ToString(run.plan.config.model)));
    }
  }

  template <typename M>
  static TrainResult RunLinear(const M& model, ModeRun run) {
    const auto start = [&]<typename D, typename T>() {
      return CoordinateMode<BuckwildMode<M, D, T>>(model, std::move(run));
    };
    const TrainConfig& config = run.plan.config;
    if (config.bits == 8 && config.model_bits == 8) return start.template operator()<std::int8_t, std::int8_t>();
    if (config.bits == 8) return start.template operator()<std::int8_t, std::int16_t>();
    if (config.model_bits == 8) return start.template operator()<std::int16_t, std::int8_t>();
    return start.template operator()<std::int16_t, std::int16_t>();
  }
};

}  // namespace

constinit const ModeRunner kBuckwildFamily = RunnerOf<BuckwildFamily>();

}  // namespace corral::internal
