// The HOGWILD! inner loop of a linear model with one sample per step, fused: margin, loss
// derivative and the proximal update of the sample's coordinates in two passes over the row,
// without going through a SparseGrad buffer. The same step as Gradient() + ApplyStep():
//   w_u <- (w_u - eta * dloss * x_u) * shrink_u,   shrink_u = 1 / (1 + eta * l2 * n / d_u),
// dloss the model's Derivative() (the loss's, times the sample's class weight and own weight),
// with the per-coordinate division replaced by a multiplication by shrink_u, which the worker
// recomputes once per epoch (eta changes per epoch only). On a9a this loop runs at about three
// times the generic path's rate (bench/shared_modes.py).
//
// Races: the same relaxed loads and stores as ApplyStep (Params), nothing else shared.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include <corral/dataset.h>
#include <corral/linear.h>
#include <corral/params.h>
#include <corral/step.h>

#include "models/src/wide_params.h"

namespace corral::internal {

template <typename M>
inline constexpr bool kIsLinear = false;
template <typename Loss>
inline constexpr bool kIsLinear<LinearModel<Loss>> = true;

// shrink[u] = 1 / (1 + eta * l2_u) for every coordinate of `model`, for one epoch's eta.
template <typename Loss>
void ComputeShrink(const LinearModel<Loss>& model, float eta, std::vector<float>& shrink) {
  shrink.resize(model.NumParams());
  for (std::size_t u = 0; u < shrink.size(); ++u) shrink[u] = ProximalShrink(eta, model.L2Weight(u));
}

// LinearStep's update for `step` = eta * dloss: w_u <- (w_u - step x_u) shrink_u for the row's
// coordinates below num_params. Races: Params' relaxed loads and stores.
inline void ShrinkUpdate(Params w, SparseRow x, float step, const float* shrink, std::size_t num_params) {
  if (step == 0.0f) {  // e.g. hinge beyond the margin: only the L2 shrink remains
    for (std::size_t k = 0; k < x.nnz(); ++k) {
      const std::uint32_t u = x.index[k];
      if (u < num_params) w.Store(u, w.Load(u) * shrink[u]);
    }
    return;
  }
  for (std::size_t k = 0; k < x.nnz(); ++k) {
    const std::uint32_t u = x.index[k];
    if (u < num_params) w.Store(u, (w.Load(u) - step * x.value[k]) * shrink[u]);
  }
}

template <typename Loss>
inline void LinearStep(const LinearModel<Loss>& model, Params w, SparseRow x, float label,
                       float weight, float eta, const float* shrink, std::size_t num_params) {
  float margin = 0;
  for (std::size_t k = 0; k < x.nnz(); ++k) {
    const std::uint32_t u = x.index[k];
    if (u < num_params) margin += w.Load(u) * x.value[k];
  }
  ShrinkUpdate(w, x, eta * model.Derivative(margin, label, weight), shrink, num_params);
}

// How many of a dense row's values a step reads: features beyond the model's are ignored.
inline std::size_t DenseWidth(const Dataset& data, std::size_t num_params) {
  return std::min(data.num_features(), num_params);
}

// LinearStep for a dense row (its values, coordinate u at u), with the shared model moved
// several coordinates per instruction (models/src/wide_params.h): the same update of each
// coordinate, the margin summed in WideDot's order. `ahead`: the row the worker reads next
// (as long as x), asked of the memory system line by line while this one's margin is summed.
// Races: Params' contract (wide_params.h).
template <typename Loss>
inline void DenseLinearStep(const LinearModel<Loss>& model, Params w, std::span<const float> x,
                            const float* ahead, float label, float weight, float eta,
                            const float* shrink, std::size_t num_params) {
  x = x.first(std::min(x.size(), num_params));  // features beyond the model's are ignored
  const float margin = detail::WideDot(w, x, ahead);
  detail::WideShrinkUpdate(w, x, eta * model.Derivative(margin, label, weight), shrink);
}

// DenseLinearStep on row r of a dense `data` in one pass over the model: its margin is given
// (the step before computed it, or DenseMargin), the update's shrink factor is one for every
// coordinate (d_u = n on a dense set), and row `next`'s margin on the updated model is returned
// (`ahead`, the row after it, asked for meanwhile). Races: Params' contract (wide_params.h).
template <typename Loss>
inline float DenseLinearStepThen(const LinearModel<Loss>& model, Params w, const Dataset& data, std::size_t r,
                                 float margin, std::size_t next, std::size_t ahead, float eta, float shrink,
                                 std::size_t num_params) {
  const float step = eta * model.Derivative(margin, data.Label(r), data.Weight(r));
  return detail::WideShrinkUpdateDot(w, data.DenseRow(r).first(DenseWidth(data, num_params)), step, shrink,
                                     data.DenseRow(next).data(), data.DenseRow(ahead).data());
}
// Row r's margin for DenseLinearStepThen (`ahead` asked for meanwhile).
inline float DenseMargin(Params w, const Dataset& data, std::size_t r, std::size_t ahead, std::size_t num_params) {
  return detail::WideDot(w, data.DenseRow(r).first(DenseWidth(data, num_params)), data.DenseRow(ahead).data());
}

// LinearStep or DenseLinearStep for row r of `data`, as its storage asks; `next`: the row the
// caller steps on next (r itself when none).
template <typename Loss>
inline void LinearStepRow(const LinearModel<Loss>& model, Params w, const Dataset& data, std::size_t r,
                          std::size_t next, float eta, const float* shrink, std::size_t num_params) {
  if (data.is_dense()) {
    DenseLinearStep(model, w, data.DenseRow(r), data.DenseRow(next).data(), data.Label(r), data.Weight(r), eta,
                    shrink, num_params);
  } else {
    LinearStep(model, w, data.Row(r), data.Label(r), data.Weight(r), eta, shrink, num_params);
  }
}

// A linear model's gradient at batch 1 held as its row and loss derivative, for modes that
// compute the gradient at one model and apply it later (the replica modes: at x_i, applied to
// x_half or under a flag). Margin and derivative are LinearModel::Gradient's own expressions
// (its 1/batch scale is 1 here), and ApplyRowGradient does ApplyStep's float operations in
// its order, so the two together are Gradient() + ApplyStep() bit for bit (the golden
// digests of `--gossip-every 1` runs pin it), without filling and reading back a SparseGrad.
struct RowGradient {
  SparseRow row;
  float dloss = 0;
};

template <typename Loss>
RowGradient LinearRowGradient(const LinearModel<Loss>& model, Params at, const Dataset& shard,
                              std::uint32_t r) {
  const SparseRow row = shard.Row(r);
  return {row, model.Derivative(model.Margin(at, row), shard.Label(r), shard.Weight(r))};
}

// ApplyStep(w, g, eta) for the gradient g held as a RowGradient. Races: ApplyStep's (Params).
template <typename Loss>
void ApplyRowGradient(const LinearModel<Loss>& model, Params w, const RowGradient& g, float eta) {
  const std::size_t d = w.size();
  // Copied to locals: as far as the compiler knows w's stores may alias g's fields, which it
  // would then reload for every coordinate (measured: 5% of a replica's step on the Zipf set).
  const SparseRow row = g.row;
  const float dloss = g.dloss;
  for (std::size_t k = 0; k < row.nnz(); ++k) {
    const std::uint32_t u = row.index[k];
    if (u >= d) continue;
    w.Store(u, ProximalStep(w.Load(u), dloss * row.value[k], eta, model.L2Weight(u)));
  }
}

// LinearStep's update for the gradient g held as a RowGradient, with `shrink` the epoch's
// ComputeShrink table: LinearStep bit for bit when g was taken at w (LinearRowGradient's margin
// and derivative are LinearStep's). Races: LinearStep's (Params).
inline void ApplyRowGradient(Params w, const RowGradient& g, float eta, const float* shrink) {
  ShrinkUpdate(w, g.row, eta * g.dloss, shrink, w.size());
}

// Every coordinate ApplyRowGradient writes.
template <typename Mark>
void ForEachRowCoordinate(const RowGradient& g, std::size_t d, Mark&& mark) {
  for (std::size_t k = 0; k < g.row.nnz(); ++k) {
    if (g.row.index[k] < d) mark(g.row.index[k]);
  }
}

}  // namespace corral::internal
