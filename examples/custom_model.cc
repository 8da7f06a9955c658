// Embedding Corral: a model of your own, trained with HOGWILD! on your own dense matrix.
//
// Robust (Huber) linear regression: loss(r) = r^2/2 for |r| <= delta, else delta(|r| - delta/2),
// with r = <w, x> - y. The data is a plain row-major float matrix the program owns; Corral
// views it without a copy (Dataset::WrapDense).
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include <corral/corral.h>

// Satisfies corral::CustomModel: NumParams, Predict, Loss and AddGradient, all const.
struct HuberRegression {
  std::size_t dim;
  float delta = 1.0f;

  std::size_t NumParams() const { return dim; }
  float Predict(const corral::Params& w, const corral::SparseRow& x) const {
    float dot = 0;
    for (std::size_t k = 0; k < x.nnz(); ++k) dot += w[x.index[k]] * x.value[k];
    return dot;
  }
  double Loss(const corral::Params& w, const corral::SparseRow& x, float y) const {
    const double r = std::abs(static_cast<double>(Predict(w, x) - y));
    return r <= delta ? 0.5 * r * r : delta * (r - 0.5 * delta);
  }
  void AddGradient(const corral::Params& w, const corral::SparseRow& x, float y,
                   std::span<float> grad) const {
    const float r = Predict(w, x) - y;
    const float dr = std::abs(r) <= delta ? r : std::copysign(delta, r);  // clipped residual
    for (std::size_t k = 0; k < x.nnz(); ++k) grad[x.index[k]] += dr * x.value[k];
  }
};
static_assert(corral::CustomModel<HuberRegression>);

int main() {
  try {
    // The caller's own data: y = <w*, x> + noise, with a few gross outliers.
    constexpr std::size_t kRows = 4'000, kDim = 20;
    auto values = std::make_shared<std::vector<float>>(kRows * kDim);
    auto labels = std::make_shared<std::vector<float>>(kRows);
    std::mt19937 gen(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> truth(kDim);
    for (float& t : truth) t = normal(gen);
    for (std::size_t r = 0; r < kRows; ++r) {
      float y = 0;
      for (std::size_t c = 0; c < kDim; ++c) {
        const float v = normal(gen);
        (*values)[r * kDim + c] = v;
        y += truth[c] * v;
      }
      (*labels)[r] = y + 0.1f * normal(gen) + (r % 50 == 0 ? 100.0f : 0.0f);
    }
    // No copy: the dataset keeps the two vectors alive through `owner`.
    const auto owner = std::make_shared<std::pair<decltype(values), decltype(labels)>>(values, labels);
    const corral::Dataset train = corral::Dataset::WrapDense(*values, *labels, kDim, owner, "mine");

    const HuberRegression model{.dim = kDim};
    const corral::TrainConfig config{.algorithm = corral::ParseAlgorithm("hogwild"),
                                     .l2 = 0.0f, .threads = 2, .epochs = 8, .lr = 0.01f};
    const corral::TrainResult result = corral::TrainCustom(model, train, nullptr, config);

    double err = 0;
    for (std::size_t c = 0; c < kDim; ++c) err += std::pow(result.params[c] - truth[c], 2.0);
    const auto& last = result.history.back();
    std::printf("objective %.4f, train RMSE %.3f (outliers included), |w - w*| = %.4f\n",
                last.objective, last.train_rmse.value_or(0), std::sqrt(err));
    // The trained parameters with the model's own Predict.
    std::vector<float> w = result.params;
    std::printf("prediction for row 1: %.3f (label %.3f)\n",
                static_cast<double>(model.Predict(corral::Params(std::span(w)), train.Row(1))),
                static_cast<double>(train.Label(1)));
    return std::sqrt(err) < 0.5 ? 0 : 1;  // Huber shrugs off the outliers
  } catch (const corral::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return e.IsUsageError() ? 2 : 1;
  }
}
