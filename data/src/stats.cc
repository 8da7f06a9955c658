// DatasetStats: one pass over the row offsets and the labels.
#include <corral/stats.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace corral {

DatasetStats ComputeStats(const Dataset& data, std::size_t max_distinct_labels) {
  DatasetStats s;
  s.rows = data.rows();
  s.features = data.num_features();
  s.nnz = data.nnz();
  s.dense = data.is_dense();
  if (const RatingsInfo* m = data.ratings(); m != nullptr) {
    s.users = m->num_users;
    s.items = m->num_items;
  }
  if (s.rows == 0) return s;
  s.min_row_nnz = data.row_ptr()[1] - data.row_ptr()[0];
  for (std::size_t r = 0; r < s.rows; ++r) {
    const std::size_t n = data.row_ptr()[r + 1] - data.row_ptr()[r];
    s.min_row_nnz = std::min(s.min_row_nnz, n);
    s.max_row_nnz = std::max(s.max_row_nnz, n);
  }
  s.mean_row_nnz = static_cast<double>(s.nnz) / static_cast<double>(s.rows);

  // Counting stops growing the table past the limit but keeps the distinct count exact up to
  // limit + 1, which is all the caller needs to know ("more than the limit").
  std::unordered_map<float, std::size_t> counts;
  bool too_many = false;
  double sum = 0, sum2 = 0;
  s.label_min = s.label_max = data.Label(0);
  for (float y : data.labels()) {
    s.label_min = std::min(s.label_min, y);
    s.label_max = std::max(s.label_max, y);
    sum += y;
    sum2 += static_cast<double>(y) * y;
    if (!too_many) {
      ++counts[y];
      too_many = counts.size() > max_distinct_labels;
    }
  }
  const auto n = static_cast<double>(s.rows);
  s.label_mean = sum / n;
  s.label_stddev = std::sqrt(std::max(0.0, sum2 / n - s.label_mean * s.label_mean));
  if (too_many) {
    std::unordered_map<float, char> distinct;
    for (float y : data.labels()) distinct.emplace(y, 0);
    s.distinct_labels = distinct.size();
  } else {
    s.distinct_labels = counts.size();
    s.label_counts.insert(counts.begin(), counts.end());
  }
  return s;
}

}  // namespace corral
