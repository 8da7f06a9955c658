// --shuffle (engine/src/runtime/epoch_layout.h): epoch visits exactly index's samples in
// index's order (row by row, and so every run's parameters bit for bit), off visits storage
// order, the flag's bad values and the memory fallback are reported.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <corral/corral.h>

#include "engine/src/modes/hogwild_steps.h"
#include "engine/src/runtime/epoch_layout.h"
#include "engine/src/runtime/huge_pages.h"
#include "engine/src/runtime/shard_worker.h"
#include "algorithm_names.h"
#include "test_data.h"

namespace corral::internal {
namespace {

using testing::PlantedRatings;
using testing::SmallProblem;

using Worker = HogwildWorker<LogisticModel>;

// A worker's epoch as it reads it: rows (indices, values) and labels in visiting order.
struct Visit {
  std::vector<std::vector<std::uint32_t>> index;
  std::vector<std::vector<float>> value;
  std::vector<float> label;
  bool operator==(const Visit&) const = default;
};

Visit VisitDataset(const Worker& s) {
  Visit v;
  for (const std::uint32_t r : s.order) {
    const SparseRow row = s.shard.Row(r);
    v.index.emplace_back(row.index.begin(), row.index.end());
    v.value.emplace_back(row.value.begin(), row.value.end());
    v.label.push_back(s.shard.Label(r));
  }
  return v;
}

Visit VisitSplitRows(const Worker& s) {
  Visit v;
  const SplitRows& rows = s.hot.rows;
  for (const std::uint32_t r : s.order) {
    const auto first = static_cast<std::ptrdiff_t>(rows.begin[r]);
    const auto last = static_cast<std::ptrdiff_t>(rows.begin[r + 1]);
    v.index.emplace_back(rows.index.begin() + first, rows.index.begin() + last);
    v.value.emplace_back(rows.value.begin() + first, rows.value.begin() + last);
    v.index.back().push_back(rows.hot[r]);  // the split point too
    v.label.push_back(rows.label[r]);
  }
  return v;
}

// Worker `w` of `workers` on `data`, built as the mode builds it, after epoch `epoch` began.
void Start(Worker& s, const Dataset& data, const LogisticModel& model, Shuffle shuffle, int w,
           int workers, int epoch, const HotHead* head = nullptr) {
  const TrainConfig config{.batch = 1, .shuffle = shuffle};
  RunPlan plan{.train = data, .config = config, .threads = workers, .workers = workers,
               .held = {.first = 0, .total = data.rows()}, .shuffle = shuffle};
  BuildHotWorker(s, model, plan, w, head != nullptr ? *head : HotHead{}, workers == 1);
  s.BeginEpoch(/*seed=*/5, epoch, w, 0);
}

TEST(Shuffle, EpochVisitsIndexsRowsInIndexsOrder) {
  const Dataset data = SmallProblem().train;
  const LogisticModel model(data, 1e-3f);
  for (int w = 0; w < 3; ++w) {
    Worker index, epoch;
    Start(index, data, model, Shuffle::kIndex, w, 3, 0);
    Start(epoch, data, model, Shuffle::kEpoch, w, 3, 0);
    for (int e = 0; e < 3; ++e) {  // later epochs re-lay out from storage order again
      index.BeginEpoch(5, e, w, 0);
      epoch.BeginEpoch(5, e, w, 0);
      EXPECT_EQ(VisitDataset(epoch), VisitDataset(index)) << "worker " << w << " epoch " << e;
      // The rest of the epoch's random stream is the same too (buckwild's rounding, ...).
      EXPECT_EQ(epoch.rng(), index.rng());
    }
    EXPECT_GT(epoch.ShuffleCopyBytes(), 0u);
    EXPECT_EQ(index.ShuffleCopyBytes(), 0u);
  }
}

TEST(Shuffle, EpochVisitsIndexsSplitRowsInIndexsOrder) {
  const Dataset data = SmallProblem().train;
  const LogisticModel model(data, 1e-3f);
  const HotHead head = ChooseHotHead(data, model.NumParams(), 16);
  ASSERT_FALSE(head.empty());
  for (int e = 0; e < 2; ++e) {
    Worker index, epoch;
    Start(index, data, model, Shuffle::kIndex, 1, 2, e, &head);
    Start(epoch, data, model, Shuffle::kEpoch, 1, 2, e, &head);
    EXPECT_EQ(VisitSplitRows(epoch), VisitSplitRows(index)) << "epoch " << e;
    EXPECT_EQ(epoch.ShuffleCopyBytes(), epoch.hot.rows.Bytes());
  }
}

TEST(Shuffle, EpochLaysOutDenseRowsToo) {
  const Dataset data = MakeSyntheticClassification(
                           {.rows = 200, .features = 7, .seed = 3, .dense = true}, 0)
                           .train;
  const LogisticModel model(data, 1e-3f);
  Worker index, epoch;
  Start(index, data, model, Shuffle::kIndex, 0, 1, 1);
  Start(epoch, data, model, Shuffle::kEpoch, 0, 1, 1);
  EXPECT_TRUE(epoch.shard.is_dense());
  EXPECT_EQ(VisitDataset(epoch), VisitDataset(index));
}

// A stop must not wait for a large shard's copy: it ends within kStopCheckRows rows.
TEST(Shuffle, TheCopyStopsOnHalt) {
  const Dataset data = MakeSyntheticClassification({.rows = 3 * kStopCheckRows, .features = 50, .seed = 4}, 0).train;
  std::vector<std::uint32_t> reverse(data.rows());
  for (std::size_t k = 0; k < reverse.size(); ++k) reverse[k] = static_cast<std::uint32_t>(reverse.size() - 1 - k);
  EpochLayout layout;
  layout.Build(data);
  std::atomic<bool> halt{true};
  layout.Permute(reverse, &halt);
  const auto values = [](const Dataset& d, std::size_t r) {
    return std::vector<float>(d.Row(r).value.begin(), d.Row(r).value.end());
  };
  ASSERT_NE(values(data, 0), values(data, reverse[0]));
  EXPECT_EQ(values(layout.view(), 0), values(data, 0)) << "copied although halted";
  halt.store(false, std::memory_order_relaxed);
  layout.Permute(reverse, &halt);
  for (std::size_t k = 0; k < reverse.size(); ++k) {
    ASSERT_EQ(values(layout.view(), k), values(data, reverse[k])) << k;
    ASSERT_EQ(layout.view().Label(k), data.Label(reverse[k])) << k;
  }
}

// The epoch copy and the split rows live in HugeVectors (huge_pages.h): a large one starts on a
// huge-page boundary (else Linux's advice covers none of it), keeps its contents through a copy
// and a growth, and a small one is an ordinary allocation.
TEST(HugeVector, LargeArraysStartOnAHugePageAndBehaveAsVectors) {
  const std::size_t large = kMinHugeBytes / sizeof(float) + 12345;
  HugeVector<float> a(large);
  std::iota(a.begin(), a.end(), 0.0f);
#ifdef MADV_HUGEPAGE
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data()) % kHugePageBytes, 0u);
#endif
  HugeVector<float> b;
  b = a;
  a.push_back(-1.0f);  // grows into a new mapping
  ASSERT_EQ(b.size(), large);
  ASSERT_EQ(a.size(), large + 1);
  for (std::size_t i = 0; i < large; i += 997) {
    ASSERT_EQ(a[i], static_cast<float>(i)) << i;
    ASSERT_EQ(b[i], static_cast<float>(i)) << i;
  }
  EXPECT_EQ(a.back(), -1.0f);
  HugeVector<std::uint64_t> small(100, 7);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small.data()) % alignof(std::uint64_t), 0u);
  EXPECT_EQ(small[99], 7u);
}

TEST(Shuffle, OffVisitsStorageOrder) {
  const Dataset data = SmallProblem().train;
  const LogisticModel model(data, 1e-3f);
  Worker off, stored;
  Start(off, data, model, Shuffle::kOff, 1, 2, 4);
  std::vector<std::uint32_t> identity(off.order.size());
  std::iota(identity.begin(), identity.end(), 0u);
  EXPECT_EQ(off.order, identity);
  const std::size_t begin = ShardBegin(data.rows(), 1, 2);
  for (std::size_t k = 0; k < off.order.size(); ++k) {
    EXPECT_EQ(off.shard.Label(off.order[k]), data.Label(begin + k));
  }
}

// Same parameters bit for bit, through the public API: the fused loop with and without a hot
// head, the generic loop (batch 4), locked, a round-based mode with several workers (sync
// steps together and sums in worker order), the replica modes' rounds (local, dpsgd, dcd),
// hogwild++'s group loop and matrix factorisation's ratings rows.
// Weights in [0, 2) per row, a few 0 (Dataset::WithWeights): they travel with their rows.
Dataset RandomlyWeighted(const Dataset& data, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> w(data.rows());
  for (float& v : w) v = rng.Below(8) == 0 ? 0.0f : 2 * rng.UniformFloat();
  return data.WithWeights(std::move(w), "weights");
}

TEST(Shuffle, EpochTrainsTheSameModelAsIndexBitForBit) {
  const Dataset data = SmallProblem().train;
  const Dataset ratings = PlantedRatings(30, 40, 3, 600, 0.1, 2);
  const Dataset weighted = RandomlyWeighted(data, 11);
  const Dataset weighted_ratings = RandomlyWeighted(ratings, 12);
  struct Case {
    const char* name;
    TrainConfig config;
    const Dataset* data;
  };
  const std::vector<Case> cases = {
      {"hogwild hot head", {.threads = 1, .epochs = 3, .lr = 0.2f}, &data},
      {"hogwild plain", {.threads = 1, .epochs = 3, .lr = 0.2f, .hot_coords = 0}, &data},
      {"hogwild batch 4", {.threads = 1, .epochs = 3, .batch = 4, .lr = 0.2f}, &data},
      {"locked", {.algorithm = Algorithm::kLocked, .threads = 1, .epochs = 3, .lr = 0.2f}, &data},
      {"sync 3 workers", {.algorithm = Algorithm::kSync, .threads = 3, .epochs = 3, .batch = 2, .lr = 0.2f}, &data},
      // The synchronous replica modes (RoundReplicas): 3 workers wrap their shorter shards.
      {"local 3 workers", {.algorithm = Algorithm::kLocal, .threads = 3, .epochs = 3, .lr = 0.2f, .gossip_every = 4}, &data},
      {"dpsgd ring, batch 2", {.algorithm = Algorithm::kDpsgd, .threads = 3, .epochs = 3, .batch = 2, .lr = 0.2f,
                               .topology = "ring", .gossip_every = 2}, &data},
      {"dcd", {.algorithm = Algorithm::kDcd, .threads = 2, .epochs = 2, .lr = 0.2f, .gossip_every = 1}, &data},
      {"hogwild++", {.algorithm = Algorithm::kHogwildPP, .threads = 1, .epochs = 3, .lr = 0.2f}, &data},
      {"mf", {.model = ModelKind::kMf, .threads = 1, .epochs = 3, .rank = 3, .lr = 0.05f}, &ratings},
      {"weighted, hot head", {.threads = 1, .epochs = 3, .lr = 0.2f, .hot_coords = 64}, &weighted},
      {"weighted, plain", {.threads = 1, .epochs = 3, .lr = 0.2f, .hot_coords = 0}, &weighted},
      {"weighted, local 3 workers", {.algorithm = Algorithm::kLocal, .threads = 3, .epochs = 3, .lr = 0.2f,
                                     .gossip_every = 4}, &weighted},
      {"weighted, hogwild++", {.algorithm = Algorithm::kHogwildPP, .threads = 1, .epochs = 3, .lr = 0.2f}, &weighted},
      {"weighted, mf", {.model = ModelKind::kMf, .threads = 1, .epochs = 3, .rank = 3, .lr = 0.05f},
       &weighted_ratings},
  };
  for (const Case& c : cases) {
    TrainConfig index = c.config, epoch = c.config;
    index.pin = epoch.pin = Pin::kNone;
    index.shuffle = Shuffle::kIndex;
    epoch.shuffle = Shuffle::kEpoch;
    const TrainResult a = Train(*c.data, nullptr, index);
    const TrainResult b = Train(*c.data, nullptr, epoch);
    EXPECT_EQ(a.shuffle, Shuffle::kIndex) << c.name;
    EXPECT_EQ(b.shuffle, Shuffle::kEpoch) << c.name;
    EXPECT_GT(b.shuffle_copy_bytes, 0u) << c.name;
    ASSERT_EQ(a.params.size(), b.params.size()) << c.name;
    EXPECT_EQ(0, std::memcmp(a.params.data(), b.params.data(), a.params.size() * sizeof(float)))
        << c.name;
  }
}

// Rows of 4 KiB or more: auto reads them through the index from each worker's copy (in huge
// pages), which trains the same model bit for bit as index reading the set in place.
TEST(Shuffle, AutoOnWideRowsIsIndexFromACopy) {
  constexpr std::size_t kFeatures = 1100, kRows = 60;  // 4.4 KB a row
  Rng rng(5);
  std::vector<float> values(kFeatures * kRows), labels(kRows);
  for (float& v : values) v = rng.UniformFloat() - 0.5f;
  for (std::size_t r = 0; r < kRows; ++r) labels[r] = values[r * kFeatures] + values[r * kFeatures + 1] > 0 ? 1.0f : -1.0f;
  const Dataset data = Dataset::Dense(std::move(values), std::move(labels), kFeatures, "wide");
  for (const Algorithm algorithm : {Algorithm::kHogwild, Algorithm::kLocal}) {
    // A fixed period: the automatic one is chosen from measured times, so two runs of local
    // may pick different periods (under load, with the sanitizers at -Og, they did).
    TrainConfig config{.algorithm = algorithm, .threads = 2, .epochs = 3, .lr = 0.05f,
                       .pin = Pin::kNone, .gossip_every = 4};
    if (algorithm == Algorithm::kHogwild) config.threads = 1;  // one worker: deterministic
    TrainConfig index = config;
    index.shuffle = Shuffle::kIndex;
    const TrainResult a = Train(data, nullptr, config);  // auto, the default
    const TrainResult b = Train(data, nullptr, index);
    EXPECT_EQ(a.shuffle, Shuffle::kIndex);
    EXPECT_EQ(a.shuffle_copy_bytes, 0u);  // the shard copy is no epoch copy
    std::string said;
    for (const auto& [label, text] : a.summary) {
      if (label == "shuffle") said = text;
    }
    EXPECT_NE(said.find("(auto: rows of 4.4 KB (at least 4 KiB) stream on their own, each worker's "
                        "shard copied once into huge pages)"), std::string::npos) << said;
    ASSERT_EQ(a.params.size(), b.params.size());
    EXPECT_EQ(0, std::memcmp(a.params.data(), b.params.data(), a.params.size() * sizeof(float)))
        << ToString(algorithm);
  }
}

TEST(Shuffle, ModesThatReadThroughAnIndexSaySo) {
  const TrainResult r = Train(SmallProblem().train, nullptr,
                              {.algorithm = Algorithm::kBuckwild, .threads = 2, .epochs = 1,
                               .lr = 0.2f, .pin = Pin::kNone, .shuffle = Shuffle::kEpoch});
  EXPECT_EQ(r.shuffle, Shuffle::kIndex);
  bool said = false;
  for (const auto& [label, text] : r.summary) {
    said = said || (label == "shuffle" && text.find("index") != std::string::npos);
  }
  EXPECT_TRUE(said);
  // adpsgd (asynchronous: no bitwise comparison with 2 workers) re-lays out its rows.
  const TrainResult a = Train(SmallProblem().train, nullptr,
                              {.algorithm = Algorithm::kAdpsgd, .threads = 2, .epochs = 1,
                               .lr = 0.2f, .pin = Pin::kNone, .shuffle = Shuffle::kEpoch});
  EXPECT_EQ(a.shuffle, Shuffle::kEpoch);
  EXPECT_GT(a.shuffle_copy_bytes, 0u);
}

TEST(Shuffle, FallsBackToIndexWhenTheCopyDoesNotFit) {
  // No budget: the loaded set, its shards and the copy (three copies) within the machine's memory.
  DataCopies c = ResolveDataCopies(Shuffle::kEpoch, true, false, 100, 0, 300);
  EXPECT_EQ(c.shuffle, Shuffle::kEpoch);
  EXPECT_TRUE(c.shuffle_note.empty());
  c = ResolveDataCopies(Shuffle::kEpoch, true, true, 101, 0, 300);
  EXPECT_EQ(c.shuffle, Shuffle::kIndex);
  EXPECT_TRUE(c.copy_shards);  // copied as asked: only a budget drops them
  EXPECT_NE(c.shuffle_note.find("index: --shuffle epoch needs"), std::string::npos) << c.shuffle_note;
  EXPECT_EQ(ResolveDataCopies(Shuffle::kOff, true, false, 1e12, 0, 1).shuffle, Shuffle::kOff);
  EXPECT_EQ(ResolveDataCopies(Shuffle::kIndex, true, false, 1e12, 0, 1).shuffle, Shuffle::kIndex);
}

// --shuffle auto: index when a worker's shard takes at most a quarter of its cache share,
// else epoch (and then epoch's memory fallbacks); the note says which and why.
TEST(Shuffle, AutoReadsInPlaceWhenAShardFitsItsCacheShare) {
  const CacheShare l3{.bytes = 400, .cache_bytes = 800, .level = "L3", .sharers = 2};
  DataCopies c = ResolveDataCopies(Shuffle::kAuto, true, false, 200, 0, 1e9, l3, 2);
  EXPECT_EQ(c.shuffle, Shuffle::kIndex);
  EXPECT_TRUE(c.shuffle_note.empty());
  EXPECT_EQ(c.auto_reason, "shard 100 bytes fits a quarter of its 400 bytes share of the 800 bytes L3");

  c = ResolveDataCopies(Shuffle::kAuto, true, false, 202, 0, 1e9, l3, 2);  // 101 bytes a shard
  EXPECT_EQ(c.shuffle, Shuffle::kEpoch);
  EXPECT_EQ(c.auto_reason, "shard 101 bytes exceeds a quarter of its 400 bytes share of the 800 bytes L3");

  const CacheShare alone{.bytes = 32 << 20, .cache_bytes = 32 << 20, .level = "L3", .sharers = 1};
  c = ResolveDataCopies(Shuffle::kAuto, true, false, 4e6, 0, 1e12, alone, 1);
  EXPECT_EQ(c.shuffle, Shuffle::kIndex);
  EXPECT_EQ(c.auto_reason, "shard 4.0 MB fits a quarter of the 32 MiB L3");

  // No cache known (a described machine without caches, PlanRun before placement): epoch.
  c = ResolveDataCopies(Shuffle::kAuto, true, false, 1, 0, 1e9);
  EXPECT_EQ(c.shuffle, Shuffle::kEpoch);
  EXPECT_EQ(c.auto_reason, "no cache size known");

  // Epoch chosen, then short of memory: index, with both reasons.
  c = ResolveDataCopies(Shuffle::kAuto, true, false, 101, 0, 300, l3, 1);
  EXPECT_EQ(c.shuffle, Shuffle::kIndex);
  EXPECT_NE(c.shuffle_note.find("index: --shuffle epoch needs"), std::string::npos) << c.shuffle_note;
  EXPECT_NE(c.auto_reason.find("exceeds"), std::string::npos) << c.auto_reason;

  // Only auto is resolved by the cache.
  EXPECT_EQ(ResolveDataCopies(Shuffle::kEpoch, true, false, 1, 0, 1e9, l3, 1).shuffle, Shuffle::kEpoch);
  EXPECT_TRUE(ResolveDataCopies(Shuffle::kEpoch, true, false, 1, 0, 1e9, l3, 1).auto_reason.empty());

  // Rows of 4 KiB or more: index whatever the shard (each row a stream of its own); just below,
  // the cache rule as before.
  c = ResolveDataCopies(Shuffle::kAuto, true, false, 8e8, 0, 1e12, alone, 1, false, 8000);
  EXPECT_EQ(c.shuffle, Shuffle::kIndex);
  EXPECT_TRUE(c.copy_shards);  // read from a copy in huge pages, as epoch's copy would be
  EXPECT_EQ(c.auto_reason, "rows of 8.0 KB (at least 4 KiB) stream on their own, each worker's shard "
                           "copied once into huge pages");
  // Where three copies do not fit the machine, or the budget leaves no room, read in place.
  c = ResolveDataCopies(Shuffle::kAuto, true, false, 8e8, 0, 2e9, alone, 1, false, 8000);
  EXPECT_EQ(c.shuffle, Shuffle::kIndex);
  EXPECT_FALSE(c.copy_shards);
  c = ResolveDataCopies(Shuffle::kAuto, true, false, 8e8, std::uint64_t{500} << 20, 1e12, alone, 1, false, 8000);
  EXPECT_FALSE(c.copy_shards);
  EXPECT_NE(c.shards_note.find("read in place: the workers' shard copies"), std::string::npos) << c.shards_note;
  c = ResolveDataCopies(Shuffle::kAuto, true, false, 8e8, std::uint64_t{1} << 30, 1e12, alone, 1, false, 8000);
  EXPECT_TRUE(c.copy_shards);
  EXPECT_TRUE(c.shards_note.empty());
  c = ResolveDataCopies(Shuffle::kAuto, true, false, 8e8, 0, 1e12, alone, 1, false, 4095);
  EXPECT_EQ(c.shuffle, Shuffle::kEpoch);
  EXPECT_NE(c.auto_reason.find("exceeds"), std::string::npos) << c.auto_reason;
  // An explicit epoch stays epoch on any rows.
  EXPECT_EQ(ResolveDataCopies(Shuffle::kEpoch, true, false, 8e8, 0, 1e12, alone, 1, false, 8000).shuffle,
            Shuffle::kEpoch);
}

// --memory-budget: the epoch's copy first, then the shard copies, then (bytes_left) the hot
// head's split rows; what does not fit is read in place and said.
TEST(MemoryBudget, KeepsTheEpochCopyFirstThenTheShards) {
  const double data = 100;
  DataCopies c = ResolveDataCopies(Shuffle::kEpoch, true, true, data, 250, 1);
  EXPECT_EQ(c.shuffle, Shuffle::kEpoch);
  EXPECT_TRUE(c.copy_shards);
  EXPECT_EQ(c.bytes_left, 50);
  EXPECT_TRUE(c.shuffle_note.empty() && c.shards_note.empty());

  c = ResolveDataCopies(Shuffle::kEpoch, true, true, data, 150, 1);
  EXPECT_EQ(c.shuffle, Shuffle::kEpoch);
  EXPECT_FALSE(c.copy_shards);
  EXPECT_EQ(c.bytes_left, 50);
  EXPECT_TRUE(c.shuffle_note.empty());
  EXPECT_NE(c.shards_note.find("beside the epoch's copy within --memory-budget"), std::string::npos)
      << c.shards_note;

  c = ResolveDataCopies(Shuffle::kEpoch, true, true, data, 99, 1);
  EXPECT_EQ(c.shuffle, Shuffle::kIndex);
  EXPECT_FALSE(c.copy_shards);
  EXPECT_EQ(c.bytes_left, 99);
  EXPECT_NE(c.shuffle_note.find("index: --shuffle epoch's copy of the data (100 bytes) does not fit "
                                "within --memory-budget 99 bytes"),
            std::string::npos)
      << c.shuffle_note;
  EXPECT_FALSE(c.shards_note.empty());

  // Epoch does not fit but the shard copies do: index over local copies.
  c = ResolveDataCopies(Shuffle::kEpoch, true, true, data, 199, 1);
  EXPECT_EQ(c.shuffle, Shuffle::kEpoch);
  EXPECT_FALSE(c.copy_shards);
  c = ResolveDataCopies(Shuffle::kIndex, true, true, data, 120, 1);
  EXPECT_EQ(c.shuffle, Shuffle::kIndex);
  EXPECT_TRUE(c.copy_shards);
  EXPECT_EQ(c.bytes_left, 20);
  // A mode that never re-lays out makes no epoch copy, whatever --shuffle says.
  c = ResolveDataCopies(Shuffle::kEpoch, false, true, data, 150, 1);
  EXPECT_EQ(c.shuffle, Shuffle::kEpoch);
  EXPECT_TRUE(c.copy_shards);
  EXPECT_EQ(c.bytes_left, 50);
}

TEST(MemoryBudget, ParsesSizesAndNamesTheFlagOtherwise) {
  EXPECT_EQ(ParseMemoryBudget("4096"), 4096u);
  EXPECT_EQ(ParseMemoryBudget("1K"), 1024u);
  EXPECT_EQ(ParseMemoryBudget("512M"), 512ull << 20);
  EXPECT_EQ(ParseMemoryBudget("1.5G"), 3ull << 29);
  EXPECT_EQ(ParseMemoryBudget("4GiB"), 4ull << 30);
  EXPECT_EQ(ParseMemoryBudget("2TB"), 2ull << 40);
  EXPECT_EQ(FormatBudget(ParseMemoryBudget("128M")), "128 MiB");  // as spelled, in messages
  EXPECT_EQ(FormatBudget(3ull << 29), "1536 MiB");
  EXPECT_EQ(FormatBudget(1000), "1.0 KB");
  for (const char* bad : {"", "0", "0.5", "-1", "-1G", "1X", "G", "GiB", "1e400", "nan", "inf", "4 G",
                          "1GG", "8388608T", " 1G"}) {
    try {
      ParseMemoryBudget(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
      EXPECT_EQ(std::string(e.what()),
                "--memory-budget '" + std::string(bad) +
                    "': expected a size above 0, in bytes or with K, M, G or T (powers of 1024), e.g. "
                    "512M or 4G");
    }
  }
}

std::string SummaryLine(const TrainResult& r, const std::string& label) {
  for (const auto& [l, text] : r.summary) {
    if (l == label) return text;
  }
  return "";
}

// The default, auto, on described machines: with an L3 (hwloc's synthetic default, 16 MiB) the
// small set reads in place; without a cache size it re-lays out. Either way the same model.
TEST(Shuffle, AutoIsTheDefaultAndSaysWhatItChose) {
  const SyntheticSplit data = testing::SmallProblem();
  EXPECT_EQ(TrainConfig{}.shuffle, Shuffle::kAuto);
  TrainConfig cached{.threads = 1, .epochs = 2, .lr = 0.2f, .hardware = "synthetic:pack:1 l3:1 core:1 pu:1"};
  TrainConfig uncached = cached;
  uncached.hardware = "synthetic:core:1 pu:1";
  const TrainResult a = Train(data.train, nullptr, cached);
  const TrainResult b = Train(data.train, nullptr, uncached);
  EXPECT_EQ(a.shuffle, Shuffle::kIndex);
  EXPECT_EQ(a.shuffle_copy_bytes, 0u);
  EXPECT_EQ(SummaryLine(a, "shuffle").rfind("index (auto: shard ", 0), 0u) << SummaryLine(a, "shuffle");
  EXPECT_NE(SummaryLine(a, "shuffle").find("fits a quarter of the 16 MiB L3)"), std::string::npos)
      << SummaryLine(a, "shuffle");
  EXPECT_EQ(b.shuffle, Shuffle::kEpoch);
  EXPECT_GT(b.shuffle_copy_bytes, 0u);
  EXPECT_NE(SummaryLine(b, "shuffle").find("(auto: no cache size known)"), std::string::npos)
      << SummaryLine(b, "shuffle");
  bool reported = false;
  for (const ModeSetting& m : a.settings) reported = reported || m.key == "shuffle_reason";
  EXPECT_TRUE(reported);
  EXPECT_EQ(a.params, b.params);
}

// A budget below one copy: the run reads its rows in place (index order, no hot head) and is
// the same run, bit for bit, as one asked for that way; a budget that holds the copies changes
// nothing.
TEST(MemoryBudget, ARunThatDoesNotFitIsTheInPlaceRunBitForBit) {
  const SyntheticSplit data = testing::SmallProblem();
  const TrainConfig base{.threads = 1, .epochs = 2, .lr = 0.2f, .pin = Pin::kNone, .shuffle = Shuffle::kEpoch};
  TrainConfig tight = base;
  tight.memory_budget = 1000;
  const TrainResult small = Train(data.train, nullptr, tight);
  EXPECT_EQ(small.shuffle, Shuffle::kIndex);
  EXPECT_EQ(small.hot_coords, 0);
  EXPECT_NE(SummaryLine(small, "shuffle").find("within --memory-budget 1.0 KB"), std::string::npos)
      << SummaryLine(small, "shuffle");
  EXPECT_NE(SummaryLine(small, "hot coords").find("off: its split rows"), std::string::npos)
      << SummaryLine(small, "hot coords");

  TrainConfig in_place = base;
  in_place.shuffle = Shuffle::kIndex;
  in_place.hot_coords = 0;
  EXPECT_EQ(Train(data.train, nullptr, in_place).params, small.params);

  TrainConfig roomy = base;
  roomy.memory_budget = 1ull << 30;
  const TrainResult large = Train(data.train, nullptr, roomy);
  const TrainResult unbounded = Train(data.train, nullptr, base);
  EXPECT_EQ(large.shuffle, Shuffle::kEpoch);
  EXPECT_GT(large.hot_coords, 0);
  EXPECT_EQ(large.params, unbounded.params);
}

// A budget that holds a window but not the whole copy, for a mode that reads through one
// (the fused linear loop of hogwild and hogwild++'s groups): each worker lays out a stretch of
// the epoch's order at a time. The rows are visited in the same order as read in place, so the
// run is that one bit for bit, sparse and dense, here with a dozen windows an epoch and a
// window that ends mid-way.
class WindowedModes : public ::testing::TestWithParam<Algorithm> {};

TEST_P(WindowedModes, AWindowAtATimeIsTheInPlaceRunBitForBit) {
  for (const auto& [dense, weights] : {std::pair{false, false}, {true, false}, {false, true}, {true, true}}) {
    SyntheticSplit data = MakeSyntheticClassification(
        {.rows = 12'000, .features = 40, .nnz_per_row = 12, .zipf = 0.8, .seed = 3, .dense = dense}, 10);
    if (weights) data.train = RandomlyWeighted(data.train, 13);
    const double bytes = DataBytes(data.train);
    TrainConfig base{.threads = 1, .epochs = 2, .lr = 0.2f, .pin = Pin::kNone, .shuffle = Shuffle::kEpoch};
    base.algorithm = GetParam();
    TrainConfig windowed = base;
    windowed.memory_budget = 2 * static_cast<std::uint64_t>(kMinWindowBytes) + 8000;
    ASSERT_GT(bytes, 12 * kMinWindowBytes) << "a dozen windows an epoch";
    const TrainResult w = Train(data.train, nullptr, windowed);
    EXPECT_EQ(w.shuffle, Shuffle::kEpoch);
    EXPECT_EQ(w.hot_coords, 0);
    EXPECT_LE(w.shuffle_copy_bytes, windowed.memory_budget);
    EXPECT_NE(SummaryLine(w, "shuffle").find("epoch in windows: each worker lays out"), std::string::npos)
        << SummaryLine(w, "shuffle");

    TrainConfig in_place = base;
    in_place.shuffle = Shuffle::kIndex;
    in_place.hot_coords = 0;
    EXPECT_EQ(Train(data.train, nullptr, in_place).params, w.params)
        << (dense ? "dense" : "sparse") << (weights ? ", weighted" : "");
  }
}

INSTANTIATE_TEST_SUITE_P(MemoryBudget, WindowedModes,
                         ::testing::Values(Algorithm::kHogwild, Algorithm::kHogwildPP), AlgorithmTestName);

TEST(MemoryBudget, WindowsOnlyForModesThatReadThemAndNotBelowTheLeast) {
  const std::uint64_t budget = 1 << 20;
  DataCopies c = ResolveDataCopies(Shuffle::kEpoch, true, false, 8e6, budget, 1e12, {}, 2, true);
  EXPECT_EQ(c.shuffle, Shuffle::kEpoch);
  EXPECT_EQ(c.window_bytes, budget / 4);  // an equal share each of half the budget
  EXPECT_DOUBLE_EQ(c.bytes_left, budget / 2);
  c = ResolveDataCopies(Shuffle::kEpoch, true, false, 8e6, budget, 1e12, {}, 2, false);
  EXPECT_EQ(c.shuffle, Shuffle::kIndex);
  EXPECT_EQ(c.window_bytes, 0u);
  c = ResolveDataCopies(Shuffle::kEpoch, true, false, 8e6, 200'000, 1e12, {}, 2, true);
  EXPECT_EQ(c.shuffle, Shuffle::kIndex) << "50 kB a worker is below the least window";
  c = ResolveDataCopies(Shuffle::kEpoch, true, false, 2e10, 1ull << 33, 1e12, {}, 1, true);
  EXPECT_EQ(c.window_bytes, static_cast<std::uint64_t>(kWindowBytes));
  c = ResolveDataCopies(Shuffle::kIndex, true, false, 8e6, budget, 1e12, {}, 2, true);
  EXPECT_EQ(c.window_bytes, 0u) << "index asked for";
}

// Workers on two (described) NUMA nodes copy their shards; a budget that holds the epoch's
// copy but not the shards' keeps them views and says so.
TEST(MemoryBudget, ShardCopiesGoBeforeTheEpochCopy) {
  const SyntheticSplit data = testing::SmallProblem();
  const double bytes = DataBytes(data.train);
  TrainConfig c{.threads = 2, .epochs = 1, .lr = 0.2f, .hardware = "synthetic:numa:2 core:1 pu:1",
                .shuffle = Shuffle::kEpoch, .hot_coords = 0};
  c.memory_budget = static_cast<std::uint64_t>(1.5 * bytes);
  const TrainResult r = Train(data.train, nullptr, c);
  EXPECT_EQ(r.shuffle, Shuffle::kEpoch);
  EXPECT_NE(SummaryLine(r, "shards").find("beside the epoch's copy within --memory-budget"), std::string::npos)
      << SummaryLine(r, "shards");
  c.memory_budget = static_cast<std::uint64_t>(2 * bytes);
  EXPECT_EQ(SummaryLine(Train(data.train, nullptr, c), "shards"), "");
}

TEST(Shuffle, ParsesItsValuesAndNamesTheFlagOtherwise) {
  EXPECT_EQ(ParseShuffle("auto"), Shuffle::kAuto);
  EXPECT_EQ(ParseShuffle("epoch"), Shuffle::kEpoch);
  EXPECT_EQ(ParseShuffle("index"), Shuffle::kIndex);
  EXPECT_EQ(ParseShuffle("off"), Shuffle::kOff);
  EXPECT_EQ(ToString(Shuffle::kEpoch), "epoch");
  try {
    ParseShuffle("random");
    FAIL() << "accepted 'random'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
    EXPECT_STREQ(e.what(), "unknown --shuffle value 'random' (expected one of: auto, epoch, index, off)");
  }
}

}  // namespace
}  // namespace corral::internal
