// Synthetic classification: shape invariants, determinism, stream layout, label noise and the
// sampling distributions (Zipf power law, uniform, sequential picks without replacement).
#include <corral/synthetic.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <corral/dataset.h>
#include <corral/error.h>

namespace corral {
namespace {

std::vector<std::size_t> FeatureCounts(const Dataset& d) {
  std::vector<std::size_t> counts(d.num_features());
  for (std::uint32_t i : d.index()) ++counts[i];
  return counts;
}

void ExpectSameData(const Dataset& a, const Dataset& b) {
  EXPECT_TRUE(std::ranges::equal(a.row_ptr(), b.row_ptr()));
  EXPECT_TRUE(std::ranges::equal(a.index(), b.index()));
  EXPECT_TRUE(std::ranges::equal(a.value(), b.value()));
  EXPECT_TRUE(std::ranges::equal(a.labels(), b.labels()));
  EXPECT_EQ(a.num_features(), b.num_features());
}

class SyntheticShapeTest : public ::testing::TestWithParam<double> {};

TEST_P(SyntheticShapeTest, RowsAreDistinctSortedUnitNormWithSignLabels) {
  const SyntheticSpec spec{.rows = 3000, .features = 1000, .nnz_per_row = 15, .zipf = GetParam()};
  const SyntheticSplit split = MakeSyntheticClassification(spec, 500);
  for (const Dataset* d : {&split.train, &split.test}) {
    EXPECT_EQ(d->num_features(), 1000u);
    EXPECT_EQ(d->max_row_nnz(), 15u);
    EXPECT_EQ(d->nnz(), d->rows() * 15);
    for (std::size_t r = 0; r < d->rows(); ++r) {
      const SparseRow row = d->Row(r);
      ASSERT_EQ(row.nnz(), 15u);
      // Dataset's constructor already enforces sorted, distinct, in-range indices.
      double norm2 = 0;
      for (float v : row.value) {
        ASSERT_GT(v, 0.0f);
        ASSERT_LE(v, 1.0f);
        norm2 += static_cast<double>(v) * v;
      }
      ASSERT_NEAR(norm2, 1.0, 1e-5) << "row " << r;
      ASSERT_TRUE(d->Label(r) == 1.0f || d->Label(r) == -1.0f) << d->Label(r);
    }
  }
  EXPECT_EQ(split.train.rows(), 3000u);
  EXPECT_EQ(split.test.rows(), 500u);
}

// 0 is the uniform path; 3 and 6 make rejection fail often enough to use the exact draw.
INSTANTIATE_TEST_SUITE_P(Zipf, SyntheticShapeTest, ::testing::Values(0.0, 0.5, 1.0, 3.0, 6.0));

TEST(SyntheticTest, DeterministicForSeedAndDifferentAcrossSeeds) {
  const SyntheticSpec spec{.rows = 2000, .features = 500, .nnz_per_row = 10, .seed = 11};
  const SyntheticSplit a = MakeSyntheticClassification(spec, 300);
  const SyntheticSplit b = MakeSyntheticClassification(spec, 300);
  ExpectSameData(a.train, b.train);
  ExpectSameData(a.test, b.test);

  SyntheticSpec other = spec;
  other.seed = 12;
  const SyntheticSplit c = MakeSyntheticClassification(other, 300);
  EXPECT_FALSE(std::ranges::equal(a.train.index(), c.train.index()));
  EXPECT_FALSE(std::ranges::equal(a.train.value(), c.train.value()));
  EXPECT_FALSE(std::ranges::equal(a.test.index(), c.test.index()));
}

TEST(SyntheticTest, TestRowsContinueTheTrainingStream) {
  const SyntheticSpec spec{.rows = 1000, .features = 400, .nnz_per_row = 8, .seed = 3};
  const SyntheticSplit split = MakeSyntheticClassification(spec, 500);
  SyntheticSpec longer = spec;
  longer.rows = 1500;
  const SyntheticSplit all = MakeSyntheticClassification(longer, 0);
  // Same planted model and same row stream: the test rows are rows 1000..1499 of a longer run,
  // and the training rows do not depend on how many test rows were asked for.
  ExpectSameData(split.test, all.train.Slice(1000, 1500));
  ExpectSameData(split.train, all.train.Slice(0, 1000));
  EXPECT_EQ(all.test.rows(), 0u);
}

TEST(SyntheticTest, LabelNoiseOnlyFlipsLabels) {
  SyntheticSpec spec{.rows = 20000, .features = 2000, .nnz_per_row = 10, .label_noise = 0};
  const Dataset clean = MakeSyntheticClassification(spec, 0).train;
  spec.label_noise = 0.2;
  const Dataset noisy = MakeSyntheticClassification(spec, 0).train;
  spec.label_noise = 1.0;
  const Dataset inverted = MakeSyntheticClassification(spec, 0).train;

  EXPECT_TRUE(std::ranges::equal(clean.index(), noisy.index()));
  EXPECT_TRUE(std::ranges::equal(clean.value(), noisy.value()));
  std::size_t flipped = 0;
  for (std::size_t r = 0; r < clean.rows(); ++r) {
    flipped += clean.Label(r) != noisy.Label(r);
    ASSERT_EQ(inverted.Label(r), -clean.Label(r)) << "row " << r;
  }
  // Binomial(20000, 0.2): standard deviation 0.0028, so +-0.02 is about 7 sigma.
  EXPECT_NEAR(static_cast<double>(flipped) / static_cast<double>(clean.rows()), 0.2, 0.02);
}

TEST(SyntheticTest, LabelsAreRoughlyBalanced) {
  for (double zipf : {0.0, 1.0}) {
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
      const SyntheticSpec spec{.rows = 20000, .zipf = zipf, .seed = seed};
      const Dataset d = MakeSyntheticClassification(spec, 0).train;
      const auto positives = std::ranges::count(d.labels(), 1.0f);
      const double fraction = static_cast<double>(positives) / static_cast<double>(d.rows());
      EXPECT_GT(fraction, 0.2) << "zipf " << zipf << " seed " << seed;
      EXPECT_LT(fraction, 0.8) << "zipf " << zipf << " seed " << seed;
    }
  }
}

TEST(SyntheticTest, ZipfFrequenciesFollowThePowerLaw) {
  // One pick per row, so there is no without-replacement distortion: the k-th most frequent
  // feature appears in a fraction proportional to 1/k^s of the rows.
  for (double zipf : {1.0, 2.0}) {
    const SyntheticSpec spec{.rows = 200000, .features = 50, .nnz_per_row = 1, .zipf = zipf};
    std::vector<std::size_t> counts = FeatureCounts(MakeSyntheticClassification(spec, 0).train);
    std::ranges::sort(counts, std::greater<>());
    for (std::size_t k : {1, 2, 4}) {
      const double want = std::pow(static_cast<double>(k + 1), zipf);
      const double got = static_cast<double>(counts[0]) / static_cast<double>(counts[k]);
      EXPECT_NEAR(got / want, 1.0, 0.05) << "zipf " << zipf << " rank " << k;
    }
  }
}

TEST(SyntheticTest, PopularFeaturesAreSpreadOverIndices) {
  const SyntheticSpec spec{.rows = 20000, .features = 1000, .nnz_per_row = 5, .zipf = 1.0};
  const std::vector<std::size_t> counts = FeatureCounts(MakeSyntheticClassification(spec, 0).train);
  std::vector<std::uint32_t> by_popularity(counts.size());
  for (std::uint32_t f = 0; f < by_popularity.size(); ++f) by_popularity[f] = f;
  std::ranges::stable_sort(by_popularity, [&](auto a, auto b) { return counts[a] > counts[b]; });
  // Under the identity rank -> feature map the top ten would be features 0..9.
  const auto top = std::span(by_popularity).first(10);
  EXPECT_GT(*std::ranges::max_element(top), 100u);
  EXPECT_GT(counts[by_popularity[0]], 50 * counts[by_popularity[500]] + 1);
}

TEST(SyntheticTest, UniformFrequenciesAreFlat) {
  const SyntheticSpec spec{.rows = 20000, .features = 100, .nnz_per_row = 10, .zipf = 0};
  // Each feature is in a row with probability 0.1: mean 2000, standard deviation 42.
  for (std::size_t count : FeatureCounts(MakeSyntheticClassification(spec, 0).train)) {
    EXPECT_NEAR(static_cast<double>(count), 2000.0, 250.0);
  }
}

TEST(SyntheticTest, PicksWithoutReplacementFollowTheSequentialRule) {
  // Three features with weights 1, 2^-6, 3^-6; two picks per row. After the heavy feature is
  // picked, rejection almost always fails, so this checks the exact fallback draw.
  const double zipf = 6.0;
  const SyntheticSpec spec{.rows = 100000, .features = 3, .nnz_per_row = 2, .zipf = zipf};
  std::vector<std::size_t> counts = FeatureCounts(MakeSyntheticClassification(spec, 0).train);
  std::ranges::sort(counts, std::greater<>());
  const double w[3] = {1.0, std::pow(2.0, -zipf), std::pow(3.0, -zipf)};
  const double total = w[0] + w[1] + w[2];
  for (int missing = 0; missing < 3; ++missing) {
    // P(the row is the other two) = sum over both orders of the sequential probabilities.
    const int a = (missing + 1) % 3;
    const int b = (missing + 2) % 3;
    const double pair = w[a] / total * w[b] / (total - w[a]) + w[b] / total * w[a] / (total - w[b]);
    const double got = static_cast<double>(counts[missing]) / static_cast<double>(spec.rows);
    EXPECT_NEAR(got, 1.0 - pair, 0.005) << "rank " << missing;
  }
}

TEST(SyntheticTest, FullRowsWhenEveryFeatureIsPicked) {
  for (double zipf : {0.0, 1.0, 8.0}) {
    const SyntheticSpec spec{.rows = 50, .features = 40, .nnz_per_row = 40, .zipf = zipf};
    const Dataset d = MakeSyntheticClassification(spec, 10).train;
    for (std::size_t r = 0; r < d.rows(); ++r) {
      const SparseRow row = d.Row(r);
      for (std::uint32_t k = 0; k < 40; ++k) ASSERT_EQ(row.index[k], k) << "zipf " << zipf;
    }
  }
}

TEST(SyntheticTest, RejectsBadSpecs) {
  const auto expect_bad = [](const SyntheticSpec& spec, const std::string& piece) {
    try {
      MakeSyntheticClassification(spec, 10);
      ADD_FAILURE() << "no error, expected '" << piece << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadConfig) << e.what();
      EXPECT_NE(std::string(e.what()).find(piece), std::string::npos) << e.what();
    }
  };
  const SyntheticSpec ok{.rows = 10, .features = 5, .nnz_per_row = 3};
  SyntheticSpec s = ok;
  s.nnz_per_row = 6;
  expect_bad(s, "nnz_per_row 6 exceeds features 5");
  s = ok;
  s.features = 0;
  expect_bad(s, "features is 0");
  s = ok;
  s.nnz_per_row = 0;
  expect_bad(s, "nnz_per_row is 0");
  s = ok;
  s.zipf = -1;
  expect_bad(s, "zipf is -1");
  s.zipf = std::numeric_limits<double>::quiet_NaN();
  expect_bad(s, "zipf is nan");
  s = ok;
  s.label_noise = 1.5;
  expect_bad(s, "label_noise is 1.5");
  s.label_noise = -0.1;
  expect_bad(s, "label_noise is -0.1");
  EXPECT_EQ(MakeSyntheticClassification(ok, 0).train.rows(), 10u);
}

}  // namespace
}  // namespace corral
