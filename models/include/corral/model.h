// What the engine asks of a model, written as a concept (ensmallen's function/optimizer split):
// a model computes losses and gradients from parameters it is given and never writes them.
//
//   static_assert(corral::Model<MyModel>, "see models/include/corral/model.h");
//
// Parameters live in one flat float buffer, so replicas, compression and gossip treat every
// model alike. During training a model reads them through Params (relaxed atomic loads: other
// workers may be writing); evaluation reads a consistent snapshot as plain floats.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>

#include <corral/dataset.h>
#include <corral/params.h>
#include <corral/rng.h>

namespace corral {

enum class Task {
  kBinary,      // labels > 0 are the positive class; accuracy is reported
  kMulticlass,  // labels are class ids; accuracy is reported
  kRegression,  // labels are targets; RMSE is reported
};

// Whether a model learns intercepts: softmax's per-class biases, mf's per-user and per-item
// biases. With kNone the bias coordinates keep their place in the parameter layout but stay at
// their initial 0 (no gradient is reported for them), so a saved model evaluates the same
// either way. Why a model would go without: an intercept fits what the training set's rows have
// in common (softmax: its class frequencies; mf: each user's and item's mean offset), which
// costs held-out accuracy when the test set does not share it (see the models' headers).
enum class Bias {
  kLearned,
  kNone,
};

// Sums over evaluated rows; means are formed by the caller.
struct EvalSums {
  double loss = 0;     // data loss, no regulariser
  double correct = 0;  // classification: rows predicted right
  double sq_err = 0;   // regression: squared error of the prediction
  double rows = 0;

  EvalSums operator+(const EvalSums& o) const {
    return {loss + o.loss, correct + o.correct, sq_err + o.sq_err, rows + o.rows};
  }
};

// A trainable model. `Grad` is the gradient buffer type (SparseGrad or DenseGrad, see
// step.h), `Workspace` the per-worker scratch space; both are made once per worker, so a step
// never allocates.
template <typename M>
concept Model = requires(const M& m, Params w, std::span<const float> snapshot,
                         std::span<float> out, const Dataset& data,
                         std::span<const std::uint32_t> rows, typename M::Grad& grad,
                         typename M::Workspace& ws, Rng& rng) {
  { M::kTask } -> std::convertible_to<Task>;
  { m.NumParams() } -> std::convertible_to<std::size_t>;
  // Gradient buffer and workspace able to hold a batch of `batch` rows of `data`.
  { m.MakeGrad(data, std::size_t{1}) } -> std::same_as<typename M::Grad>;
  { m.MakeWorkspace(std::size_t{1}) } -> std::same_as<typename M::Workspace>;
  // Initial parameters (seeded; zeros for convex models).
  m.Init(out, rng);
  // Mean gradient over `rows` of `data` at w, written into `grad` (which it clears first).
  m.Gradient(w, data, rows, grad, ws);
  // Loss and quality sums over rows [begin, end) at a parameter snapshot.
  { m.Evaluate(snapshot, data, std::size_t{0}, std::size_t{1}) } -> std::same_as<EvalSums>;
  // The regulariser term of the objective at a snapshot.
  { m.Regularizer(snapshot) } -> std::convertible_to<double>;
};

}  // namespace corral
