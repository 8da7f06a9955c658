// Dataset's storage and layouts (dense, wrapped, ratings), Gather, shard plans, epoch orders
// and the generators' new shapes (dense, multiclass, regression, ratings).
#include <corral/dataset.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include <corral/error.h>
#include <corral/shards.h>
#include <corral/stats.h>
#include <corral/synthetic.h>

#include "data_test_util.h"

namespace corral {
namespace {

using testing::ErrorOf;
using testing::ExpectSameData;

TEST(DenseDataset, RowsLookSparseToSparseCode) {
  const Dataset d = Dataset::Dense({1, 2, 3, 4, 5, 6}, {0, 1}, 3, "dense");
  EXPECT_TRUE(d.is_dense());
  EXPECT_EQ(d.rows(), 2u);
  EXPECT_EQ(d.nnz(), 6u);
  EXPECT_EQ(d.max_row_nnz(), 3u);
  const SparseRow row = d.Row(1);
  EXPECT_EQ(std::vector<std::uint32_t>(row.index.begin(), row.index.end()), (std::vector<std::uint32_t>{0, 1, 2}));
  EXPECT_EQ(std::vector<float>(row.value.begin(), row.value.end()), (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(d.Row(0).index.data(), d.Row(1).index.data());  // one shared column array
  EXPECT_EQ(d.DenseRow(0)[2], 3.0f);
  EXPECT_EQ(std::vector<std::uint64_t>(d.row_ptr().begin(), d.row_ptr().end()), (std::vector<std::uint64_t>{0, 3, 6}));
  const Dataset wide = d.WithNumFeatures(4);
  EXPECT_EQ(std::vector<float>(wide.value().begin(), wide.value().end()), (std::vector<float>{1, 2, 3, 0, 4, 5, 6, 0}));
  EXPECT_NE(ErrorOf([] { Dataset::Dense({1, 2, 3}, {0, 1}, 2, "odd"); }).find("odd: dense set has 3 values for 2 rows"),
            std::string::npos);
}

TEST(DatasetStorage, CopiesShareAndSlicesCopy) {
  const Dataset d = MakeSyntheticClassification({.rows = 50, .features = 20, .nnz_per_row = 4}, 0).train;
  const Dataset copy = d;  // NOLINT(performance-unnecessary-copy-initialization): the point
  EXPECT_EQ(copy.value().data(), d.value().data());
  const Dataset slice = d.Slice(10, 20);
  EXPECT_NE(slice.value().data(), d.value().data());
  ExpectSameData(slice, d.Gather(std::vector<std::size_t>{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}));
}

TEST(DatasetStorage, WrapViewsCallerArraysWithoutCopy) {
  auto arrays = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4});
  const std::vector<float> labels = {1, -1};
  const Dataset d = Dataset::WrapDense(*arrays, labels, 2, arrays, "wrapped");
  EXPECT_EQ(d.value().data(), arrays->data());
  const std::vector<std::uint64_t> row_ptr = {0, 1, 3};
  const std::vector<std::uint32_t> index = {2, 0, 1};
  EXPECT_NE(ErrorOf([&] {
              Dataset::WrapSparse({row_ptr, index, *arrays, labels, 3}, nullptr, "w");
            }).find("w: index has 3 entries but value has 4"),
            std::string::npos);
}

TEST(DatasetGather, CopiesRowsInOrderForBothLayouts) {
  const Dataset sparse = Dataset({0, 2, 2, 5}, {0, 3, 1, 2, 4}, {1, 2, 3, 4, 5}, {1, -1, 1}, 5, "s");
  const Dataset g = sparse.Gather(std::vector<std::size_t>{2, 0, 2});
  EXPECT_EQ(std::vector<std::uint64_t>(g.row_ptr().begin(), g.row_ptr().end()), (std::vector<std::uint64_t>{0, 3, 5, 8}));
  EXPECT_EQ(std::vector<float>(g.value().begin(), g.value().end()), (std::vector<float>{3, 4, 5, 1, 2, 3, 4, 5}));
  EXPECT_EQ(g.max_row_nnz(), 3u);
  const Dataset dense = Dataset::Dense({1, 2, 3, 4}, {0, 1}, 2, "d");
  const Dataset dg = dense.Gather(std::vector<std::size_t>{1});
  EXPECT_TRUE(dg.is_dense());
  EXPECT_EQ(dg.DenseRow(0)[0], 3.0f);
  EXPECT_NE(ErrorOf([&] { sparse.Gather(std::vector<std::size_t>{3}); }, ErrorCode::kBadConfig)
                .find("cannot gather row 3"),
            std::string::npos);
}

TEST(DatasetRatings, WithRatingsChecksTheLayout) {
  auto info = std::make_shared<RatingsInfo>(RatingsInfo{2, 1, 2, 1, {5, 7}, {9}});
  const Dataset good({0, 2, 4}, {0, 2, 1, 2}, {1, 1, 1, 1}, {3, 4}, 3, "r");
  EXPECT_EQ(good.WithRatings(info).ratings()->item_ids[0], 9u);
  const Dataset bad({0, 2, 4}, {0, 1, 1, 2}, {1, 1, 1, 1}, {3, 4}, 3, "r");
  EXPECT_NE(ErrorOf([&] { bad.WithRatings(info); }).find("row 0 is not {user, num_users + item}"),
            std::string::npos);
}

class ShardTest : public ::testing::TestWithParam<ShardAssignment> {};

TEST_P(ShardTest, EveryRowExactlyOnceInNearEqualShards) {
  const Dataset d = MakeSyntheticClassification({.rows = 1003, .features = 50, .nnz_per_row = 3,
                                                 .classes = 5}, 0).train;
  for (std::size_t workers : {1, 2, 3, 7, 16}) {
    const ShardPlan plan = PlanShards(d, {.workers = workers, .assignment = GetParam(), .seed = 4});
    ASSERT_EQ(plan.rows.size(), workers);
    std::vector<int> seen(d.rows());
    std::size_t smallest = d.rows(), largest = 0;
    for (const auto& shard : plan.rows) {
      for (std::size_t r : shard) ++seen[r];
      smallest = std::min(smallest, shard.size());
      largest = std::max(largest, shard.size());
    }
    EXPECT_TRUE(std::ranges::all_of(seen, [](int n) { return n == 1; }));
    EXPECT_LE(largest - smallest, 1u);
  }
}

INSTANTIATE_TEST_SUITE_P(Assignments, ShardTest,
                         ::testing::Values(ShardAssignment::kContiguous, ShardAssignment::kShuffled,
                                           ShardAssignment::kByLabel));

TEST(Shards, ContiguousShuffledAndByLabelHaveTheirShape) {
  const Dataset d = MakeSyntheticClassification({.rows = 1000, .features = 50, .nnz_per_row = 3,
                                                 .label_noise = 0, .classes = 4}, 0).train;
  const ShardPlan contiguous = PlanShards(d, {.workers = 4});
  EXPECT_EQ(contiguous.rows[1].front(), 250u);
  EXPECT_EQ(contiguous.rows[1].back(), 499u);
  const ShardPlan shuffled = PlanShards(d, {.workers = 4, .assignment = ShardAssignment::kShuffled, .seed = 1});
  EXPECT_TRUE(std::ranges::is_sorted(shuffled.rows[0]));
  EXPECT_NE(shuffled.rows[0], contiguous.rows[0]);
  EXPECT_EQ(PlanShards(d, {.workers = 4, .assignment = ShardAssignment::kShuffled, .seed = 1}).rows,
            shuffled.rows);
  // Non-IID: four balanced-ish classes over four workers; each worker sees at most two labels.
  const ShardPlan by_label = PlanShards(d, {.workers = 4, .assignment = ShardAssignment::kByLabel});
  for (const auto& shard : by_label.rows) {
    std::set<float> labels;
    for (std::size_t r : shard) labels.insert(d.Label(r));
    EXPECT_LE(labels.size(), 2u);
  }
  EXPECT_NE(ErrorOf([&] { PlanShards(d, {.workers = 0}); }, ErrorCode::kBadConfig).find("0 workers"),
            std::string::npos);
}

TEST(Shards, EpochOrderIsAPermutationFixedBySeedWorkerAndEpoch) {
  std::vector<std::uint32_t> a(100), b(100), c(100);
  EpochOrder(a, 1, 2, 3);
  EpochOrder(b, 1, 2, 3);
  EpochOrder(c, 1, 2, 4);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::vector<std::uint32_t> sorted = a;
  std::ranges::sort(sorted);
  for (std::uint32_t i = 0; i < 100; ++i) EXPECT_EQ(sorted[i], i);
}

TEST(Generators, MulticlassLabelsAreTheArgmaxOfThePlantedScores) {
  const SyntheticSplit s = MakeSyntheticClassification(
      {.rows = 2000, .features = 30, .label_noise = 0, .seed = 2, .dense = true, .classes = 5}, 100);
  ASSERT_EQ(s.truth.size(), 5u * 30u);
  EXPECT_TRUE(s.train.is_dense());
  for (std::size_t r = 0; r < s.train.rows(); ++r) {
    const std::span<const float> x = s.train.DenseRow(r);
    std::size_t best = 0;
    double best_score = -1e300;
    for (std::size_t c = 0; c < 5; ++c) {
      double score = 0;
      for (std::size_t j = 0; j < 30; ++j) score += static_cast<double>(s.truth[c * 30 + j]) * x[j];
      if (score > best_score) best_score = score, best = c;
    }
    ASSERT_EQ(s.train.Label(r), static_cast<float>(best)) << r;
  }
  const DatasetStats stats = ComputeStats(s.train);
  EXPECT_EQ(stats.label_counts.size(), 5u);
}

TEST(Generators, RegressionTargetsAreLinearPlusNoise) {
  const SyntheticSplit s = MakeSyntheticRegression({.rows = 5000, .features = 40, .nnz_per_row = 8,
                                                    .noise = 0.5, .seed = 3}, 0);
  double sum2 = 0;
  for (std::size_t r = 0; r < s.train.rows(); ++r) {
    const SparseRow row = s.train.Row(r);
    double y = 0;
    for (std::size_t k = 0; k < row.nnz(); ++k) y += static_cast<double>(s.truth[row.index[k]]) * row.value[k];
    const double residual = s.train.Label(r) - y;
    sum2 += residual * residual;
  }
  EXPECT_NEAR(std::sqrt(sum2 / 5000.0), 0.5, 0.03);
  ExpectSameData(MakeSyntheticRegression({.rows = 100, .features = 40, .seed = 3, .dense = true}, 0).train,
                 MakeSyntheticRegression({.rows = 100, .features = 40, .seed = 3, .dense = true}, 0).train);
}

TEST(Generators, RatingsAreLowRankPlusNoiseOnDistinctPairs) {
  const RatingsSpec spec{.users = 50, .items = 40, .rank = 4, .ratings = 1500, .noise = 0.2,
                         .test_fraction = 0.25, .seed = 8};
  const SyntheticRatings r = MakeSyntheticRatings(spec);
  EXPECT_EQ(r.train.rows() + r.test.rows(), 1500u);
  EXPECT_NEAR(static_cast<double>(r.test.rows()) / 1500.0, 0.25, 0.05);
  std::set<std::pair<std::uint64_t, std::uint64_t>> pairs;
  double sum2 = 0;
  for (const Dataset* d : {&r.train, &r.test}) {
    const RatingsInfo& m = *d->ratings();
    for (std::size_t row = 0; row < d->rows(); ++row) {
      const std::uint64_t u = m.user_ids[d->Row(row).index[0]];
      const std::uint64_t i = m.item_ids[d->Row(row).index[1] - m.num_users];
      EXPECT_TRUE(pairs.emplace(u, i).second) << "pair repeated";
      double dot = 0;
      for (std::size_t k = 0; k < 4; ++k) {
        dot += static_cast<double>(r.user_factors[(u - 1) * 4 + k]) * r.item_factors[(i - 1) * 4 + k];
      }
      const double residual = d->Label(row) - (r.mean + dot);
      sum2 += residual * residual;
    }
  }
  EXPECT_NEAR(std::sqrt(sum2 / 1500.0), 0.2, 0.02);
  ExpectSameData(MakeSyntheticRatings(spec).train, r.train);
  EXPECT_NE(ErrorOf([] { MakeSyntheticRatings({.users = 2, .items = 2, .ratings = 5}); }, ErrorCode::kBadConfig)
                .find("exceeds users x items"),
            std::string::npos);
  // Every pair at once takes the enumeration path.
  EXPECT_EQ(MakeSyntheticRatings({.users = 3, .items = 4, .rank = 2, .ratings = 12}).train.rows(), 12u);
}

TEST(Stats, SummarisesRegressionLabelsInsteadOfCountingThem) {
  const SyntheticSplit s = MakeSyntheticRegression({.rows = 3000, .features = 10, .nnz_per_row = 3}, 0);
  const DatasetStats stats = ComputeStats(s.train, 1000);
  EXPECT_TRUE(stats.label_counts.empty());
  EXPECT_GT(stats.distinct_labels, 1000u);
  EXPECT_EQ(stats.min_row_nnz, 3u);
  EXPECT_EQ(stats.max_row_nnz, 3u);
  EXPECT_DOUBLE_EQ(stats.mean_row_nnz, 3.0);
}

}  // namespace
}  // namespace corral
