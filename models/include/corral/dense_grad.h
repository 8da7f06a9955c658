// corral::DenseGrad: a gradient over every parameter, for dense models (the MLP).
//
// Thread safety: owner-only; sized once per worker.
#pragma once

#include <cstddef>
#include <vector>

namespace corral {

struct DenseGrad {
  explicit DenseGrad(std::size_t size = 0) : grad(size, 0.0f) {}

  std::vector<float> grad;  // d(mean data loss)/dw
  float l2 = 0;             // plain L2: the step adds l2 * w
};

}  // namespace corral
