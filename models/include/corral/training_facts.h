// What a model's training constructor reads of its whole training set, for a run whose ranks
// each hold only their own rows (docs/algorithms.md, "Data by rank"): the ranks add their
// parts' facts (engine/src/cluster) and build the model one process would build from all rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <corral/class_map.h>
#include <corral/dataset.h>

namespace corral {

struct TrainingFacts {
  std::size_t num_features = 0;
  std::size_t rows = 0;
  // Per feature, the rows that store it (explicit zeros included): HOGWILD!'s sparse L2 d_u.
  std::vector<std::uint64_t> rows_with;
  ClassMap classes;  // the labels present (classifiers over several classes)

  // The facts of `train` alone (a rank's part: to be added across ranks).
  static TrainingFacts Of(const Dataset& train) {
    TrainingFacts f{.num_features = train.num_features(), .rows = train.rows(),
                    .rows_with = std::vector<std::uint64_t>(train.num_features(), 0),
                    .classes = ClassMap::Of(train)};
    for (std::size_t r = 0; r < train.rows(); ++r) {
      for (const std::uint32_t u : train.Row(r).index) ++f.rows_with[u];
    }
    return f;
  }
};

}  // namespace corral
