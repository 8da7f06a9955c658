// How a mode describes its run (the optional `Describe(TrainResult&)` of the Mode contract,
// coordinator.h): settings for the metrics summary and lines for the run's summary, so that
// the code that reports never asks which algorithm ran.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <string>
#include <utility>

#include <corral/train.h>

namespace corral::internal {

// printf into a std::string.
[[gnu::format(printf, 1, 2)]] inline std::string Printf(const char* format, ...) {
  char buffer[512];
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  return n < 0 ? std::string() : std::string(buffer, std::min<std::size_t>(static_cast<std::size_t>(n), sizeof buffer - 1));
}

// A number in a message or a summary: six significant digits, as printf's %g.
inline std::string Number(double x) { return Printf("%g", x); }

// The last evaluation point (all fields unset when none ran).
inline EvalPoint LastPoint(const TrainResult& r) { return r.history.empty() ? EvalPoint{} : r.history.back(); }

inline void AddSetting(TrainResult& r, std::string key, ModeSetting::Value value) {
  r.settings.push_back({std::move(key), std::move(value)});
}
inline void AddSummaryLine(TrainResult& r, std::string label, std::string text) {
  r.summary.emplace_back(std::move(label), std::move(text));
}

}  // namespace corral::internal
