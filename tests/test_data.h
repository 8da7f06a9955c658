// Helpers shared by tests: small generated problems and the shared real datasets.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include <corral/synthetic.h>

namespace corral::testing {

// The folder of real datasets (../shared/data beside the repository, or $CORRAL_DATA_DIR);
// empty when absent, so tests that need it skip.
inline std::filesystem::path SharedDataDir() {
  if (const char* env = std::getenv("CORRAL_DATA_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  const std::filesystem::path dir = std::filesystem::path(CORRAL_SOURCE_DIR) / ".." / "shared" / "data";
  return std::filesystem::exists(dir) ? dir : std::filesystem::path();
}

inline SyntheticSplit SmallProblem(std::uint64_t seed = 7) {
  return MakeSyntheticClassification(
      {.rows = 3000, .features = 300, .nnz_per_row = 12, .zipf = 0.8, .label_noise = 0.05,
       .seed = seed},
      1000);
}

}  // namespace corral::testing
