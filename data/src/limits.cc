// Size limits (see <corral/limits.h>).
#include <corral/limits.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace corral {

std::uint64_t MemoryLimitBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  std::uint64_t limit = pages > 0 && page_size > 0
                            ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size)
                            : std::numeric_limits<std::uint64_t>::max();
  struct rlimit address_space {};
  if (getrlimit(RLIMIT_AS, &address_space) == 0 && address_space.rlim_cur != RLIM_INFINITY) {
    limit = std::min<std::uint64_t>(limit, address_space.rlim_cur);
  }
  return limit;
}

std::string FormatBytes(double bytes) {
  static constexpr const char* kUnits[] = {"bytes", "KB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
  std::size_t unit = 0;
  while (bytes >= 1000 && unit + 1 < std::size(kUnits)) {
    bytes /= 1000;
    ++unit;
  }
  char text[48];
  if (!std::isfinite(bytes)) return "more bytes than a double counts";
  std::snprintf(text, sizeof text, bytes < 10 && unit > 0 ? "%.1f %s" : "%.0f %s", bytes,
                kUnits[unit]);
  return text;
}

void CheckMemory(std::initializer_list<double> factors, ErrorCode code, std::string_view source,
                 std::string_view what) {
  double bytes = 1;
  for (const double f : factors) bytes *= f;
  const std::uint64_t limit = MemoryLimitBytes();
  if (!(bytes <= static_cast<double>(limit))) {
    throw Error(code, std::string(source) + ": " + std::string(what) + " would need " +
                          FormatBytes(bytes) + "; this machine has " +
                          FormatBytes(static_cast<double>(limit)));
  }
}

void CheckFeatureCount(std::uint64_t count, ErrorCode code, std::string_view source) {
  if (count > kMaxFeatures) {
    throw Error(code, std::string(source) + ": " + std::to_string(count) +
                          " features, expected at most 2^32 = " + std::to_string(kMaxFeatures) +
                          " (feature indices are 32-bit)");
  }
}

void CheckIndexable(double num_params, ErrorCode code, std::string_view source,
                    std::string_view what) {
  if (!(num_params <= static_cast<double>(kMaxFeatures))) {
    char count[32];
    std::snprintf(count, sizeof count, "%.0f", num_params);
    throw Error(code, std::string(source) + ": " + std::string(what) + " has " + count +
                          " parameters, expected at most 2^32 = " + std::to_string(kMaxFeatures) +
                          " (gradient indices are 32-bit)");
  }
}

}  // namespace corral
