// Size limits (see <corral/limits.h>).
#include <corral/limits.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace corral {
namespace {

struct MemoryLimit {
  std::uint64_t bytes;
  bool address_space;  // the limit is ulimit -v's, not the physical memory
};

MemoryLimit FindMemoryLimit() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  MemoryLimit limit{pages > 0 && page_size > 0
                        ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size)
                        : std::numeric_limits<std::uint64_t>::max(),
                    false};
  struct rlimit address_space {};
  if (getrlimit(RLIMIT_AS, &address_space) == 0 && address_space.rlim_cur != RLIM_INFINITY &&
      address_space.rlim_cur < limit.bytes) {
    limit = {static_cast<std::uint64_t>(address_space.rlim_cur), true};
  }
  return limit;
}

}  // namespace

std::uint64_t MemoryLimitBytes() { return FindMemoryLimit().bytes; }

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
  const MemoryLimit limit = FindMemoryLimit();
  if (!(bytes <= static_cast<double>(limit.bytes))) {
    const std::string have = FormatBytes(static_cast<double>(limit.bytes));
    throw Error(code, std::string(source) + ": " + std::string(what) + " would need " +
                          FormatBytes(bytes) + "; " +
                          (limit.address_space ? "this process may use " + have + " (ulimit -v)"
                                               : "this machine has " + have));
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
