// Synthetic sparse binary classification with a planted linear model.
//
// Each row has `nnz_per_row` distinct features drawn with Zipf(`zipf`) popularity over
// `features` (0 = uniform), values uniform in [0, 1) scaled to unit L2 norm; the label is
// sign(<w*, x>) with w* ~ N(0, 1) and flipped with probability `label_noise`. The built-in
// default set of `corral train` and many tests use it. Deterministic for a seed.
#pragma once

#include <cstddef>
#include <cstdint>

#include <corral/dataset.h>

namespace corral {

struct SyntheticSpec {
  std::size_t rows = 100'000;
  std::size_t features = 20'000;
  std::size_t nnz_per_row = 20;
  double zipf = 1.0;
  double label_noise = 0.05;
  std::uint64_t seed = 42;
};

struct SyntheticSplit {
  Dataset train;
  Dataset test;
};

// Generates spec.rows training rows and `test_rows` test rows from the same planted model.
SyntheticSplit MakeSyntheticClassification(const SyntheticSpec& spec, std::size_t test_rows);

}  // namespace corral
