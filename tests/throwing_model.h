// A built-in model that fails on purpose: the white-box tests of every mode's failure path.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <stdexcept>

#include <corral/linear.h>

namespace corral::testing {

// Logistic regression that throws on its `throw_at`-th gradient (counted over all workers).
class ThrowingModel : public LogisticModel {
 public:
  ThrowingModel(const Dataset& train, int throw_at, std::atomic<int>& calls)
      : LogisticModel(train, 1e-3f), throw_at_(throw_at), calls_(&calls) {}

  void Gradient(Params w, const Dataset& data, std::span<const std::uint32_t> rows,
                SparseGrad& g, Workspace& ws) const {
    // relaxed: only the count matters, not its order with anything else.
    if (calls_->fetch_add(1, std::memory_order_relaxed) == throw_at_) {
      throw std::runtime_error("boom in the model");
    }
    LogisticModel::Gradient(w, data, rows, g, ws);
  }

 private:
  int throw_at_;
  std::atomic<int>* calls_;
};

}  // namespace corral::testing
