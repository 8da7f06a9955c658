// --optimizer adagrad under hogwild: the fused HOGWILD! loop of a linear model at batch 1
// (linear_step.h) with AdaGrad's per-coordinate step (Duchi, Hazan and Singer 2011): each
// coordinate u keeps the sum of its squared data gradients G_u beside the model, and steps
//   G_u <- G_u + g_u^2,   w_u <- ProximalStep(w_u, g_u, eta / (sqrt(G_u) + eps), l2_u)
// (AdaGradEta in step.h), eta the epoch's step (--lr, --lr-decay). No hot head: the private
// copies would need private accumulators, and the head is off under adagrad.
//
// Races (the accumulators are shared exactly like the model, params.h):
//   G: W any worker (relaxed store of its read + g^2), R any worker (relaxed load); the
//   coordinator never reads them (they are neither evaluated nor saved). relaxed: G_u
//   carries no other data, and like the weights (HOGWILD!) a racing read-add-store may lose
//   another worker's g^2; a lost term only makes that coordinate's next steps slightly larger,
//   as if that sample's gradient had been smaller. No read-modify-write atomics, so a step costs
//   what plain SGD's does plus one load, one store and a square root per coordinate.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <span>

#include <corral/dataset.h>
#include <corral/linear.h>
#include <corral/params.h>
#include <corral/step.h>

#include "engine/src/runtime/shard_worker.h"

namespace corral::internal {

// One AdaGrad step of row x on the shared model w and accumulators `sum_sq`.
template <typename Loss>
inline void AdaGradLinearStep(const LinearModel<Loss>& model, Params w, Params sum_sq, SparseRow x,
                              float label, float weight, float eta, std::size_t num_params) {
  float margin = 0;
  for (std::size_t k = 0; k < x.nnz(); ++k) {
    const std::uint32_t u = x.index[k];
    if (u < num_params) margin += w.Load(u) * x.value[k];
  }
  const float dloss = model.Derivative(margin, label, weight);
  for (std::size_t k = 0; k < x.nnz(); ++k) {
    const std::uint32_t u = x.index[k];
    if (u >= num_params) continue;
    const float g = dloss * x.value[k];
    const float sum = sum_sq.Load(u) + g * g;
    if (sum == 0.0f) continue;  // no gradient seen yet: no scale for a step (AdaGradEta)
    sum_sq.Store(u, sum);
    w.Store(u, ProximalStep(w.Load(u), g, AdaGradEta(eta, sum), model.L2Weight(u)));
  }
}

// One epoch of worker `self`'s AdaGrad steps from sample `start` of its order; like
// HogwildSteps' fused loop, it checks `halt` and publishes progress every `chunk` samples.
template <typename Loss, typename Worker>
void AdaGradSteps(const LinearModel<Loss>& model, Params w, Params sum_sq, Worker& self, float eta,
                  std::uint64_t start, std::size_t chunk, const std::atomic<bool>& halt,
                  std::atomic<std::uint64_t>& steps) {
  const std::span<const std::uint32_t> order(self.order);
  const std::size_t d = model.NumParams();
  constexpr std::size_t kAhead = 8;  // rows, as HogwildSteps
  for (std::size_t k = start; k < order.size();) {
    if (halt.load(std::memory_order_relaxed)) break;
    const std::size_t end = std::min(order.size(), k + chunk);
    for (; k < end; ++k) {
      if (k + kAhead < order.size()) PrefetchRow(self.shard, order[k + kAhead]);
      const std::uint32_t r = order[k];
      AdaGradLinearStep(model, w, sum_sq, self.shard.Row(r), self.shard.Label(r), self.shard.Weight(r), eta, d);
    }
    self.samples += end - self.position;
    self.position = end;
    steps.store(self.samples, std::memory_order_relaxed);  // progress display only
  }
}

}  // namespace corral::internal
