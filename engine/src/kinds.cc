// The spellings of the kinds in <corral/kinds.h> (and of StopReason, <corral/train.h>): one
// table per enum, read both ways (ToString and Parse*). A file of its own so that the model-file
// reader (model_file.cc, and its fuzz target) has these names without the modes train.cc links.
#include <corral/kinds.h>

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include <corral/error.h>
#include <corral/train.h>

#include "engine/src/modes/registry.h"

namespace corral {
namespace {

template <typename Enum, std::size_t N>
Enum ParseName(std::string_view what, std::string_view name,
               const std::array<std::pair<std::string_view, Enum>, N>& names) {
  std::string valid;
  for (const auto& [spelling, value] : names) {
    if (spelling == name) return value;
    valid += (valid.empty() ? "" : ", ") + std::string(spelling);
  }
  throw Error(ErrorCode::kBadConfig,
              "unknown " + std::string(what) + " '" + std::string(name) + "' (expected one of: " +
                  valid + ")");
}

// The algorithms' names: auto, then the modes' from the registry (modes/registry.h).
constexpr auto kAlgorithms = [] {
  std::array<std::pair<std::string_view, Algorithm>, internal::kModes.size() + 1> names{};
  names[0] = {"auto", Algorithm::kAuto};
  for (std::size_t i = 0; i < internal::kModes.size(); ++i) {
    names[i + 1] = {internal::kModes[i].name, internal::kModes[i].algorithm};
  }
  return names;
}();
constexpr std::array<std::pair<std::string_view, MixOrder>, 2> kMixOrders{{
    {"mix-then-step", MixOrder::kMixThenStep},
    {"step-then-mix", MixOrder::kStepThenMix},
}};
constexpr std::array<std::pair<std::string_view, Rounding>, 2> kRoundings{{
    {"stochastic", Rounding::kStochastic},
    {"nearest", Rounding::kNearest},
}};
constexpr std::array<std::pair<std::string_view, StopReason>, 6> kStopReasons{{
    {"epochs", StopReason::kEpochs},
    {"target", StopReason::kTarget},
    {"time-limit", StopReason::kTimeLimit},
    {"cancelled", StopReason::kCancelled},
    {"observer", StopReason::kObserver},
    {"early-stop", StopReason::kEarlyStop},
}};
constexpr std::array<std::pair<std::string_view, ModelKind>, 6> kModels{{
    {"logistic", ModelKind::kLogistic},
    {"hinge", ModelKind::kHinge},
    {"squared", ModelKind::kSquared},
    {"softmax", ModelKind::kSoftmax},
    {"mf", ModelKind::kMf},
    {"mlp", ModelKind::kMlp},
}};
constexpr std::array<std::pair<std::string_view, Pin>, 3> kPins{{
    {"compact", Pin::kCompact},
    {"scatter", Pin::kScatter},
    {"none", Pin::kNone},
}};
constexpr std::array<std::pair<std::string_view, Shuffle>, 4> kShuffles{{
    {"auto", Shuffle::kAuto},
    {"epoch", Shuffle::kEpoch},
    {"index", Shuffle::kIndex},
    {"off", Shuffle::kOff},
}};

constexpr std::array<std::pair<std::string_view, Optimizer>, 3> kOptimizers{{
    {"sgd", Optimizer::kSgd},
    {"adagrad", Optimizer::kAdaGrad},
    {"momentum", Optimizer::kMomentum},
}};

constexpr std::array<std::pair<std::string_view, LrSchedule>, 3> kLrSchedules{{
    {"exp", LrSchedule::kExp},
    {"inv-sqrt", LrSchedule::kInvSqrt},
    {"cosine", LrSchedule::kCosine},
}};

constexpr std::array<std::pair<std::string_view, AllReduce>, 2> kAllReduces{{
    {"gather", AllReduce::kGather},
    {"ring", AllReduce::kRing},
}};

constexpr std::array<std::pair<std::string_view, Metric>, 4> kMetrics{{
    {"loss", Metric::kLoss},
    {"acc", Metric::kAccuracy},
    {"auc", Metric::kAuc},
    {"rmse", Metric::kRmse},
}};

template <typename Enum, std::size_t N>
std::string_view NameOf(Enum value, const std::array<std::pair<std::string_view, Enum>, N>& names) {
  for (const auto& [spelling, v] : names) {
    if (v == value) return spelling;
  }
  return "?";
}

}  // namespace

std::string_view ToString(Algorithm a) { return NameOf(a, kAlgorithms); }
std::string_view ToString(ModelKind m) { return NameOf(m, kModels); }
std::string_view ToString(Pin p) { return NameOf(p, kPins); }
std::string_view ToString(Rounding r) { return NameOf(r, kRoundings); }
std::string_view ToString(MixOrder m) { return NameOf(m, kMixOrders); }
MixOrder ParseMixOrder(std::string_view name) { return ParseName("mix order", name, kMixOrders); }
std::string_view ToString(StopReason r) { return NameOf(r, kStopReasons); }
Rounding ParseRounding(std::string_view name) { return ParseName("rounding", name, kRoundings); }
Algorithm ParseAlgorithm(std::string_view name) { return ParseName("algorithm", name, kAlgorithms); }
ModelKind ParseModel(std::string_view name) { return ParseName("model", name, kModels); }
Pin ParsePin(std::string_view name) { return ParseName("pin policy", name, kPins); }
std::string_view ToString(Shuffle s) { return NameOf(s, kShuffles); }
Shuffle ParseShuffle(std::string_view name) { return ParseName("--shuffle value", name, kShuffles); }
std::string_view ToString(Metric m) { return NameOf(m, kMetrics); }
Metric ParseMetric(std::string_view name) { return ParseName("--metric", name, kMetrics); }
std::string_view ToString(Optimizer o) { return NameOf(o, kOptimizers); }
Optimizer ParseOptimizer(std::string_view name) { return ParseName("--optimizer", name, kOptimizers); }
std::string_view ToString(LrSchedule s) { return NameOf(s, kLrSchedules); }
LrSchedule ParseLrSchedule(std::string_view name) {
  return ParseName("--lr-schedule", name, kLrSchedules);
}
std::string_view ToString(AllReduce a) { return NameOf(a, kAllReduces); }
AllReduce ParseAllReduce(std::string_view name) {
  return ParseName("--allreduce", name, kAllReduces);
}

}  // namespace corral
