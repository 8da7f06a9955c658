// The replicas of a replica mode (dpsgd, local, dcd, ecd, choco, adpsgd; hogwild++ keeps one
// per group and uses the same arithmetic from mixing.h): one State per worker, each holding
// the worker's replica `x`, and what the coordinator asks of them while the workers are
// parked: samples processed, the replicas' mean (what evaluation and checkpoints see), their
// consensus distance, and per-worker maxima and sums (virtual clocks, bytes).
// Also the gossip topology of a run, built in one place from its plan.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <corral/topology.h>
#include <corral/train.h>

#include "engine/src/gossip/mixing.h"

namespace corral::internal {

// `hierarchical` gossip groups from where the workers run: each worker's NUMA node, or one
// group when any is unknown (unpinned).
inline std::vector<int> NumaGroups(const std::vector<int>& worker_numa) {
  for (const int node : worker_numa) {
    if (node < 0) return {};
  }
  return worker_numa;
}

// The gossip graph of a run of `workers` replicas: --topology, except for local SGD, whose
// exact averages are gossip on the complete graph. `worker_numa` (the placement's NUMA node
// per worker; empty before placement) groups `hierarchical`. Throws kBadConfig for a bad spec.
inline Topology GossipTopology(const TrainConfig& config, int workers,
                               const std::vector<int>& worker_numa) {
  const bool local = config.algorithm == Algorithm::kLocal;
  return MakeTopology(local ? "complete" : config.topology, workers,
                      {.groups = NumaGroups(worker_numa)});
}

// Thread safety: during an epoch each worker touches only its own State; the members below
// are coordinator-only, while the workers are parked.
template <typename State>  // a ShardWorker with `std::vector<float> x`, the replica
class ReplicaSet {
 public:
  explicit ReplicaSet(int workers) : workers_(static_cast<std::size_t>(workers)) {}

  State& operator[](int w) { return workers_[static_cast<std::size_t>(w)]; }
  const State& operator[](int w) const { return workers_[static_cast<std::size_t>(w)]; }
  auto begin() { return workers_.begin(); }
  auto end() { return workers_.end(); }
  auto begin() const { return workers_.begin(); }
  auto end() const { return workers_.end(); }
  bool empty() const { return workers_.empty(); }

  // Samples processed by all workers in all epochs.
  std::uint64_t Samples() const {
    return Sum([](const State& s) { return s.steps; });
  }
  std::vector<std::span<const float>> Replicas() const {
    std::vector<std::span<const float>> replicas;
    for (const State& s : workers_) replicas.emplace_back(s.x);
    return replicas;
  }
  // The replicas' mean: the model evaluation and checkpoints see.
  void Mean(std::span<float> out) const { MeanInto(Replicas(), out); }
  double Consensus() const { return ConsensusDistance(Replicas()); }
  // The sum and the largest of f(state) over the workers (0 when there are none).
  template <typename F>
  auto Sum(F f) const {
    decltype(f(workers_.front())) total{};
    for (const State& s : workers_) total += f(s);
    return total;
  }
  template <typename F>
  auto Max(F f) const {
    decltype(f(workers_.front())) most{};
    for (const State& s : workers_) most = std::max(most, f(s));
    return most;
  }

 private:
  std::vector<State> workers_;
};

}  // namespace corral::internal
