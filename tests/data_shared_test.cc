// The real data sets: ComputeStats of every LIBSVM file in ../shared/data matches the counts
// that ../shared/data/README.md publishes, and Fashion-MNIST (Debian's dataset-fashion-mnist)
// is 60000 x 784 with 10 classes. Each test skips when its files are absent. A cache made from
// a real set gives the same data and, trained with one thread, the same model.
#include <corral/stats.h>

#include <filesystem>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include <corral/cache.h>
#include <corral/corral.h>
#include <corral/load.h>

#include "data_test_util.h"
#include "test_data.h"

namespace corral {
namespace {

struct SharedCase {
  const char* name;
  const char* file;
  std::size_t num_features_option;
  std::size_t rows, features, nnz;
  std::map<float, std::size_t> labels;  // exact counts, or empty: use the range below
  std::size_t classes = 0;
  float first_label = 0;
  std::size_t min_count = 0, max_count = 0;
};

class SharedDataStats : public ::testing::TestWithParam<SharedCase> {};

TEST_P(SharedDataStats, MatchesTheReadme) {
  const SharedCase& c = GetParam();
  const std::filesystem::path dir = testing::SharedDataDir();
  if (dir.empty() || !std::filesystem::exists(dir / c.file)) GTEST_SKIP() << c.file << " not present";
  const Dataset d = LoadDataset((dir / c.file).string(), {.num_features = c.num_features_option});
  const DatasetStats s = ComputeStats(d);
  EXPECT_EQ(s.rows, c.rows);
  EXPECT_EQ(s.features, c.features);
  EXPECT_EQ(s.nnz, c.nnz);
  if (!c.labels.empty()) {
    EXPECT_EQ(s.label_counts, c.labels);
  } else {
    ASSERT_EQ(s.label_counts.size(), c.classes);
    float want = c.first_label;
    for (const auto& [label, count] : s.label_counts) {
      EXPECT_EQ(label, want++);
      EXPECT_GE(count, c.min_count) << label;
      EXPECT_LE(count, c.max_count) << label;
    }
    std::size_t smallest = c.rows, largest = 0;
    for (const auto& [label, count] : s.label_counts) {
      smallest = std::min(smallest, count);
      largest = std::max(largest, count);
    }
    EXPECT_EQ(smallest, c.min_count);
    EXPECT_EQ(largest, c.max_count);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Readme, SharedDataStats,
    ::testing::Values(
        SharedCase{"a9a", "a9a/a9a", 0, 32561, 123, 451592, {{-1, 24720}, {1, 7841}}},
        SharedCase{"a9a_t", "a9a/a9a.t", 0, 16281, 122, 225731, {{-1, 12435}, {1, 3846}}},
        SharedCase{"a9a_t_123", "a9a/a9a.t", 123, 16281, 123, 225731, {{-1, 12435}, {1, 3846}}},
        SharedCase{"phishing", "phishing/phishing", 0, 11055, 68, 331650, {{0, 4898}, {1, 6157}}},
        SharedCase{"ijcnn1", "ijcnn1/ijcnn1", 0, 49990, 22, 649870, {{-1, 45137}, {1, 4853}}},
        SharedCase{"ijcnn1_t", "ijcnn1/ijcnn1.t", 0, 91701, 22, 1192113, {{-1, 82989}, {1, 8712}}},
        SharedCase{"rcv1_small", "rcv1_subset/rcv1_small.svm", 0, 1000, 47117, 77739, {{-1, 541}, {1, 459}}},
        SharedCase{"rcv1_small_vocab", "rcv1_subset/rcv1_small.svm", 47236, 1000, 47236, 77739,
                   {{-1, 541}, {1, 459}}},
        SharedCase{"rcv1_small_test", "rcv1_subset/rcv1_small_test.svm", 0, 500, 47042, 39448,
                   {{-1, 255}, {1, 245}}},
        SharedCase{"agaricus", "mushrooms_agaricus/agaricus.txt.train", 0, 6513, 126, 143286,
                   {{0, 3373}, {1, 3140}}},
        SharedCase{"agaricus_t", "mushrooms_agaricus/agaricus.txt.test", 0, 1611, 126, 35442,
                   {{0, 835}, {1, 776}}},
        SharedCase{"sector", "sector/sector.scale", 0, 6412, 55197, 1045412, {}, 105, 1, 10, 80},
        SharedCase{"sector_t", "sector/sector.t.scale", 0, 3207, 55197, 524492, {}, 105, 1, 3, 48},
        SharedCase{"letter", "letter/letter.scale", 0, 15000, 16, 240000, {}, 26, 1, 538, 607},
        SharedCase{"letter_t", "letter/letter.scale.t", 0, 5000, 16, 80000, {}, 26, 1, 167, 226},
        SharedCase{"pendigits", "pendigits/pendigits", 0, 7494, 16, 104535, {}, 10, 0, 719, 780},
        SharedCase{"pendigits_t", "pendigits/pendigits.t", 0, 3498, 16, 48773, {}, 10, 0, 335, 364}),
    [](const auto& test) { return std::string(test.param.name); });

const char kFashion[] = "/usr/share/datasets/fashion-mnist";

TEST(FashionMnist, TrainAndTestShapes) {
  for (const auto& [file, rows] : {std::pair{"train-images-idx3-ubyte.gz", 60000u},
                                   std::pair{"t10k-images-idx3-ubyte.gz", 10000u}}) {
    const std::filesystem::path path = std::filesystem::path(kFashion) / file;
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not present (dataset-fashion-mnist)";
    const Dataset d = LoadDataset(path.string());
    const DatasetStats s = ComputeStats(d);
    EXPECT_TRUE(s.dense);
    EXPECT_EQ(s.rows, rows);
    EXPECT_EQ(s.features, 784u);
    EXPECT_EQ(s.nnz, rows * 784u);
    ASSERT_EQ(s.label_counts.size(), 10u);
    for (const auto& [label, count] : s.label_counts) EXPECT_EQ(count, rows / 10) << label;
    EXPECT_GE(*std::ranges::min_element(d.value()), 0.0f);
    EXPECT_EQ(*std::ranges::max_element(d.value()), 1.0f);
  }
}

TEST(SharedCache, SameDataAndSameModelAsTheText) {
  const std::filesystem::path dir = testing::SharedDataDir();
  if (dir.empty() || !std::filesystem::exists(dir / "a9a/a9a")) GTEST_SKIP() << "a9a not present";
  const testing::TempDir tmp;
  const Dataset text = LoadDataset((dir / "a9a/a9a").string());
  WriteCache(text, tmp.Path("a9a.cache"));
  const Dataset cached = LoadDataset(tmp.Path("a9a.cache"));
  testing::ExpectSameData(cached, text);
  const TrainConfig config{.threads = 1, .epochs = 2, .seed = 3};
  const TrainResult a = Train(text, nullptr, config);
  const TrainResult b = Train(cached, nullptr, config);
  EXPECT_EQ(a.params, b.params);
}

}  // namespace
}  // namespace corral
