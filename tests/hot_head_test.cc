// The hot head (engine/src/hot_head.h) piece by piece: which coordinates it picks, the split
// rows, and that syncs lose no worker's change, also with many workers racing (TSan).
#include <algorithm>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "engine/src/hot_head.h"

namespace corral::internal {
namespace {

// Rows over 6 features: feature 4 in every row, 1 in three, 0 and 5 in two, 2 in one, 3 never.
Dataset Rows() {
  return Dataset({0, 3, 5, 8, 10}, {0, 1, 4, /**/ 4, 5, /**/ 1, 2, 4, /**/ 0, 4},
                 {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {1, -1, 1, -1}, 6);
}

TEST(HotHead, TakesTheCoordinatesInTheMostRows) {
  const Dataset data = Rows();  // rows with: 0:2 1:2 2:1 3:0 4:4 5:1
  const HotHead two = ChooseHotHead(data, 6, 2);
  // 4 first, then a tie between 0 and 1 broken by the lower index; slots in coordinate order.
  EXPECT_EQ(two.coordinate, (std::vector<std::uint32_t>{0, 4}));
  EXPECT_EQ(two.slot, (std::vector<std::int32_t>{0, -1, -1, -1, 1, -1}));
  // More than there are: only coordinates that occur.
  EXPECT_EQ(ChooseHotHead(data, 6, 100).coordinate, (std::vector<std::uint32_t>{0, 1, 2, 4, 5}));
  // Coordinates beyond the model (a wider test set) are never hot.
  EXPECT_EQ(ChooseHotHead(data, 4, 100).coordinate, (std::vector<std::uint32_t>{0, 1, 2}));
  EXPECT_TRUE(ChooseHotHead(data, 6, 0).empty());
  // Automatic on 4 rows: every coordinate in at least one row (4 / 512 rounds up to 1 row).
  EXPECT_EQ(ChooseHotHead(data, 6, -1).coordinate.size(), 5u);
  EXPECT_TRUE(ChooseHotHead(Dataset::Dense({1, 2, 3, 4}, {1, -1}, 2), 2, -1).empty());
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
  EXPECT_EQ(ChooseHotHead(data, 3, -1).coordinate, (std::vector<std::uint32_t>{0, 1}));
  EXPECT_EQ(ChooseHotHead(data, 3, 3).coordinate, (std::vector<std::uint32_t>{0, 1, 2}));
}

TEST(HotHead, SplitRowsKeepEveryEntryHotOnesFirstAsSlots) {
  const Dataset data = Rows();
  const HotHead head = ChooseHotHead(data, 6, 2);  // coordinates 0 and 4
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
  const HotHead head = ChooseHotHead(data, 6, 2);  // coordinates 0 and 4
  std::vector<float> storage{1, 2, 3, 4, 5, 6};
  const Params w(storage);
  const std::vector<float> no_shrink(6, 1.0f);
  HotCopy a, b;
  a.Begin(w, head, no_shrink);
  b.Begin(w, head, no_shrink);
  EXPECT_EQ(a.local, (std::vector<float>{1, 5}));
  a.local[0] += 0.5f;   // coordinate 0
  b.local[0] -= 0.25f;  // coordinate 0 again
  b.local[1] += 2.0f;   // coordinate 4
  a.Sync(w, head, false);
  EXPECT_EQ(storage[0], 1.5f);
  EXPECT_EQ(a.local, (std::vector<float>{1.5f, 5}));
  b.Sync(w, head, false);
  EXPECT_EQ(storage, (std::vector<float>{1.25f, 2, 3, 4, 7, 6}));  // both changes, none lost
  EXPECT_EQ(b.local, (std::vector<float>{1.25f, 7}));
  EXPECT_EQ(b.base, b.local);
  // Exclusive: the copy is stored as it is.
  b.local[1] = 0.1f;
  b.Sync(w, head, true);
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
          copy.Sync(w, head, false);
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
