// The HOGWILD! inner loop of a linear model with one sample per step, fused: margin, loss
// derivative and the proximal update of the sample's coordinates in two passes over the row,
// without going through a SparseGrad buffer. The same step as Gradient() + ApplyStep():
//   w_u <- (w_u - eta * dloss * x_u) * shrink_u,   shrink_u = 1 / (1 + eta * l2 * n / d_u),
// dloss the model's Derivative() (the loss's, times the sample's class weight),
// with the per-coordinate division replaced by a multiplication by shrink_u, which the worker
// recomputes once per epoch (eta changes per epoch only). On a9a this loop runs at about three
// times the generic path's rate (bench/shared_modes.py).
//
// Races: the same relaxed loads and stores as ApplyStep (Params), nothing else shared.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <corral/dataset.h>
#include <corral/linear.h>
#include <corral/params.h>
#include <corral/step.h>

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

template <typename Loss>
inline void LinearStep(const LinearModel<Loss>& model, Params w, SparseRow x, float label,
                       float eta, const float* shrink, std::size_t num_params) {
  float margin = 0;
  for (std::size_t k = 0; k < x.nnz(); ++k) {
    const std::uint32_t u = x.index[k];
    if (u < num_params) margin += w.Load(u) * x.value[k];
  }
  const float step = eta * model.Derivative(margin, label);
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

}  // namespace corral::internal
