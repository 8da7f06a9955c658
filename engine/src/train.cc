#include <corral/train.h>

#include <sys/resource.h>

#include <array>
#include <cmath>
#include <string>
#include <thread>
#include <utility>

#include <corral/error.h>

#include "engine/src/hogwild.h"
#include "engine/src/model_registry.h"

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

constexpr std::array<std::pair<std::string_view, Algorithm>, 1> kAlgorithms{{
    {"hogwild", Algorithm::kHogwild},
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

template <typename Enum, std::size_t N>
std::string_view NameOf(Enum value, const std::array<std::pair<std::string_view, Enum>, N>& names) {
  for (const auto& [spelling, v] : names) {
    if (v == value) return spelling;
  }
  return "?";
}

[[noreturn]] void BadConfig(const std::string& message) {
  throw Error(ErrorCode::kBadConfig, message);
}

}  // namespace

std::string_view ToString(Algorithm a) { return NameOf(a, kAlgorithms); }
std::string_view ToString(ModelKind m) { return NameOf(m, kModels); }
std::string_view ToString(Pin p) { return NameOf(p, kPins); }
Algorithm ParseAlgorithm(std::string_view name) { return ParseName("algorithm", name, kAlgorithms); }
ModelKind ParseModel(std::string_view name) { return ParseName("model", name, kModels); }
Pin ParsePin(std::string_view name) { return ParseName("pin policy", name, kPins); }

void TrainConfig::Validate() const {
  if (l2 && (!std::isfinite(*l2) || *l2 < 0)) BadConfig("--l2 must be a finite number >= 0");
  if (threads < 0) BadConfig("--threads must be >= 0 (0 means all hardware threads)");
  if (epochs < 1) BadConfig("--epochs must be >= 1");
  if (batch < 1) BadConfig("--batch must be >= 1");
  if (rank < 1) BadConfig("--rank must be >= 1");
  for (const int width : hidden) {
    if (width < 1) BadConfig("--hidden widths must be >= 1");
  }
  if (!std::isfinite(lr) || lr < 0) BadConfig("--lr must be a finite number >= 0 (0 picks one)");
  if (!std::isfinite(lr_decay) || lr_decay <= 0 || lr_decay > 1) {
    BadConfig("--lr-decay must be in (0, 1]");
  }
}

namespace internal {

double PeakRssMb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace internal

TrainResult Train(const Dataset& train, const Dataset* test, const TrainConfig& config,
                  const TrainObserver& observer) {
  config.Validate();
  if (train.rows() == 0) {
    throw Error(ErrorCode::kBadInput, train.name() + ": the training set has no rows");
  }
  int threads = config.threads;
  if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // Every worker needs at least one row of its own.
  threads = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(threads), train.rows()));
  const float l2 = config.l2.value_or(1.0f / static_cast<float>(train.rows()));

  return internal::WithTrainingModel(config, train, l2, [&](const auto& model) {
    TrainResult result = internal::RunHogwild(model, train, test, config, threads, l2, observer);
    result.model = internal::Describe(config.model, model, train);
    return result;
  });
}

}  // namespace corral
