#include "engine/src/channel/link.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <span>

#include <corral/error.h>

namespace corral::internal {
namespace {

struct Unit {
  std::string_view name;
  double scale;  // to seconds, or to bytes per second
};
constexpr Unit kTimeUnits[] = {{"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}};
// Network rates use decimal prefixes: 10Mbit/s = 10^7 bit/s = 1.25 * 10^6 bytes/s.
constexpr Unit kRateUnits[] = {{"bit", 1.0 / 8}, {"Kbit", 1e3 / 8}, {"Mbit", 1e6 / 8}, {"Gbit", 1e9 / 8}};

[[noreturn]] void Bad(std::string_view spec, const std::string& what) {
  throw Error(ErrorCode::kBadConfig, "link spec '" + std::string(spec) + "': " + what);
}

// "<number><unit>" -> number * unit scale. `rate` values must be > 0 and may end in "/s";
// times may be 0 and may then omit the unit.
double ParseQuantity(std::string_view spec, std::string_view key, std::string_view text,
                     std::span<const Unit> units, bool rate) {
  std::string expected;
  for (const Unit& u : units) expected += (expected.empty() ? "" : ", ") + std::string(u.name);
  const std::string example = rate ? "10Mbit" : "5ms";
  const std::string bad = std::string(key) + " '" + std::string(text) + "'";
  double value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  const auto [rest, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || rest == begin) {
    Bad(spec, bad + " is not a number with a unit (expected e.g. " + std::string(key) + "=" +
                  example + ")");
  }
  if (!std::isfinite(value) || value < 0 || (rate && value == 0)) {
    Bad(spec, bad + " must be " + (rate ? "> 0" : ">= 0"));
  }
  std::string_view unit(rest, static_cast<std::size_t>(end - rest));
  if (rate && unit.ends_with("/s")) unit.remove_suffix(2);
  if (unit.empty() && !rate && value == 0) return 0;
  for (const Unit& u : units) {
    if (u.name == unit) return value * u.scale;
  }
  Bad(spec, bad + (unit.empty() ? " needs a unit" : " has unknown unit '" + std::string(unit) + "'") +
                " (expected one of: " + expected + (rate ? ", per second" : "") + ")");
}

// `value` in the largest unit that keeps it >= 1, e.g. 0.005 s -> "5ms".
std::string Format(double value, std::span<const Unit> units) {
  const Unit* pick = &units[0];
  for (const Unit& u : units) {
    if (value >= u.scale) pick = &u;
  }
  char text[64];
  std::snprintf(text, sizeof text, "%.15g%.*s", value / pick->scale,
                static_cast<int>(pick->name.size()), pick->name.data());
  return text;
}

}  // namespace

std::string LinkSpec::ToString() const {
  std::string out = "latency=" + Format(latency_s, kTimeUnits);
  if (std::isfinite(bandwidth_bytes_per_s)) out += ",bandwidth=" + Format(bandwidth_bytes_per_s, kRateUnits);
  if (nic_bytes_per_s > 0) out += ",nic=" + Format(nic_bytes_per_s, kRateUnits);
  return out;
}

LinkSpec ParseLinkSpec(std::string_view spec) {
  if (spec.empty()) Bad(spec, "empty (expected e.g. latency=5ms,bandwidth=10Mbit[,nic=1Gbit])");
  LinkSpec out;
  bool seen_latency = false, seen_bandwidth = false, seen_nic = false;
  std::string_view rest = spec;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      Bad(spec, "'" + std::string(item) + "' is not key=value (keys: latency, bandwidth, nic)");
    }
    const std::string_view key = item.substr(0, eq);
    const std::string_view value = item.substr(eq + 1);
    bool* seen = nullptr;
    if (key == "latency") {
      seen = &seen_latency;
      out.latency_s = ParseQuantity(spec, key, value, kTimeUnits, /*rate=*/false);
    } else if (key == "bandwidth") {
      seen = &seen_bandwidth;
      out.bandwidth_bytes_per_s = ParseQuantity(spec, key, value, kRateUnits, /*rate=*/true);
    } else if (key == "nic") {
      seen = &seen_nic;
      out.nic_bytes_per_s = ParseQuantity(spec, key, value, kRateUnits, /*rate=*/true);
    } else {
      Bad(spec, "unknown key '" + std::string(key) + "' (expected one of: latency, bandwidth, nic)");
    }
    if (*seen) Bad(spec, "'" + std::string(key) + "' given twice");
    *seen = true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

LinkMode ParseLinkMode(std::string_view mode) {
  if (mode == "virtual") return LinkMode::kVirtual;
  if (mode == "realtime") return LinkMode::kRealtime;
  throw Error(ErrorCode::kBadConfig,
              "unknown link mode '" + std::string(mode) + "' (expected one of: virtual, realtime)");
}

LinkModel::LinkModel(const LinkSpec& spec, int workers)
    : latency_s_(spec.latency_s),
      seconds_per_byte_link_(1.0 / spec.bandwidth_bytes_per_s),
      seconds_per_byte_nic_(spec.nic_bytes_per_s > 0 ? 1.0 / spec.nic_bytes_per_s
                                                      : seconds_per_byte_link_),
      link_free_(static_cast<std::size_t>(workers), 0.0) {}

double LinkModel::Send(double t, int to, std::uint64_t bytes) {
  const auto b = static_cast<double>(bytes);
  // The NIC serialises this worker's sends: it starts when both the message and the NIC are ready.
  const double nic_start = std::max(t, nic_free_);
  nic_free_ = nic_start + b * seconds_per_byte_nic_;
  // The wire to `to` starts carrying the message as the NIC starts sending it, once free.
  double& link_free = link_free_[static_cast<std::size_t>(to)];
  const double wire_start = std::max(nic_start, link_free);
  link_free = wire_start + b * seconds_per_byte_link_;
  // The last byte arrives after the slower of the two stages, plus the propagation latency.
  return std::max(nic_free_, link_free) + latency_s_;
}

}  // namespace corral::internal
