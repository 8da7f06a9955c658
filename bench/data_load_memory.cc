// Peak memory of one load: prints, as one JSON line, the resident set before loading PATH,
// the peak during the load, their difference, and the bytes the loaded dataset's arrays
// occupy, so the loader's overhead over the data itself can be read off.
//
// The peak is the kernel's high-water mark (VmHWM in /proc/self/status, reset just before the
// load through /proc/self/clear_refs) rather than getrusage's ru_maxrss, which survives
// execve and so reports the parent's peak when a big process (Python with scikit-learn)
// starts this one.
//
//   build/bench/corral_data_memory PATH [threads]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>

#include <corral/load.h>

namespace {

// A "VmRSS:" / "VmHWM:" line of /proc/self/status, in KiB.
long StatusKb(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field, 0) == 0) return std::atol(line.c_str() + std::strlen(field));
  }
  return 0;
}

void ResetPeak() { std::ofstream("/proc/self/clear_refs") << "5"; }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PATH [threads]\n", argv[0]);
    return 2;
  }
  try {
    const int threads = argc > 2 ? std::atoi(argv[2]) : 0;
    ResetPeak();
    const long before = StatusKb("VmRSS:");
    const auto start = std::chrono::steady_clock::now();
    const corral::Dataset d = corral::LoadDataset(argv[1], {.threads = threads});
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const long after = StatusKb("VmHWM:");
    // What the arrays occupy: for a dense set, its row offsets and column array too.
    const double bytes = static_cast<double>(d.row_ptr().size_bytes() + d.index().size_bytes() +
                                             d.value().size_bytes() + d.labels().size_bytes());
    std::printf(
        "{\"path\":\"%s\",\"threads\":%d,\"seconds\":%.4f,\"rss_before_mib\":%.1f,"
        "\"peak_rss_mib\":%.1f,\"load_peak_mib\":%.1f,\"dataset_mib\":%.1f,"
        "\"budget_mib\":%.1f}\n",
        argv[1], threads, seconds, static_cast<double>(before) / 1024,
        static_cast<double>(after) / 1024, static_cast<double>(after - before) / 1024,
        bytes / (1 << 20), 1.5 * bytes / (1 << 20) + 32);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
