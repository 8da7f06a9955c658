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
#include <corral/dataset.h>
#include <corral/error.h>

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

// The rows `wanted` (global row ids, repeats allowed) of a set spread over the ranks, this rank
// holding rows [first, first + local.rows()) in `local`: a copy of them in `wanted`'s order, the
// same on every rank (what local.Gather is in one process). Collective; `wanted` is the same on
// every rank. Three gathers: per wanted row which rank holds it and its stored entries, the
// labels, then the entries (padded to the longest rank's); a fourth for the rows' weights when
// the set has them (every rank's does: the same options).
inline Dataset GatherRowsAcross(Cluster& cluster, const Dataset& local, std::size_t first,
                                std::span<const std::size_t> wanted) {
  const bool dense = local.is_dense();
  // Per wanted row: 0 when another rank holds it, else 1 + its stored entries.
  std::vector<std::uint64_t> held(wanted.size(), 0);
  std::vector<float> labels(wanted.size(), 0.0f);
  std::vector<float> weights(local.weighted() ? wanted.size() : 0, 0.0f);
  std::vector<std::uint32_t> index;
  std::vector<float> value;
  for (std::size_t k = 0; k < wanted.size(); ++k) {
    if (wanted[k] < first || wanted[k] - first >= local.rows()) continue;
    const std::size_t r = wanted[k] - first;
    const SparseRow row = local.Row(r);
    held[k] = 1 + row.nnz();
    labels[k] = local.Label(r);
    if (!weights.empty()) weights[k] = local.Weight(r);
    if (!dense) index.insert(index.end(), row.index.begin(), row.index.end());
    value.insert(value.end(), row.value.begin(), row.value.end());
  }
  const std::vector<std::uint64_t> all_held = GatherAll(cluster, std::span<const std::uint64_t>(held));
  const std::vector<float> all_labels = GatherAll(cluster, std::span<const float>(labels));
  const std::vector<float> all_weights =
      weights.empty() ? std::vector<float>() : GatherAll(cluster, std::span<const float>(weights));
  const std::size_t longest = MaxAcross(cluster, value.size());
  index.resize(dense ? 0 : longest, 0);
  value.resize(longest, 0.0f);
  const std::vector<std::uint32_t> all_index = GatherAll(cluster, std::span<const std::uint32_t>(index));
  const std::vector<float> all_value = GatherAll(cluster, std::span<const float>(value));

  const auto ranks = static_cast<std::size_t>(cluster.ranks());
  std::vector<std::size_t> cursor(ranks, 0);  // next entry of each rank's block
  std::vector<std::uint64_t> row_ptr{0};
  std::vector<std::uint32_t> out_index;
  std::vector<float> out_value, out_label, out_weight;
  for (std::size_t k = 0; k < wanted.size(); ++k) {
    std::size_t owner = ranks;
    for (std::size_t o = 0; o < ranks && owner == ranks; ++o) {
      if (all_held[o * wanted.size() + k] != 0) owner = o;
    }
    if (owner == ranks) {
      throw Error(ErrorCode::kBadInput, local.name() + ": row " + std::to_string(wanted[k]) +
                                            " is held by no rank (do the ranks read the same file?)");
    }
    const std::size_t count = all_held[owner * wanted.size() + k] - 1;
    const std::size_t at = owner * longest + cursor[owner];
    if (!dense) out_index.insert(out_index.end(), all_index.begin() + at, all_index.begin() + at + count);
    out_value.insert(out_value.end(), all_value.begin() + at, all_value.begin() + at + count);
    out_label.push_back(all_labels[owner * wanted.size() + k]);
    if (!all_weights.empty()) out_weight.push_back(all_weights[owner * wanted.size() + k]);
    row_ptr.push_back(row_ptr.back() + count);
    cursor[owner] += count;
  }
  Dataset out = dense ? Dataset::Dense(std::move(out_value), std::move(out_label), local.num_features(), local.name())
                      : Dataset(std::move(row_ptr), std::move(out_index), std::move(out_value),
                                std::move(out_label), local.num_features(), local.name());
  return out_weight.empty() ? out : out.WithWeights(std::move(out_weight), local.name());
}

}  // namespace corral::internal
