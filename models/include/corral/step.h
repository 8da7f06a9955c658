// The SGD step the engine applies to a model's gradient (public so that benches and custom
// training loops take exactly the step the engine takes).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>

#include <corral/dense_grad.h>
#include <corral/params.h>
#include <corral/sparse_grad.h>

namespace corral {

// One coordinate's step: w <- (w - eta * g) / (1 + eta * l2). Every mode's update goes through
// this formula (here and in ProximalShrink), so that they all take the same step bit for bit.
//
// The L2 part is the proximal (implicit) step of (l2_u/2) w_u^2. It equals the plain gradient
// step to first order in eta but never overshoots: HOGWILD!'s sparse weights l2_u = l2*n/d_u
// are large for rare features, and an explicit step with eta*l2_u > 2 would diverge.
inline float ProximalStep(float w, float g, float eta, float l2) {
  return (w - eta * g) / (1.0f + eta * l2);
}

// The factor 1 / (1 + eta * l2) of the dense form, which shares one L2 weight over every coordinate
// and so divides once: w <- (w - eta * g) * ProximalShrink(eta, l2).
inline float ProximalShrink(float eta, float l2) { return 1.0f / (1.0f + eta * l2); }

// AdaGrad (Duchi, Hazan and Singer 2011), per coordinate: the step size eta / (sqrt(G) + eps)
// for a coordinate whose squared gradients sum to G > 0, used in ProximalStep: with the L2
// term's proximal step this is their composite mirror-descent update with the diagonal scale
// (the regulariser is not accumulated into G).
inline constexpr float kAdaGradEpsilon = 1e-8f;
inline float AdaGradEta(float eta, float sum_sq) { return eta / (std::sqrt(sum_sq) + kAdaGradEpsilon); }

// Heavy-ball momentum (Polyak 1964, in the form PyTorch's SGD takes): v <- mu v + g, then the
// dense step with v in g's place, w <- (w - eta v) / (1 + eta l2). `velocity` is the caller's
// own (one per worker or replica), as long as the gradient; mu 0 is ApplyStep bit for bit.
inline void ApplyMomentumStep(Params w, const DenseGrad& g, std::span<float> velocity, float eta,
                              float mu) {
  const float shrink = ProximalShrink(eta, g.l2);
  for (std::size_t u = 0; u < g.grad.size(); ++u) {
    velocity[u] = mu * velocity[u] + g.grad[u];
    w.Store(u, (w.Load(u) - eta * velocity[u]) * shrink);
  }
}

// ProximalStep for every touched coordinate u, with its own L2 weight l2_u.
// Reads and writes are relaxed (see params.h); the hot loop has no read-modify-write atomics.
inline void ApplyStep(Params w, const SparseGrad& g, float eta) {
  for (std::size_t k = 0; k < g.size(); ++k) {
    const std::uint32_t u = g.index(k);
    w.Store(u, ProximalStep(w.Load(u), g.grad(k), eta, g.l2(k)));
  }
}

// The same step over every coordinate with one L2 weight.
inline void ApplyStep(Params w, const DenseGrad& g, float eta) {
  const float shrink = ProximalShrink(eta, g.l2);
  for (std::size_t u = 0; u < g.grad.size(); ++u) {
    w.Store(u, (w.Load(u) - eta * g.grad[u]) * shrink);
  }
}

}  // namespace corral
