#include <corral/linear.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include <corral/error.h>

#include "models/src/class_weights.h"
#include "models/src/model_size.h"
#include "models/src/sparse_l2.h"

namespace corral {

float detail::DenseDot(std::span<const float> w, std::span<const float> x) {
  // Sixteen lanes held as registers of the machine's width: GCC lowers a 64-byte generic
  // vector through the stack where the widest register is 32 bytes (AVX2), which took twice
  // as long (standalone, 2,000 features, rows from memory: 1.8-1.9 against 0.7-0.9 us a row). Each
  // lane's operations are the same either way, so are the bits.
  constexpr std::size_t kLanes = 16;
#if defined(__AVX__)
  constexpr std::size_t kPart = 8;
#else
  constexpr std::size_t kPart = 4;
#endif
  constexpr std::size_t kParts = kLanes / kPart;
  typedef float Part __attribute__((vector_size(kPart * sizeof(float))));
  const std::size_t n = std::min(w.size(), x.size());
  Part acc[kParts] = {};
  std::size_t u = 0;
  for (; u + kLanes <= n; u += kLanes) {
    for (std::size_t p = 0; p < kParts; ++p) {
      Part a, b;
      std::memcpy(&a, w.data() + u + p * kPart, sizeof a);
      std::memcpy(&b, x.data() + u + p * kPart, sizeof b);
      acc[p] += a * b;
    }
  }
  float sum = 0;
  for (std::size_t p = 0; p < kParts; ++p) {
    for (std::size_t i = 0; i < kPart; ++i) sum += acc[p][i];
  }
  for (; u < n; ++u) sum += w[u] * x[u];
  return sum;
}

namespace {

void CheckL2(std::string_view model, float l2) {
  if (!std::isfinite(l2) || l2 < 0) {
    throw Error(ErrorCode::kBadConfig, std::string(model) + ": l2 must be a finite number >= 0");
  }
}

}  // namespace

template <typename Loss>
LinearModel<Loss>::LinearModel(std::size_t num_features, float l2)
    : l2_(l2),
      l2_weight_(internal::CheckedNumParams(
                     static_cast<double>(num_features),
                     std::string(kName) + ": " + std::to_string(num_features) + " features",
                     internal::GradIndex::kUint32),
                 l2) {
  CheckL2(kName, l2);
}

template <typename Loss>
LinearModel<Loss>::LinearModel(const Dataset& train, float l2, std::span<const float> class_weight)
    : LinearModel(train.num_features(), l2) {
  l2_weight_ = internal::SparseL2Weights(train, l2);
  if (class_weight.empty()) return;
  internal::CheckClassWeights(kName, class_weight, kClasses);
  std::copy(class_weight.begin(), class_weight.end(), class_weight_.begin());
}

template <typename Loss>
LinearModel<Loss>::LinearModel(const TrainingFacts& train, float l2, std::span<const float> class_weight)
    : LinearModel(train.num_features, l2) {
  l2_weight_ = internal::SparseL2Weights(train.rows_with, train.rows, l2);
  if (class_weight.empty()) return;
  internal::CheckClassWeights(kName, class_weight, kClasses);
  std::copy(class_weight.begin(), class_weight.end(), class_weight_.begin());
}

template class LinearModel<LogisticLoss>;
template class LinearModel<HingeLoss>;
template class LinearModel<SquaredLoss>;

static_assert(Model<LogisticModel>);
static_assert(Model<HingeModel>);
static_assert(Model<SquaredModel>);

}  // namespace corral
