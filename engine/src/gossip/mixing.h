// The arithmetic of gossip: one worker's weighted average of replicas (a row of the mixing
// matrix W applied to the models), the consensus distance of a set of replicas, and the thread
// CPU clock that virtual time is measured with. Kept apart from the replica modes so that tests
// can check the mixing on its own (pure gossip decays at the rate the spectral gap predicts).
#pragma once

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <span>
#include <vector>

namespace corral::internal {

// One term of a mixing row: W_ij and x_j.
struct MixSource {
  float weight = 0;
  const float* values = nullptr;  // dimension-many floats
};

// out[u] = sum_k sources[k].weight * sources[k].values[u], summed in the order given, for
// every u. `out` must not alias any source. The order is part of the contract: workers that
// mix the same sources with the same weights in the same order get bitwise equal results
// (local SGD's exact averages). Blocked so that a slice of `out` stays in L1 while every
// source streams through it once; the inner loops are plain and vectorise.
inline void Mix(std::span<const MixSource> sources, std::span<float> out) {
  constexpr std::size_t kBlock = 2048;  // 8 KiB of `out`
  float* const o = out.data();
  for (std::size_t begin = 0; begin < out.size(); begin += kBlock) {
    const std::size_t end = std::min(out.size(), begin + kBlock);
    for (std::size_t k = 0; k < sources.size(); ++k) {
      const float w = sources[k].weight;
      const float* const x = sources[k].values;
      if (k == 0) {
        for (std::size_t u = begin; u < end; ++u) o[u] = w * x[u];
      } else {
        for (std::size_t u = begin; u < end; ++u) o[u] += w * x[u];
      }
    }
  }
}

// mean[u] = (1/n) sum_i replicas[i][u], accumulated in double.
inline void MeanOf(std::span<const std::span<const float>> replicas, std::span<double> mean) {
  std::fill(mean.begin(), mean.end(), 0.0);
  for (const std::span<const float> x : replicas) {
    for (std::size_t u = 0; u < mean.size(); ++u) mean[u] += x[u];
  }
  const double n = static_cast<double>(replicas.size());
  for (double& m : mean) m /= n;
}

// out = the replicas' mean as floats: MeanOf, rounded once.
inline void MeanInto(std::span<const std::span<const float>> replicas, std::span<float> out) {
  std::vector<double> mean(out.size());
  MeanOf(replicas, mean);
  for (std::size_t u = 0; u < out.size(); ++u) out[u] = static_cast<float>(mean[u]);
}

// out = the replicas' mean, each coordinate read with a relaxed std::atomic_ref load: for modes
// whose owners write their replicas through relaxed atomic_ref (adpsgd, hogwild++), so a
// LiveModel snapshot may run beside them. The mean mixes coordinates from different moments, as
// any hogwild read does. The const_cast is sound: the replicas are non-const objects that only
// ever change through atomic_ref (std::atomic_ref<const float> arrives in C++26).
inline void RelaxedMeanOf(std::span<const std::span<const float>> replicas, std::span<float> out) {
  std::vector<double> mean(out.size(), 0.0);
  for (const std::span<const float> x : replicas) {
    for (std::size_t u = 0; u < mean.size(); ++u) {
      mean[u] += std::atomic_ref<float>(const_cast<float&>(x[u])).load(std::memory_order_relaxed);
    }
  }
  const double n = static_cast<double>(replicas.size());
  for (std::size_t u = 0; u < out.size(); ++u) out[u] = static_cast<float>(mean[u] / n);
}

// The consensus distance (1/n) sum_i |x_i - mean|^2 (DESIGN.md §7), in double.
inline double ConsensusDistance(std::span<const std::span<const float>> replicas) {
  if (replicas.empty()) return 0;
  std::vector<double> mean(replicas[0].size());
  MeanOf(replicas, mean);
  double sum = 0;
  for (const std::span<const float> x : replicas) {
    for (std::size_t u = 0; u < mean.size(); ++u) {
      const double diff = x[u] - mean[u];
      sum += diff * diff;
    }
  }
  return sum / static_cast<double>(replicas.size());
}

// CPU seconds the calling thread has run. Virtual time counts this rather than wall time, so
// that 16 workers sharing 2 cores still model a machine with a core per worker: time spent
// descheduled or asleep waiting for a neighbour is not compute.
inline double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace corral::internal
