// ConvertToCache: the cache written from a file read in pieces is byte for byte the cache of
// the file loaded whole, for every piece size; a bad line is reported as LoadDataset reports
// it and leaves no file behind.
#include <corral/cache.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <corral/dataset.h>
#include <corral/error.h>
#include <corral/load.h>

#include "data_test_util.h"

namespace corral {
namespace {

using testing::ErrorOf;
using testing::ExpectSameData;
using testing::ReadBytes;
using testing::TempDir;

// The files in `dir`, by name.
std::vector<std::string> Listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// LIBSVM whose dimension is set by a late row, with comments, blank lines and CRLF endings.
std::string LibsvmText(int rows) {
  std::string text = "# a comment first\n";
  for (int r = 0; r < rows; ++r) {
    text += r % 2 ? "+1" : "-1";
    for (int k = 1 + r % 5; k < 40; k += 3 + r % 7) {
      text += ' ' + std::to_string(k) + ':' + std::to_string((r * 7 + k) % 13) + "e-1";
    }
    if (r == rows - 3) text += " 977:1";  // the largest index
    text += r % 5 == 0 ? "\r\n" : (r % 7 == 0 ? " # c\n\n" : "\n");
  }
  return text;
}

std::string CsvText(int rows) {
  std::string text = "a,b,y\n";
  for (int r = 0; r < rows; ++r) {
    text += std::to_string(r) + ".5,-" + std::to_string(r % 17) + "," + std::to_string(r % 3) +
            (r % 9 ? "\n" : "\r\n\n");
  }
  return text;
}

std::string TabbedRatingsText() {
  std::string text;
  for (int r = 0; r < 300; ++r) {
    text += std::to_string(r * 7919 % 101) + '\t' + std::to_string(r * 104729 % 211) + '\t' +
            std::to_string(r % 5 + 1) + '\n';
  }
  return text;
}

// `text` with `line` inserted as its line `number` (from 1).
std::string WithLine(std::string text, int number, const std::string& line) {
  std::size_t at = 0;
  for (int i = 1; i < number; ++i) at = text.find('\n', at) + 1;
  return text.insert(at, line + '\n');
}

struct ConvertCase {
  const char* name;
  const char* file;
  std::string text;
  LoadOptions options;
};

class ConvertTest : public ::testing::TestWithParam<ConvertCase> {};

TEST_P(ConvertTest, SameBytesAsTheCacheOfTheWholeFile) {
  const ConvertCase& c = GetParam();
  const TempDir dir;
  const std::string path = dir.Write(c.file, c.text);
  const Dataset whole = LoadDataset(path, c.options);
  WriteCache(whole, dir.Path("whole.cache"));
  const std::string want = ReadBytes(dir.Path("whole.cache"));
  for (std::size_t piece : {1, 100, 1 << 20}) {
    SCOPED_TRACE("piece " + std::to_string(piece));
    const CacheSummary summary = ConvertToCache(path, dir.Path("piece.cache"), c.options, piece);
    EXPECT_EQ(summary.rows, whole.rows());
    EXPECT_EQ(summary.num_features, whole.num_features());
    EXPECT_EQ(summary.nnz, whole.nnz());
    EXPECT_TRUE(ReadBytes(dir.Path("piece.cache")) == want);
  }
  ExpectSameData(ReadCache(dir.Path("piece.cache")), whole);  // and its checksum holds
  EXPECT_EQ(Listing(dir.Path("")),
            (std::vector<std::string>{c.file, "piece.cache", "whole.cache"}));
}

INSTANTIATE_TEST_SUITE_P(
    Formats, ConvertTest,
    ::testing::Values(
        ConvertCase{"LibsvmDimensionFromTheData", "a.svm", LibsvmText(300), {}},
        ConvertCase{"LibsvmZeroBasedWiderThanTheData", "a.svm", LibsvmText(200),
                    {.num_features = 2000, .zero_based = true}},
        ConvertCase{"LibsvmOneRow", "a.svm", "1 3:0.5", {}},
        ConvertCase{"CsvHeaderAndLastColumnLabel", "a.csv", CsvText(300), {.csv_label_column = -1}},
        ConvertCase{"CsvWidened", "a.csv", CsvText(50), {.num_features = 5}},
        ConvertCase{"RatingsLoadedWhole", "a.tsv", TabbedRatingsText(), {}}),
    [](const auto& test) { return std::string(test.param.name); });

// Over 1 MiB of cache: the checksum's blocks span pieces and sections.
TEST(ConvertToCache, SeveralDigestBlocks) {
  const TempDir dir;
  const std::string path = dir.Write("big.svm", LibsvmText(25'000));
  WriteCache(LoadDataset(path), dir.Path("whole.cache"));
  ASSERT_GT(std::filesystem::file_size(dir.Path("whole.cache")), 1u << 20);
  ConvertToCache(path, dir.Path("piece.cache"), {}, 100'000);
  EXPECT_TRUE(ReadBytes(dir.Path("piece.cache")) == ReadBytes(dir.Path("whole.cache")));
}

// A bad line after pieces were written is reported as LoadDataset reports it (a CSV row with
// another field count too, even as the first row of a piece) and leaves neither a cache nor a
// temporary file; a cache that was there stays as it was.
TEST(ConvertToCache, BadLineIsTheFilesErrorAndLeavesNoFile) {
  const struct {
    const char* file;
    std::string text;
    const char* message;
  } cases[] = {
      {"bad.svm", WithLine(LibsvmText(300), 250, "1 4:x"), "bad.svm:250: "},
      {"bad.csv", WithLine(CsvText(200), 150, "1,2,3,4"), "bad.csv:150: expected 3 fields, got 4"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    const TempDir dir;
    const std::string path = dir.Write(c.file, c.text);
    const std::string want = ErrorOf([&] { LoadDataset(path); });
    EXPECT_NE(want.find(c.message), std::string::npos) << want;
    for (std::size_t piece : {1, 50, 1 << 20}) {
      EXPECT_EQ(ErrorOf([&] { ConvertToCache(path, dir.Path("bad.cache"), {}, piece); }), want);
      EXPECT_EQ(Listing(dir.Path("")), std::vector<std::string>{c.file});
    }
    const std::string old = dir.Write("old.cache", "previous contents");
    EXPECT_EQ(ErrorOf([&] { ConvertToCache(path, old, {}, 50); }), want);
    EXPECT_EQ(ReadBytes(old), "previous contents");
    EXPECT_EQ(Listing(dir.Path("")), (std::vector<std::string>{c.file, "old.cache"}));
  }
}

TEST(ConvertToCache, FileWithoutRowsIsLoadDatasetsError) {
  const TempDir dir;
  for (const char* text : {"", "# only a comment\n\n"}) {
    const std::string path = dir.Write("empty.svm", text);
    const std::string want = ErrorOf([&] { LoadDataset(path); });
    EXPECT_NE(want.find("no data rows"), std::string::npos) << want;
    EXPECT_EQ(ErrorOf([&] { ConvertToCache(path, dir.Path("e.cache"), {}, 4); }), want);
    EXPECT_EQ(Listing(dir.Path("")), std::vector<std::string>{"empty.svm"});
  }
}

}  // namespace
}  // namespace corral
