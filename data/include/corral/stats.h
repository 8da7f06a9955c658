// Summary statistics of a dataset: what `corral data stats` prints.
#pragma once

#include <cstddef>
#include <map>

#include <corral/dataset.h>

namespace corral {

struct DatasetStats {
  std::size_t rows = 0;
  std::size_t features = 0;  // num_features(): largest index seen, or the given dimension
  std::size_t nnz = 0;       // stored entries, explicit zeros included
  std::size_t min_row_nnz = 0;
  std::size_t max_row_nnz = 0;
  double mean_row_nnz = 0;
  bool dense = false;
  // Label -> rows with it, when there are at most `max_distinct_labels` distinct labels
  // (classification); empty otherwise (regression targets, ratings), see the summary below.
  std::map<float, std::size_t> label_counts;
  std::size_t distinct_labels = 0;
  float label_min = 0, label_max = 0;
  double label_mean = 0, label_stddev = 0;
  // Ratings sets: the id mapping's sizes.
  std::size_t users = 0, items = 0;
};

DatasetStats ComputeStats(const Dataset& data, std::size_t max_distinct_labels = 1000);

}  // namespace corral
