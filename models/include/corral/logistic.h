// corral::LogisticModel: binary logistic regression on sparse rows.
//
// Objective (DESIGN.md §9): mean_i log(1 + exp(-y_i <w, x_i>)) + (l2/2)|w|^2, with labels read
// as y = +1 when the file's label is > 0 and y = -1 otherwise (so -1/+1 and 0/1 both work).
// No bias term, as LIBLINEAR's default, so `--l2 1/n` reproduces LIBLINEAR's C=1 optimum.
//
// Sparse L2 (HOGWILD!'s form): sample i's share of the regulariser is
//   (l2/2) sum_{u in x_i} (n/d_u) w_u^2,   d_u = rows with feature u present,
// which sums over the n samples to exactly (l2/2)|w|^2, so an update touches only the sample's
// coordinates. Gradient() reports the weight l2*n/d_u beside each coordinate's data gradient;
// the engine applies it (see sparse_step.h for why it does so as a proximal step).
//
// Thread safety: immutable after construction; any number of workers may call it at once.
#pragma once

#include <cmath>
#include <cstddef>
#include <string_view>
#include <vector>

#include <corral/dataset.h>
#include <corral/params.h>
#include <corral/sparse_grad.h>

namespace corral {

// The loss of one sample and whether the prediction was right.
struct SampleEval {
  double loss = 0;
  bool correct = false;
};

class LogisticModel {
 public:
  static constexpr std::string_view kName = "logistic";

  // `train` supplies the dimension and the feature frequencies d_u of the sparse L2 form.
  LogisticModel(const Dataset& train, float l2);

  std::size_t NumParams() const { return l2_weight_.size(); }
  float l2() const { return l2_; }

  // Most coordinates one Gradient() call can touch on rows of `data`.
  std::size_t MaxTouched(const Dataset& data) const { return data.max_row_nnz(); }

  static float Sign(float label) { return label > 0 ? 1.0f : -1.0f; }

  // <w, x> read through relaxed loads (features beyond NumParams() are ignored, so a test
  // set with a larger dimension than its train set still evaluates).
  float Margin(Params w, SparseRow x) const {
    float m = 0;
    for (std::size_t k = 0; k < x.nnz(); ++k) {
      if (x.index[k] < w.size()) m += w.Load(x.index[k]) * x.value[k];
    }
    return m;
  }

  // log(1 + exp(-z)) without overflow.
  static double LogLoss(double z) {
    return z > 0 ? std::log1p(std::exp(-z)) : -z + std::log1p(std::exp(z));
  }

  // Writes the data gradient and sparse L2 weights for sample (x, y) into `g` (cleared first);
  // returns the margin at w.
  float Gradient(Params w, SparseRow x, float label, SparseGrad& g) const {
    const float y = Sign(label);
    const float m = Margin(w, x);
    // d/dm log(1 + exp(-y m)) = -y / (1 + exp(y m))
    const float dm = -y / (1.0f + std::exp(y * m));
    g.Clear();
    for (std::size_t k = 0; k < x.nnz(); ++k) {
      const std::uint32_t u = x.index[k];
      g.Push(u, dm * x.value[k], l2_weight_[u]);
    }
    return m;
  }

  SampleEval Evaluate(Params w, SparseRow x, float label) const {
    const float y = Sign(label);
    const float m = Margin(w, x);
    return {LogLoss(static_cast<double>(y) * m), (m > 0) == (y > 0)};
  }

  // P(y = +1 | x).
  float Predict(Params w, SparseRow x) const { return 1.0f / (1.0f + std::exp(-Margin(w, x))); }

  // (l2/2)|w|^2, the full regulariser of the objective.
  double Regularizer(Params w) const;

 private:
  float l2_;
  std::vector<float> l2_weight_;  // l2 * n / d_u per coordinate (0 where d_u = 0)
};

}  // namespace corral
