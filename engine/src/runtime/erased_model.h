// ErasedModel: a user's CustomModel (through its virtual adapter) in the shape the engine's
// corral::Model concept asks for, so every runner trains it unchanged. The gradient is dense:
// the adapter's AddGradient calls fill one buffer per worker, cleared at each step (as the
// MLP's), with the plain L2 term applied by ApplyStep. kRegression and the classification
// tasks are two instantiations (the evaluator picks RMSE or accuracy at compile time);
// binary and multiclass differ only in how a prediction counts as correct, decided at run time.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include <corral/custom_model.h>
#include <corral/dataset.h>
#include <corral/dense_grad.h>
#include <corral/model.h>
#include <corral/params.h>
#include <corral/rng.h>

namespace corral::internal {

template <Task kTaskKind>
class ErasedModel {
 public:
  static constexpr Task kTask = kTaskKind;
  using Grad = DenseGrad;
  struct Workspace {};

  ErasedModel(const detail::CustomModelBase& model, float l2)
      : model_(model), l2_(l2), num_params_(model.NumParams()), task_(model.task()) {}

  std::size_t NumParams() const { return num_params_; }
  DenseGrad MakeGrad(const Dataset& /*data*/, std::size_t /*batch*/) const {
    DenseGrad g(num_params_);
    g.l2 = l2_;
    return g;
  }
  Workspace MakeWorkspace(std::size_t /*batch*/) const { return {}; }
  void Init(std::span<float> out, Rng& rng) const { model_.Init(out, rng); }

  void Gradient(Params w, const Dataset& data, std::span<const std::uint32_t> rows, DenseGrad& g,
                Workspace& /*ws*/) const {
    std::fill(g.grad.begin(), g.grad.end(), 0.0f);
    for (const std::uint32_t r : rows) {
      model_.AddGradient(w, data.Row(r), data.Label(r), g.grad);
    }
    if (rows.size() > 1) {
      const float inv = 1.0f / static_cast<float>(rows.size());
      for (float& v : g.grad) v *= inv;
    }
  }

  EvalSums Evaluate(std::span<const float> snapshot, const Dataset& data, std::size_t begin,
                    std::size_t end) const {
    // The adapter reads through Params; this view only ever loads.
    const Params w(std::span<float>(const_cast<float*>(snapshot.data()), snapshot.size()));
    EvalSums sums;
    for (std::size_t r = begin; r < end; ++r) {
      const SparseRow x = data.Row(r);
      const float y = data.Label(r);
      sums.loss += model_.Loss(w, x, y);
      const float p = model_.Predict(w, x);
      if constexpr (kTask == Task::kRegression) {
        sums.sq_err += static_cast<double>(p - y) * static_cast<double>(p - y);
      } else if (task_ == Task::kBinary) {
        sums.correct += (p > 0) == (y > 0) ? 1 : 0;
      } else {
        sums.correct += p == y ? 1 : 0;
      }
    }
    sums.rows = static_cast<double>(end - begin);
    return sums;
  }

  double Regularizer(std::span<const float> w) const {
    double sq = 0;
    for (const float v : w) sq += static_cast<double>(v) * static_cast<double>(v);
    return 0.5 * static_cast<double>(l2_) * sq;
  }

 private:
  const detail::CustomModelBase& model_;
  float l2_;
  std::size_t num_params_;
  Task task_;
};

}  // namespace corral::internal
