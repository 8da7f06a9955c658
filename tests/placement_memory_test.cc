// Memory placement on this machine: a worker's shard and replica, bound with hwloc after its
// thread built them, read back (hwloc_get_area_memlocation) on the worker's NUMA node; and what
// a run reports about where memory went, pinned, unpinned and on described hardware.
#include <cstddef>
#include <span>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <corral/corral.h>

#include "engine/src/runtime/placement.h"
#include "engine/src/runtime/shard_worker.h"
#include "test_data.h"

namespace corral {
namespace {

TEST(PlacementMemory, ShardsAndReplicasLieOnTheirWorkersNode) {
  const SyntheticSplit data = MakeSyntheticClassification(
      {.rows = 20000, .features = 1000, .nnz_per_row = 20, .seed = 3}, 10);
  const LogisticModel model(data.train, 1e-4f);
  constexpr int kWorkers = 2;
  const internal::Placement placement("", Pin::kCompact, kWorkers);
  ASSERT_TRUE(placement.report().pinned);
  struct Worker {
    internal::ShardWorker<LogisticModel> state;
    std::vector<float> x;  // a replica
    bool pinned = false;
    bool bound = false;
  };
  std::vector<Worker> workers(kWorkers);
  for (int w = 0; w < kWorkers; ++w) {
    Worker& self = workers[static_cast<std::size_t>(w)];
    // As the engine's setup does: pin, first-touch, then bind.
    std::thread([&, w] {
      self.pinned = placement.Bind(w);
      self.state.Build(model, data.train, {.first = 0, .total = data.train.rows()}, w, kWorkers, 1,
                       Shuffle::kEpoch, /*copy=*/true);
      self.x.assign(model.NumParams() * 64, 0.5f);
      std::vector<std::span<const std::byte>> areas = self.state.OwnedMemory();
      areas.push_back(std::as_bytes(std::span(self.x)));
      self.bound = placement.BindLocal(w, areas);
    }).join();
  }
  for (int w = 0; w < kWorkers; ++w) {
    Worker& self = workers[static_cast<std::size_t>(w)];
    if (!self.pinned || !self.bound) GTEST_SKIP() << "this system refuses thread or memory binding";
    const int node = placement.report().worker_numa[static_cast<std::size_t>(w)];
    ASSERT_GE(node, 0);
    std::vector<std::span<const std::byte>> areas = self.state.OwnedMemory();
    ASSERT_EQ(areas.size(), 4u);  // values, labels, row offsets, indices
    areas.push_back(std::as_bytes(std::span(self.x)));
    for (std::size_t a = 0; a < areas.size(); ++a) {
      EXPECT_EQ(placement.NodeOf(areas[a]), node) << "worker " << w << ", area " << a;
    }
  }
}

std::string MemorySetting(const TrainResult& r) {
  for (const ModeSetting& s : r.settings) {
    if (s.key == "memory") return std::get<std::string>(s.value);
  }
  return "(no memory setting)";
}

TrainResult SmallRun(Algorithm algorithm, Pin pin, std::string hardware = "") {
  static const SyntheticSplit data = testing::SmallProblem();
  return Train(data.train, nullptr,
               {.algorithm = algorithm, .threads = 2, .epochs = 1, .lr = 0.1f, .pin = pin,
                .hardware = std::move(hardware), .gossip_every = 1});
}

TEST(PlacementMemory, RunsSayWhereMemoryWent) {
  using ::testing::HasSubstr;
  using ::testing::StartsWith;
  for (const Algorithm a : {Algorithm::kHogwild, Algorithm::kHogwildPP, Algorithm::kDpsgd}) {
    const std::string pinned = MemorySetting(SmallRun(a, Pin::kCompact));
    EXPECT_THAT(pinned, StartsWith("worker memory (shards, replicas) ")) << ToString(a);
    EXPECT_THAT(pinned, HasSubstr(a == Algorithm::kHogwild ? "shared model" : "nodes")) << ToString(a);
    EXPECT_THAT(MemorySetting(SmallRun(a, Pin::kNone)), StartsWith("placement unknown: threads not pinned"))
        << ToString(a);
  }
  EXPECT_THAT(MemorySetting(SmallRun(Algorithm::kHogwild, Pin::kCompact, "synthetic:pack:2 core:2")),
              StartsWith("not placed: planned for a description"));
}

}  // namespace
}  // namespace corral
