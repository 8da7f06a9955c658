// What the engine computes across the ranks of a Cluster (<corral/cluster.h>), written once on
// top of its AllGather, and the Cluster of a run in one process (LocalCluster).
//
// Reproducible sums. Every sum across ranks gathers each rank's part and adds the parts in
// rank order on every rank, so all ranks hold the same bits, and a sum that is itself ordered
// by worker (a rank's part is its workers' terms, in worker order) is formed in the order one
// process would use. Nothing here is an MPI reduction, whose order MPI leaves open.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include <corral/cluster.h>

#include "engine/src/channel/shm_transport.h"

namespace corral::internal {

// The run of one process: collectives are copies, the transport is shared memory.
// Thread safety: stateless.
class LocalCluster final : public Cluster {
 public:
  int rank() const override { return 0; }
  int ranks() const override { return 1; }
  void AllGather(std::span<const std::byte> mine, std::span<std::byte> all) override {
    std::copy(mine.begin(), mine.end(), all.begin());
  }
  void Broadcast(std::span<std::byte> /*bytes*/) override {}
  void Barrier() override {}
  std::unique_ptr<Transport> MakeTransport(const ShmTransportConfig& config,
                                           std::span<const int> /*rank_of_worker*/) override {
    return std::make_unique<ShmTransport>(config);
  }
};

// Every rank's `mine` (trivially copyable values, the same count on every rank), in rank
// order: ranks() * mine.size() values.
template <typename T>
std::vector<T> GatherAll(Cluster& cluster, std::span<const T> mine) {
  std::vector<T> all(mine.size() * static_cast<std::size_t>(cluster.ranks()));
  if (cluster.ranks() == 1) {
    std::copy(mine.begin(), mine.end(), all.begin());
  } else {
    cluster.AllGather(std::as_bytes(mine), std::as_writable_bytes(std::span<T>(all)));
  }
  return all;
}

// The sum over ranks of `value` (a double or a count), added in rank order (the same bits on
// every rank).
template <typename T>
T SumAcross(Cluster& cluster, T value) {
  if (cluster.ranks() == 1) return value;
  T sum = 0;
  for (const T v : GatherAll(cluster, std::span<const T>(&value, 1))) sum += v;
  return sum;
}

// The largest `value` of any rank.
template <typename T>
T MaxAcross(Cluster& cluster, T value) {
  if (cluster.ranks() == 1) return value;
  const std::vector<T> all = GatherAll(cluster, std::span<const T>(&value, 1));
  return *std::max_element(all.begin(), all.end());
}

// Whether any rank passed true: the "a rank stopped / failed" flag every rank agrees on.
inline bool AnyAcross(Cluster& cluster, bool flag) {
  return MaxAcross<std::uint8_t>(cluster, flag ? 1 : 0) != 0;
}

// Rank 0's value on every rank.
template <typename T>
T FromRankZero(Cluster& cluster, T value) {
  if (cluster.ranks() > 1) cluster.Broadcast(std::as_writable_bytes(std::span<T>(&value, 1)));
  return value;
}

// Every worker's replica, in global worker order: this rank's `local` replicas (its workers in
// order, `dim` floats each) gathered from all ranks into one buffer, and spans into it.
struct GatheredReplicas {
  std::vector<float> values;
  std::vector<std::span<const float>> replicas;
};
inline GatheredReplicas GatherReplicas(Cluster& cluster, std::span<const std::span<const float>> local,
                                       std::size_t dim) {
  std::vector<float> mine(local.size() * dim);
  for (std::size_t i = 0; i < local.size(); ++i) {
    std::copy(local[i].begin(), local[i].end(), mine.begin() + static_cast<std::ptrdiff_t>(i * dim));
  }
  GatheredReplicas g{.values = GatherAll(cluster, std::span<const float>(mine)), .replicas = {}};
  for (std::size_t at = 0; at < g.values.size(); at += dim) g.replicas.emplace_back(g.values.data() + at, dim);
  return g;
}

}  // namespace corral::internal
