// Helpers shared by tests: small generated problems and the shared real datasets.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <corral/dataset.h>
#include <corral/ratings_info.h>
#include <corral/rng.h>
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

inline // Ratings of a planted rank-`rank` matrix plus noise, as a ratings Dataset.
Dataset PlantedRatings(std::size_t users, std::size_t items, int rank, std::size_t count,
                       double noise, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> p(users * rank), q(items * rank);
  for (float& v : p) v = rng.UniformFloat() * 2 - 1;
  for (float& v : q) v = rng.UniformFloat() * 2 - 1;
  std::vector<std::uint64_t> row_ptr{0};
  std::vector<std::uint32_t> index;
  std::vector<float> value, label;
  for (std::size_t n = 0; n < count; ++n) {
    const std::size_t u = rng.Below(users), i = rng.Below(items);
    double r = 3.0;
    for (int k = 0; k < rank; ++k) r += p[u * rank + k] * q[i * rank + k];
    r += noise * (rng.Uniform() * 2 - 1) * std::sqrt(3.0);  // uniform noise with sd `noise`
    index.push_back(static_cast<std::uint32_t>(u));
    index.push_back(static_cast<std::uint32_t>(users + i));
    value.insert(value.end(), {1.0f, 1.0f});
    row_ptr.push_back(index.size());
    label.push_back(static_cast<float>(r));
  }
  auto info = std::make_shared<RatingsInfo>();
  info->num_users = info->known_users = users;
  info->num_items = info->known_items = items;
  for (std::size_t u = 0; u < users; ++u) info->user_ids.push_back(u + 1);
  for (std::size_t i = 0; i < items; ++i) info->item_ids.push_back(i + 1);
  return Dataset(row_ptr, index, value, label, users + items, "planted-ratings").WithRatings(info);
}

}  // namespace corral::testing
