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

#include <corral/placement.h>
#include <corral/topology.h>
#include <corral/train.h>

#include "engine/src/gossip/mixing.h"
#include "engine/src/runtime/shard_worker.h"

namespace corral::internal {

// The gossip graph of a run of `workers` replicas: --topology, except for local SGD, whose
// exact averages are gossip on the complete graph. `worker_domain` (the placement's cache
// domain per worker; empty before placement) groups `hierarchical` (HierarchicalGroups). Throws kBadConfig for a bad spec.
inline std::string GossipTopologySpec(const TrainConfig& config) {
  return config.algorithm == Algorithm::kLocal ? "complete" : config.topology;
}
inline Topology GossipTopology(const TrainConfig& config, int workers,
                               const std::vector<int>& worker_domain) {
  return MakeTopology(GossipTopologySpec(config), workers, {.groups = HierarchicalGroups(worker_domain)});
}

// The replicas are the workers' states (WorkerSet) plus the replica arithmetic.
template <typename State>  // a ShardWorker with `std::vector<float> x`, the replica
class ReplicaSet : public WorkerSet<State> {
 public:
  using WorkerSet<State>::WorkerSet;

  std::vector<std::span<const float>> Replicas() const {
    std::vector<std::span<const float>> replicas;
    for (const State& s : *this) replicas.emplace_back(s.x);
    return replicas;
  }
  // The replicas' mean: the model evaluation and checkpoints see.
  void Mean(std::span<float> out) const { MeanInto(Replicas(), out); }
  double Consensus() const { return ConsensusDistance(Replicas()); }
};

}  // namespace corral::internal
