#include <corral/linear.h>

#include <cmath>
#include <string>

#include <corral/error.h>

namespace corral {
namespace {

void CheckL2(std::string_view model, float l2) {
  if (!std::isfinite(l2) || l2 < 0) {
    throw Error(ErrorCode::kBadConfig, std::string(model) + ": l2 must be a finite number >= 0");
  }
}

}  // namespace

template <typename Loss>
LinearModel<Loss>::LinearModel(std::size_t num_features, float l2)
    : l2_(l2), l2_weight_(num_features, l2) {
  CheckL2(kName, l2);
}

template <typename Loss>
LinearModel<Loss>::LinearModel(const Dataset& train, float l2)
    : l2_(l2), l2_weight_(train.num_features(), 0.0f) {
  CheckL2(kName, l2);
  std::vector<std::size_t> rows_with(train.num_features(), 0);
  for (std::size_t r = 0; r < train.rows(); ++r) {
    for (const std::uint32_t u : train.Row(r).index) ++rows_with[u];
  }
  const double n = static_cast<double>(train.rows());
  for (std::size_t u = 0; u < rows_with.size(); ++u) {
    if (rows_with[u] > 0) {
      l2_weight_[u] = static_cast<float>(l2 * n / static_cast<double>(rows_with[u]));
    }
  }
}

template class LinearModel<LogisticLoss>;
template class LinearModel<HingeLoss>;
template class LinearModel<SquaredLoss>;

static_assert(Model<LogisticModel>);
static_assert(Model<HingeModel>);
static_assert(Model<SquaredModel>);

}  // namespace corral
