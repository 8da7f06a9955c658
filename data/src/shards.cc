// Shard plans and per-epoch visiting orders.
#include <corral/shards.h>

#include <algorithm>
#include <numeric>
#include <string>

#include <corral/error.h>
#include <corral/rng.h>

namespace corral {

ShardPlan PlanShards(const Dataset& data, const ShardSpec& spec) {
  if (spec.workers == 0) {
    throw Error(ErrorCode::kBadConfig, data.name() + ": cannot shard over 0 workers, expected at least 1");
  }
  const std::size_t n = data.rows();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (spec.assignment == ShardAssignment::kShuffled) {
    Rng rng(spec.seed, /*stream=*/0x5AD);
    rng.Shuffle(std::span(order));
  } else if (spec.assignment == ShardAssignment::kByLabel) {
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return data.Label(a) < data.Label(b); });
  }
  ShardPlan plan;
  plan.rows.resize(spec.workers);
  for (std::size_t w = 0; w < spec.workers; ++w) {
    const auto begin = static_cast<std::ptrdiff_t>(ContiguousShardBegin(n, spec.workers, w));
    const auto end = static_cast<std::ptrdiff_t>(ContiguousShardBegin(n, spec.workers, w + 1));
    plan.rows[w].assign(order.begin() + begin, order.begin() + end);
    if (spec.assignment == ShardAssignment::kShuffled) {
      std::sort(plan.rows[w].begin(), plan.rows[w].end());
    }
  }
  return plan;
}

void EpochOrder(std::span<std::uint32_t> order, std::uint64_t seed, std::size_t worker,
                std::uint64_t epoch) {
  std::iota(order.begin(), order.end(), std::uint32_t{0});
  // One stream per (worker, epoch): the pair is folded into the seed by a multiply that
  // keeps different pairs apart, and Rng's SplitMix expansion decorrelates neighbours.
  Rng rng(seed ^ (0x9E3779B97F4A7C15ULL * (epoch + 1)), worker);
  rng.Shuffle(order);
}

}  // namespace corral
