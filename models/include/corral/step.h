// The SGD step the engine applies to a model's gradient (public so that benches and custom
// training loops take exactly the step the engine takes).
#pragma once

#include <cstddef>
#include <cstdint>

#include <corral/dense_grad.h>
#include <corral/params.h>
#include <corral/sparse_grad.h>

namespace corral {

// w_u <- (w_u - eta * g_u) / (1 + eta * l2_u) for every touched coordinate u.
//
// The L2 part is the proximal (implicit) step of (l2_u/2) w_u^2. It equals the plain gradient
// step to first order in eta but never overshoots: HOGWILD!'s sparse weights l2_u = l2*n/d_u
// are large for rare features, and an explicit step with eta*l2_u > 2 would diverge.
// Reads and writes are relaxed (see params.h); the hot loop has no read-modify-write atomics.
inline void ApplyStep(Params w, const SparseGrad& g, float eta) {
  for (std::size_t k = 0; k < g.size(); ++k) {
    const std::uint32_t u = g.index(k);
    w.Store(u, (w.Load(u) - eta * g.grad(k)) / (1.0f + eta * g.l2(k)));
  }
}

// The same step over every coordinate with one L2 weight.
inline void ApplyStep(Params w, const DenseGrad& g, float eta) {
  const float shrink = 1.0f / (1.0f + eta * g.l2);
  for (std::size_t u = 0; u < g.grad.size(); ++u) {
    w.Store(u, (w.Load(u) - eta * g.grad[u]) * shrink);
  }
}

}  // namespace corral
