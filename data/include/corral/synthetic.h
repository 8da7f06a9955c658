// Synthetic data with planted models: sparse or dense classification (binary or multiclass),
// regression, and low-rank ratings. Deterministic for a seed on every platform (only
// corral::Rng and arithmetic are used).
//
// Classification rows: `nnz_per_row` distinct features drawn with Zipf(`zipf`) popularity
// over `features` (0 = uniform), values uniform in (0, 1] scaled to unit L2 norm; or, with
// `dense`, every feature with values N(0, 1/features) (so |x| ~ 1 too). Labels: binary
// sign(<w*, x>) in {-1, +1} with w* ~ N(0, I); with classes C > 2, argmax_c <w*_c, x> in
// {0 .. C-1}. `label_noise` flips a binary label, or replaces a class by a uniformly chosen
// other one, with that probability. The built-in default set of `corral train` and many
// tests use MakeSyntheticClassification.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <corral/dataset.h>

namespace corral {

struct SyntheticSpec {
  std::size_t rows = 100'000;
  std::size_t features = 20'000;
  std::size_t nnz_per_row = 20;  // ignored when dense
  double zipf = 1.0;             // ignored when dense
  double label_noise = 0.05;
  std::uint64_t seed = 42;
  bool dense = false;
  std::size_t classes = 2;
};

struct SyntheticSplit {
  Dataset train;
  Dataset test;
  // The planted model: w* (features floats), or the C class vectors row-major (classes x
  // features).
  std::vector<float> truth;
};

// Generates spec.rows training rows and `test_rows` test rows from the same planted model.
// Throws corral::Error (kBadConfig) for an impossible spec.
SyntheticSplit MakeSyntheticClassification(const SyntheticSpec& spec, std::size_t test_rows);

// Regression: rows as for classification, y = <w*, x> + noise * N(0, 1).
struct RegressionSpec {
  std::size_t rows = 100'000;
  std::size_t features = 1'000;
  std::size_t nnz_per_row = 20;
  double zipf = 0.0;
  double noise = 0.1;  // standard deviation of the additive noise
  std::uint64_t seed = 42;
  bool dense = false;
};

SyntheticSplit MakeSyntheticRegression(const RegressionSpec& spec, std::size_t test_rows);

// Low-rank ratings: `ratings` distinct (user, item) pairs drawn uniformly, rating =
// 3 + <u_user, v_item> + noise * N(0, 1), factor entries N(0, rank^-1/2) so that the
// inner product has unit variance. Users are numbered 1..users and items 1..items in the
// files (MovieLens style); each rating lands in the test set with probability test_fraction.
struct RatingsSpec {
  std::size_t users = 1'000;
  std::size_t items = 1'000;
  std::size_t rank = 10;
  std::size_t ratings = 100'000;
  double noise = 0.1;
  double test_fraction = 0.0;
  std::uint64_t seed = 42;
};

struct SyntheticRatings {
  Dataset train;  // ratings sets (Dataset::ratings() holds the id mapping)
  Dataset test;   // mapped with the train set's ids, unseen ones after them
  float mean = 3.0f;
  std::vector<float> user_factors;  // users x rank, row u - 1 for user id u
  std::vector<float> item_factors;  // items x rank
};

SyntheticRatings MakeSyntheticRatings(const RatingsSpec& spec);

}  // namespace corral
