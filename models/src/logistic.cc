#include <corral/logistic.h>

#include <corral/error.h>

namespace corral {

LogisticModel::LogisticModel(const Dataset& train, float l2)
    : l2_(l2), l2_weight_(train.num_features(), 0.0f) {
  if (!(l2 >= 0) || !std::isfinite(l2)) {
    throw Error(ErrorCode::kBadConfig, "logistic: l2 must be a finite number >= 0");
  }
  std::vector<std::size_t> rows_with(train.num_features(), 0);
  for (const std::uint32_t u : train.index()) ++rows_with[u];
  const double n = static_cast<double>(train.rows());
  for (std::size_t u = 0; u < rows_with.size(); ++u) {
    if (rows_with[u] > 0) {
      l2_weight_[u] = static_cast<float>(l2 * n / static_cast<double>(rows_with[u]));
    }
  }
}

double LogisticModel::Regularizer(Params w) const {
  double sum = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const double v = w.Load(i);
    sum += v * v;
  }
  return 0.5 * l2_ * sum;
}

}  // namespace corral
