// The hot head (engine/src/modes/hot_head.h) piece by piece: which coordinates it picks, the split
// rows, and that syncs lose no worker's change, also with many workers racing (TSan).
#include <algorithm>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "engine/src/modes/hot_head.h"

namespace corral::internal {
namespace {

// Rows over 6 features: feature 4 in every row, 1 in three, 0 and 5 in two, 2 in one, 3 never.
Dataset Rows() {
  return Dataset({0, 3, 5, 8, 10}, {0, 1, 4, /**/ 4, 5, /**/ 1, 2, 4, /**/ 0, 4},
                 {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {1, -1, 1, -1}, 6);
}

TEST(HotHead, TakesTheCoordinatesInTheMostRowsMostFrequentFirst) {
  const Dataset data = Rows();  // rows with: 0:2 1:2 2:1 3:0 4:4 5:1
  const HotHead two = ChooseHotHead(data, 6, 2);
  // 4 first, then a tie between 0 and 1 broken by the lower index.
  EXPECT_EQ(two.coordinate, (std::vector<std::uint32_t>{4, 0}));
  EXPECT_EQ(two.slot, (std::vector<std::int32_t>{1, -1, -1, -1, 0, -1}));
  // More than there are: only coordinates that occur.
  EXPECT_EQ(ChooseHotHead(data, 6, 100).coordinate, (std::vector<std::uint32_t>{4, 0, 1, 2, 5}));
  // Coordinates beyond the model (a wider test set) are never hot.
  EXPECT_EQ(ChooseHotHead(data, 4, 100).coordinate, (std::vector<std::uint32_t>{0, 1, 2}));
  EXPECT_TRUE(ChooseHotHead(data, 6, 0).empty());
  // Automatic on 4 rows: every coordinate in at least one row (4 / 512 rounds up to 1 row).
  EXPECT_EQ(ChooseHotHead(data, 6, -1).coordinate.size(), 5u);
  EXPECT_TRUE(ChooseHotHead(Dataset::Dense({1, 2, 3, 4}, {1, -1}, 2), 2, -1).empty());
}

// Shares 1, 1/2, 1/8, 1/1000 of 8,000 rows with 32 updates per sync: wanted every 32, 64, 256
// and 32,000 samples, so tiers 1 (16 * 2), 2, 4 and the last (8,192).
TEST(HotHead, EachCoordinateIsSyncedAfterAboutTheSameNumberOfUpdates) {
  std::vector<std::uint64_t> row_ptr{0};
  std::vector<std::uint32_t> index;
  for (std::uint32_t r = 0; r < 8000; ++r) {
    index.push_back(0);
    if (r % 2 == 0) index.push_back(1);
    if (r % 8 == 0) index.push_back(2);
    if (r % 1000 == 0) index.push_back(3);
    row_ptr.push_back(index.size());
  }
  const Dataset data(row_ptr, index, std::vector<float>(index.size(), 1.0f),
                     std::vector<float>(8000, 1.0f), 4);
  const HotHead head = ChooseHotHead(data, 4, 4, 32);
  ASSERT_EQ(head.coordinate, (std::vector<std::uint32_t>{0, 1, 2, 3}));
  const std::vector<std::uint32_t> tier_end{0, 1, 2, 2, 3, 3, 3, 3, 3, 4};
  EXPECT_EQ(head.tier_end, tier_end);
  // Every 16 samples a worker syncs the prefix for its sync count's trailing zeros: coordinate 0
  // (tier 1) every 2nd sync = 32 samples, 2 (tier 4) every 16th = 256, 3 every 512th = 8,192.
  std::vector<int> synced(4, 0);
  for (std::uint64_t count = 1; count <= 1024; ++count) {
    for (std::size_t s = 0; s < head.SlotsAt(count); ++s) ++synced[s];
  }
  EXPECT_EQ(synced, (std::vector<int>{512, 256, 64, 2}));
  // One update per sync wants every 1, 2 and 8 samples for coordinates 0-2: more often than
  // the base interval allows, so tier 0 (every sync); coordinate 3 (every 1,000) tier 5.
  EXPECT_EQ(ChooseHotHead(data, 4, 4, 1).tier_end,
            (std::vector<std::uint32_t>{3, 3, 3, 3, 3, 4, 4, 4, 4, 4}));
}

// Automatic updates per sync: 32 x the head's entries per row, rounded to a power of 2 (about
// one sync per 32 samples), at least 32 and at most the slowest tier's 8,192 samples.
TEST(HotHead, AutomaticSyncsAboutOnceEvery32Samples) {
  EXPECT_EQ(AutoHotUpdates(0.0), 32u);  // never below 32
  EXPECT_EQ(AutoHotUpdates(1.0), 32u);
  EXPECT_EQ(AutoHotUpdates(1.4), 32u);  // 44.8: nearer 32 than 64 in log2
  EXPECT_EQ(AutoHotUpdates(1.5), 64u);  // 48: log2 5.58
  EXPECT_EQ(AutoHotUpdates(13.0), 512u);  // a9a's and ijcnn1's rows: 416
  EXPECT_EQ(AutoHotUpdates(30.0), 1024u);  // phishing's: 960
  EXPECT_EQ(AutoHotUpdates(1e6), 8192u);  // the slowest tier
  // Rows() has 10 entries over 4 rows; a head of coordinates 4 and 0 holds 6 of them (1.5 a row:
  // 64), all five occurring coordinates 10 (2.5: 80, 64); an explicit count is kept.
  const Dataset data = Rows();
  EXPECT_EQ(ChooseHotHead(data, 6, 2).updates, 64u);
  EXPECT_EQ(ChooseHotHead(data, 6, 100).updates, 64u);
  EXPECT_EQ(ChooseHotHead(data, 6, 1).updates, 32u);  // coordinate 4 alone: 1 a row
  EXPECT_EQ(ChooseHotHead(data, 6, 2, 7).updates, 7u);
}

TEST(HotHead, AutomaticSkipsCoordinatesRarerThanOneRowIn512) {
  // 1,024 rows: feature 0 in all, feature 1 in exactly 2 (= 1024 / 512), feature 2 in one.
  std::vector<std::uint64_t> row_ptr{0};
  std::vector<std::uint32_t> index;
  for (std::uint32_t r = 0; r < 1024; ++r) {
    index.push_back(0);
    if (r < 2) index.push_back(1);
    if (r == 2) index.push_back(2);
    row_ptr.push_back(index.size());
  }
  const Dataset data(row_ptr, index, std::vector<float>(index.size(), 1.0f),
                     std::vector<float>(1024, 1.0f), 3);
  EXPECT_EQ(ChooseHotHead(data, 3, -1).coordinate, (std::vector<std::uint32_t>{0, 1}));  // by frequency
  EXPECT_EQ(ChooseHotHead(data, 3, 3).coordinate, (std::vector<std::uint32_t>{0, 1, 2}));
}

TEST(HotHead, SplitRowsKeepEveryEntryHotOnesFirstAsSlots) {
  const Dataset data = Rows();
  const HotHead head = ChooseHotHead(data, 6, 2);  // coordinates 4 and 0
  SplitRows rows;
  rows.Build(data, head);
  ASSERT_EQ(rows.begin.size(), data.rows() + 1);
  for (std::size_t r = 0; r < data.rows(); ++r) {
    const SparseRow row = data.Row(r);
    ASSERT_EQ(rows.begin[r + 1] - rows.begin[r], row.nnz());
    std::vector<std::pair<std::uint32_t, float>> original, split;
    for (std::size_t k = 0; k < row.nnz(); ++k) original.emplace_back(row.index[k], row.value[k]);
    for (std::uint64_t k = rows.begin[r]; k < rows.begin[r + 1]; ++k) {
      const bool is_hot = k < rows.begin[r] + rows.hot[r];
      const std::uint32_t u = is_hot ? head.coordinate[rows.index[k]] : rows.index[k];
      EXPECT_EQ(is_hot, head.slot[u] >= 0) << "row " << r << " entry " << k;
      split.emplace_back(u, rows.value[k]);
    }
    std::sort(split.begin(), split.end());
    EXPECT_EQ(split, original) << "row " << r;
  }
}

TEST(HotCopy, SyncAddsEveryWorkersChangeAndReloads) {
  const Dataset data = Rows();
  const HotHead head = ChooseHotHead(data, 6, 2);  // slot 0: coordinate 4, slot 1: coordinate 0
  std::vector<float> storage{1, 2, 3, 4, 5, 6};
  const Params w(storage);
  const std::vector<float> no_shrink(6, 1.0f);
  HotCopy a, b;
  a.Begin(w, head, no_shrink);
  b.Begin(w, head, no_shrink);
  EXPECT_EQ(a.local, (std::vector<float>{5, 1}));
  a.local[1] += 0.5f;   // coordinate 0
  b.local[1] -= 0.25f;  // coordinate 0 again
  b.local[0] += 2.0f;   // coordinate 4
  a.Sync(w, head, false, 2);
  EXPECT_EQ(storage[0], 1.5f);
  EXPECT_EQ(a.local, (std::vector<float>{5, 1.5f}));
  b.Sync(w, head, false, 1);  // a prefix: coordinate 4 only
  EXPECT_EQ(storage, (std::vector<float>{1.5f, 2, 3, 4, 7, 6}));
  EXPECT_EQ(b.local, (std::vector<float>{7, 0.75f}));  // slot 1 keeps its unsynced change
  b.Sync(w, head, false, 2);
  EXPECT_EQ(storage, (std::vector<float>{1.25f, 2, 3, 4, 7, 6}));  // both changes, none lost
  EXPECT_EQ(b.local, (std::vector<float>{7, 1.25f}));
  EXPECT_EQ(b.base, b.local);
  // Exclusive: the copy is stored as it is.
  b.local[0] = 0.1f;
  b.Sync(w, head, true, 2);
  EXPECT_EQ(storage[4], 0.1f);
}

// Workers racing: each adds 1 to every head coordinate `kRounds` times, syncing after every
// round, while also writing tail coordinates of its own. Every change arrives (relaxed
// fetch_add), whatever the interleaving; under TSan this also checks the syncs for data races.
TEST(HotCopy, RacingWorkersLoseNoChange) {
  constexpr int kRounds = 2000;
  for (const int workers : {2, 4, 8}) {
    std::vector<std::uint64_t> row_ptr{0, 4};
    const Dataset data(row_ptr, {0, 1, 2, 3}, {1, 1, 1, 1}, {1}, 4 + workers);
    const HotHead head = ChooseHotHead(data, 4 + workers, 4);
    std::vector<float> storage(4 + workers, 0.0f);
    const Params w(storage);
    const std::vector<float> no_shrink(storage.size(), 1.0f);
    std::vector<std::thread> threads;
    for (int t = 0; t < workers; ++t) {
      threads.emplace_back([&, t] {
        HotCopy copy;
        copy.Begin(w, head, no_shrink);
        for (int round = 0; round < kRounds; ++round) {
          for (float& v : copy.local) v += 1.0f;
          w.Store(4 + t, w.Load(4 + t) + 1.0f);  // the worker's own tail coordinate
          copy.Sync(w, head, false, copy.local.size());
        }
      });
    }
    for (auto& thread : threads) thread.join();
    for (int u = 0; u < 4; ++u) EXPECT_EQ(storage[u], float(workers * kRounds)) << workers << " " << u;
    for (int t = 0; t < workers; ++t) EXPECT_EQ(storage[4 + t], float(kRounds));
  }
}

}  // namespace
}  // namespace corral::internal
