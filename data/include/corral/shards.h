// Which rows each worker trains on, and in what order it visits them each epoch.
//
//   const corral::ShardPlan plan = corral::PlanShards(train, {.workers = 8});
//   // on worker w's own thread, so the copy is first touched (placed) there:
//   corral::Dataset shard = train.Gather(plan.rows[w]);
//
// Assignments:
// - kContiguous: worker w gets rows [w*n/W, (w+1)*n/W), in file order (the default).
// - kShuffled: a seeded random permutation cut into W near-equal parts; each part is sorted
//   so the copy reads the source in order.
// - kByLabel: rows stably sorted by label, then cut contiguously, so each worker sees few
//   labels: the heterogeneous (non-IID) setting of the decentralized-SGD papers.
// Every row lands in exactly one shard, and shard sizes differ by at most one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <corral/dataset.h>

namespace corral {

enum class ShardAssignment { kContiguous, kShuffled, kByLabel };

struct ShardSpec {
  std::size_t workers = 1;
  ShardAssignment assignment = ShardAssignment::kContiguous;
  std::uint64_t seed = 0;  // kShuffled only
};

struct ShardPlan {
  std::vector<std::vector<std::size_t>> rows;  // rows[w]: worker w's rows
};

// The first row of worker w's contiguous shard of `rows` rows (w = workers gives `rows`).
inline std::size_t ContiguousShardBegin(std::size_t rows, std::size_t workers, std::size_t w) {
  // 128-bit product: rows * w overflows 64 bits only for absurd sizes, but costs nothing here.
  __extension__ using Wide = unsigned __int128;
  return static_cast<std::size_t>(static_cast<Wide>(rows) * w / workers);
}

// Throws corral::Error (kBadConfig) when workers is 0.
ShardPlan PlanShards(const Dataset& data, const ShardSpec& spec);

// Fills `order` with a permutation of 0 .. order.size()-1 that depends only on (seed, worker,
// epoch): a worker's visiting order for one epoch, without moving its data.
void EpochOrder(std::span<std::uint32_t> order, std::uint64_t seed, std::size_t worker,
                std::uint64_t epoch);

}  // namespace corral
