// Sample weights from files (--weights FILE, LoadWeights) and from a CSV's column
// (--weight-column, LoadOptions::csv_weight_column): what is read, the part a rank keeps, and a
// clear error naming the file and line for every bad input.
#include <corral/load.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <corral/dataset.h>
#include <corral/error.h>

#include "data_test_util.h"

namespace corral {
namespace {

using testing::ErrorOf;
using testing::TempDir;

std::vector<float> WeightsOf(const Dataset& d) { return {d.weights().begin(), d.weights().end()}; }

TEST(Weights, ReadsOnePerLineSkippingAHeaderCommentsAndBlankLines) {
  const TempDir dir;
  const std::string path = dir.Write("w.txt", "\xEF\xBB\xBFweight\r\n0.5\r\n# a comment\n\n 2 \n0\n1e-3");
  EXPECT_EQ(LoadWeights(path, 4), std::vector<float>({0.5f, 2.0f, 0.0f, 1e-3f}));
  // A rank's part: rows [1, 3), and a count past the end capped at it.
  EXPECT_EQ(LoadWeights(path, 4, 1, 2), std::vector<float>({2.0f, 0.0f}));
  EXPECT_EQ(LoadWeights(path, 4, 3, 100), std::vector<float>({1e-3f}));
}

TEST(Weights, NamesTheFileAndLineOfEveryBadInput) {
  const TempDir dir;
  const auto error = [&](const std::string& text, std::size_t rows) {
    const std::string path = dir.Write("bad.txt", text);
    return ErrorOf([&] { LoadWeights(path, rows); }).substr(path.size());
  };
  EXPECT_EQ(error("1\nx\n", 2), ":2: expected a weight (a finite number >= 0), got 'x'");
  EXPECT_EQ(error("1\n-2\n", 2), ":2: weight '-2' is negative, expected a finite number >= 0");
  EXPECT_EQ(error("1\ninf\n", 2), ":2: expected a weight (a finite number >= 0), got 'inf'");
  EXPECT_EQ(error("1 2\n", 1), ":1: expected a weight (a finite number >= 0), got '1 2'");
  EXPECT_EQ(error("1\n2\n3\n", 2), ":3: more weights than the 2 rows of the training set, expected one weight per row");
  EXPECT_EQ(error("1\n", 2), ": 1 weights for the 2 rows of the training set, expected one weight per row");
  EXPECT_EQ(error("0\n0\n", 2), ": every weight is 0, expected at least one above 0");
  EXPECT_NE(ErrorOf([&] { LoadWeights(dir.Path("missing.txt"), 1); }, ErrorCode::kIo).find("missing.txt"), std::string::npos);
}

TEST(Weights, ACsvColumnByNameOrNumberIsTheWeightNotAFeature) {
  const TempDir dir;
  const std::string path = dir.Write("w.csv", "label,a,w,b\n1,0.5,2,7\n-1,1.5,0.25,8\n");
  for (const std::string column : {"w", "2", "-2"}) {
    const Dataset d = LoadDataset(path, {.format = DataFormat::kCsv, .csv_weight_column = column});
    EXPECT_EQ(d.num_features(), 2u) << column;
    EXPECT_EQ(WeightsOf(d), std::vector<float>({2.0f, 0.25f})) << column;
    EXPECT_EQ(std::vector<float>(d.value().begin(), d.value().end()), std::vector<float>({0.5f, 7, 1.5f, 8}));
    EXPECT_EQ(d.Label(1), -1.0f);
  }
  // Chunks parsed in parallel agree with one chunk.
  const Dataset chunked = LoadDataset(path, {.format = DataFormat::kCsv, .chunk_bytes = 8, .csv_weight_column = "w"});
  EXPECT_EQ(WeightsOf(chunked), std::vector<float>({2.0f, 0.25f}));
  EXPECT_FALSE(LoadDataset(path, {.format = DataFormat::kCsv}).weighted());
}

TEST(Weights, ACsvColumnThatIsNotThereOrNotAWeightIsNamed) {
  const TempDir dir;
  const std::string path = dir.Write("w.csv", "label,a,w\n1,0.5,2\n-1,1.5,-3\n");
  const auto error = [&](const std::string& column) {
    return ErrorOf([&] { LoadDataset(path, {.format = DataFormat::kCsv, .csv_weight_column = column}); });
  };
  EXPECT_EQ(error("x"), path + ": weight column 'x' is not in the header line 'label,a,w', expected a column name or number");
  EXPECT_EQ(error("label"), path + ":1: weight column 'label' is the label's column, expected another");
  EXPECT_EQ(error("7"), path + ":1: weight column '7' is outside the 3 fields");
  EXPECT_EQ(error("-4"), path + ": weight column '-4' is outside the 3 fields");
  EXPECT_EQ(error("w"), path + ":3: field 3: weight '-3' is negative, expected a finite number >= 0");
  const std::string bare = dir.Write("bare.csv", "1,0.5,2\n");
  EXPECT_EQ(ErrorOf([&] { LoadDataset(bare, {.format = DataFormat::kCsv, .csv_weight_column = "w"}); }),
            bare + ": weight column 'w' is not a column number, and the file has no header line to name it");
}

}  // namespace
}  // namespace corral
