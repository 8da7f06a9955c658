// corral::LinearModel<Loss>: a linear model on sparse (or dense) rows: logistic regression,
// linear SVM (hinge) and least squares.
//
// Objective (DESIGN.md §9): (1/n) sum_i s_i c_{y_i} Loss(<w, x_i>, y_i) + (l2/2)|w|^2, c the
// class weights (--class-weight) and s_i the samples' (Dataset::Weight, --weights); both 1
// unless given, so the plain mean loss. No bias term, as
// LIBLINEAR's default, so `--l2 1/n` reproduces LIBLINEAR's C=1 optimum.
//
// Sparse L2 (HOGWILD!'s form): sample i's share of the regulariser is
//   (l2/2) sum_{u in x_i} (n/d_u) w_u^2,   d_u = rows with feature u present,
// which sums over the n samples to exactly (l2/2)|w|^2, so an update touches only the sample's
// coordinates. Gradient() reports the weight l2*n/d_u beside each coordinate's data gradient;
// the engine applies it as a proximal step (step.h). A model made without training data uses
// the plain weight l2 everywhere (enough to evaluate or predict).
//
// Thread safety: immutable after construction; any number of workers may call it at once.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <vector>

#include <corral/dataset.h>
#include <corral/losses.h>
#include <corral/model.h>
#include <corral/params.h>
#include <corral/sparse_grad.h>
#include <corral/training_facts.h>

namespace corral {

namespace detail {
// sum_u w_u x_u over u < min(w.size(), x.size()) for a dense row x of a private (unshared)
// snapshot w: sixteen strided partial sums (u mod 16) added in lane order, then the tail.
// Compiled once in the library, so every caller gets the same bits whatever its own flags;
// sixteen lanes whatever the machine's vector width (AVX: two registers). Margin's single
// chain waits one add's latency per feature: on 2,000 features (8 KB rows, 20,000 rows) `corral
// eval`, which reads every row twice (the loss, then the AUC's margins), took 180 ms on one
// core, 143 ms with this (medians of 11); the rest is reading the rows from memory.
float DenseDot(std::span<const float> w, std::span<const float> x);
}  // namespace detail

template <typename Loss>
class LinearModel {
 public:
  static constexpr Task kTask = Loss::kTask;
  static constexpr std::string_view kName = Loss::kName;
  using Grad = SparseGrad;
  struct Workspace {};

  // For training: `train` supplies the dimension and the feature frequencies d_u;
  // `class_weight` the factors c of class ids 0 and 1 (ClassId), empty for 1 and 1.
  LinearModel(const Dataset& train, float l2, std::span<const float> class_weight = {});
  // The same from the whole set's facts (a run whose ranks hold parts of the set).
  LinearModel(const TrainingFacts& train, float l2, std::span<const float> class_weight = {});
  // For evaluation and prediction: plain L2 weights.
  LinearModel(std::size_t num_features, float l2);

  std::size_t NumParams() const { return l2_weight_.size(); }
  float l2() const { return l2_; }
  // The class of a label: 1 the positive (labels > 0), 0 the negative.
  static constexpr std::size_t kClasses = 2;
  static int ClassId(float label) { return label > 0 ? 1 : 0; }
  // A sample's factor c_y on its loss.
  float ClassWeight(float label) const { return class_weight_[static_cast<std::size_t>(ClassId(label))]; }
  // d/dm of a sample's weighted loss s c_y Loss(m, y), s its own weight (Dataset::Weight): the
  // one expression every update of the model scales its row by (Gradient() and the engine's
  // fused loops). A weight of 1 changes no bit.
  float Derivative(float margin, float label, float weight) const {
    return Loss::Derivative(margin, label) * ClassWeight(label) * weight;
  }
  // Coordinate u's sparse L2 weight l2 * n / d_u (what Gradient() reports beside it).
  float L2Weight(std::size_t u) const { return l2_weight_[u]; }

  SparseGrad MakeGrad(const Dataset& data, std::size_t batch) const {
    return SparseGrad(data.max_row_nnz() * batch);
  }
  Workspace MakeWorkspace(std::size_t /*batch*/) const { return {}; }
  void Init(std::span<float> w, Rng& /*rng*/) const { std::fill(w.begin(), w.end(), 0.0f); }

  // <w, x> (features beyond NumParams() are ignored, so a test set with a larger dimension
  // than its train set still evaluates). W is Params (training) or a span (snapshots).
  template <typename W>
  float Margin(const W& w, SparseRow x) const {
    float m = 0;
    for (std::size_t k = 0; k < x.nnz(); ++k) {
      if (x.index[k] < w.size()) m += w[x.index[k]] * x.value[k];
    }
    return m;
  }

  // <w, row r of data>: Margin on a sparse row, detail::DenseDot on a dense one (the same
  // products, summed in another order). What evaluation and prediction on a set read.
  float RowMargin(std::span<const float> w, const Dataset& data, std::size_t r) const {
    return data.is_dense() ? detail::DenseDot(w, data.DenseRow(r)) : Margin(w, data.Row(r));
  }

  void Gradient(Params w, const Dataset& data, std::span<const std::uint32_t> rows,
                SparseGrad& g, Workspace& /*ws*/) const {
    g.Clear();
    const float scale = 1.0f / static_cast<float>(rows.size());
    for (const std::uint32_t r : rows) {
      const SparseRow x = data.Row(r);
      const float dm = Derivative(Margin(w, x), data.Label(r), data.Weight(r)) * scale;
      for (std::size_t k = 0; k < x.nnz(); ++k) {
        const std::uint32_t u = x.index[k];
        if (u < NumParams()) g.Push(u, dm * x.value[k], l2_weight_[u] * scale);
      }
    }
  }

  EvalSums Evaluate(std::span<const float> w, const Dataset& data, std::size_t begin,
                    std::size_t end) const {
    EvalSums s;
    for (std::size_t r = begin; r < end; ++r) {
      const float m = RowMargin(w, data, r);
      const float label = data.Label(r);
      s.loss += Loss::Value(m, label) * ClassWeight(label) * data.Weight(r);
      if constexpr (kTask == Task::kRegression) {
        s.sq_err += (double{m} - label) * (double{m} - label);
      } else {
        s.correct += (m > 0) == (label > 0) ? 1.0 : 0.0;
      }
    }
    s.rows += static_cast<double>(end - begin);
    return s;
  }

  // The loss's prediction: P(y=+1) for logistic, the margin for hinge, the value for squared.
  float Predict(std::span<const float> w, SparseRow x) const { return Loss::Predict(Margin(w, x)); }

  // (l2/2)|w|^2, the full regulariser of the objective.
  double Regularizer(std::span<const float> w) const {
    double sum = 0;
    for (const float v : w) sum += double{v} * v;
    return 0.5 * l2_ * sum;
  }

 private:
  float l2_;
  std::vector<float> l2_weight_;  // l2 * n / d_u per coordinate (0 where d_u = 0)
  std::array<float, kClasses> class_weight_ = {1.0f, 1.0f};  // by ClassId
};

using LogisticModel = LinearModel<LogisticLoss>;
using HingeModel = LinearModel<HingeLoss>;
using SquaredModel = LinearModel<SquaredLoss>;

extern template class LinearModel<LogisticLoss>;
extern template class LinearModel<HingeLoss>;
extern template class LinearModel<SquaredLoss>;

}  // namespace corral
