// corral::ClassMap: the class labels of a multiclass training set, as dense ids 0..K-1.
//
// Labels are floats in files (1..105 for sector, 0..9 for Fashion-MNIST); models work with
// ids. The map is sorted, so it is the same for a train set whatever its row order.
//
// Thread safety: immutable after construction.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

#include <corral/dataset.h>

namespace corral {

class ClassMap {
 public:
  ClassMap() = default;
  explicit ClassMap(std::vector<float> labels) : labels_(std::move(labels)) {
    std::sort(labels_.begin(), labels_.end());
    labels_.erase(std::unique(labels_.begin(), labels_.end()), labels_.end());
  }
  static ClassMap Of(const Dataset& data) {
    const std::span<const float> l = data.labels();
    return ClassMap(std::vector<float>(l.begin(), l.end()));
  }

  std::size_t size() const { return labels_.size(); }
  const std::vector<float>& labels() const { return labels_; }
  float Label(std::size_t id) const { return labels_[id]; }

  // The id of `label`, or -1 when the training set never had it.
  int Id(float label) const {
    const auto it = std::lower_bound(labels_.begin(), labels_.end(), label);
    return it != labels_.end() && *it == label ? static_cast<int>(it - labels_.begin()) : -1;
  }

 private:
  std::vector<float> labels_;
};

}  // namespace corral
