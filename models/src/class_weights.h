// The check of a classifier's per-class loss weights (--class-weight), shared by the models
// that take them.
#pragma once

#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include <corral/error.h>

namespace corral::internal {

// Throws kBadConfig unless `weights` holds one finite weight >= 0 per class.
inline void CheckClassWeights(std::string_view model, std::span<const float> weights,
                              std::size_t classes) {
  if (weights.size() != classes) {
    throw Error(ErrorCode::kBadConfig, std::string(model) + ": " + std::to_string(weights.size()) +
                                           " class weights for " + std::to_string(classes) +
                                           " classes");
  }
  for (const float w : weights) {
    if (!std::isfinite(w) || w < 0) {
      throw Error(ErrorCode::kBadConfig, std::string(model) + ": class weights must be finite "
                                                              "numbers >= 0, got " + std::to_string(w));
    }
  }
}

}  // namespace corral::internal
