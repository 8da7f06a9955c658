// Bad input, format by format: every malformed file ends in a corral::Error that names the
// file, the line (or byte) and what was expected. (LIBSVM token-level errors are covered
// line by line in libsvm_test.cc; here are the file-level ones and the other formats.)
#include <corral/load.h>

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <corral/cache.h>
#include <corral/dataset.h>
#include <corral/error.h>
#include <corral/synthetic.h>

#include "data_test_util.h"

namespace corral {
namespace {

using testing::ErrorOf;
using testing::TempDir;

void ExpectMessage(const std::string& message, const std::string& prefix, const std::string& piece) {
  EXPECT_EQ(message.rfind(prefix, 0), 0u) << "message '" << message << "' does not start with '" << prefix << "'";
  EXPECT_NE(message.find(piece), std::string::npos) << "message '" << message << "' lacks '" << piece << "'";
}

std::string Gzip(const std::string& bytes) {
  std::vector<Bytef> out(compressBound(static_cast<uLong>(bytes.size())) + 32);
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  const std::string result(reinterpret_cast<char*>(out.data()), z.total_out);
  deflateEnd(&z);
  return result;
}

TEST(DataErrors, EmptyAndCommentOnlyFiles) {
  const TempDir dir;
  for (const char* format : {"libsvm", "ratings", "csv"}) {
    const std::string path = dir.Write(std::string("empty.") + format, "");
    ExpectMessage(ErrorOf([&] { LoadDataset(path, {.format = ParseDataFormat(format)}); }),
                  path + ": ", "no data rows");
  }
  const std::string comments = dir.Write("c.svm", "# nothing\n\n");
  ExpectMessage(ErrorOf([&] { LoadDataset(comments); }), comments + ": ", "expected at least one LIBSVM row");
}

TEST(DataErrors, BinaryGarbageIsNamedAsSuch) {
  const TempDir dir;
  std::string garbage = "1 1:1\n";
  for (int i = 0; i < 300; ++i) garbage.push_back(static_cast<char>((i * 37) % 256));
  const std::string path = dir.Write("garbage.svm", garbage);
  const std::string message = ErrorOf([&] { LoadDataset(path, {.format = DataFormat::kLibsvm}); });
  EXPECT_EQ(message.rfind(path + ":2: ", 0), 0u) << message;
  EXPECT_NE(message.find("NUL byte"), std::string::npos) << message;
  EXPECT_LT(message.size(), 300u);
  const std::string ratings = dir.Write("garbage.data", "1 2 3\n" + garbage.substr(6));
  ExpectMessage(ErrorOf([&] { LoadDataset(ratings); }), ratings + ":2: ", "NUL byte");
  const std::string csv = dir.Write("garbage.csv", "1,2,3\n" + garbage.substr(6));
  ExpectMessage(ErrorOf([&] { LoadDataset(csv); }), csv + ":2: ", "NUL byte");
}

TEST(DataErrors, TruncatedAndCorruptGzip) {
  const TempDir dir;
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "1 1:0.5 7:2 19:3\n";
  const std::string gz = Gzip(text);
  const std::string cut = dir.Write("cut.svm.gz", gz.substr(0, gz.size() / 2));
  ExpectMessage(ErrorOf([&] { LoadDataset(cut); }), cut + ": truncated gzip stream after line ",
                "expected a complete gzip file");
  std::string flipped = gz;
  flipped[gz.size() / 2] = static_cast<char>(flipped[gz.size() / 2] ^ 0x55);
  const std::string bad = dir.Write("bad.svm.gz", flipped);
  ExpectMessage(ErrorOf([&] { LoadDataset(bad); }), bad + ": ", "gzip");
}

TEST(DataErrors, MissingFileAndDirectoryAreIoErrors) {
  const TempDir dir;
  ExpectMessage(ErrorOf([&] { LoadDataset(dir.Path("nope.svm")); }, ErrorCode::kIo),
                dir.Path("nope.svm") + ": ", "No such file");
  ExpectMessage(ErrorOf([&] { LoadDataset(dir.Path("")); }, ErrorCode::kIo), dir.Path(""),
                "Is a directory");
}

struct LineCase {
  const char* name;
  DataFormat format;
  std::string line;   // placed on line 3, after two good lines
  std::string piece;  // expected after "bad:3: "
};

class BadLineTest : public ::testing::TestWithParam<LineCase> {};

TEST_P(BadLineTest, NamesFileLineAndExpectation) {
  const LineCase& c = GetParam();
  const std::string good = c.format == DataFormat::kCsv      ? "1,2,3\n4,5,6\n"
                           : c.format == DataFormat::kRatings ? "1 2 3\n4 5 6\n"
                                                              : "1 1:2\n-1 3:4\n";
  for (std::size_t chunk : {0, 5}) {
    ExpectMessage(ErrorOf([&] {
                    ParseDataset(good + c.line + "\n" + good, "bad", {.format = c.format, .threads = 2, .chunk_bytes = chunk});
                  }),
                  "bad:3: ", c.piece);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, BadLineTest,
    ::testing::Values(
        LineCase{"TooFewFields", DataFormat::kRatings, "1 2", "expected 3 or 4 fields (user item rating [timestamp]), got 2"},
        LineCase{"TooManyFields", DataFormat::kRatings, "1 2 3 4 5", "got 5"},
        LineCase{"WordUser", DataFormat::kRatings, "u1 2 3", "column 1: expected a non-negative integer user id, got 'u1'"},
        LineCase{"NegativeItem", DataFormat::kRatings, "1 -2 3", "column 3: expected a non-negative integer item id"},
        LineCase{"NanRating", DataFormat::kRatings, "1 2 nan", "expected a finite numeric rating, got 'nan'"},
        LineCase{"BadTimestamp", DataFormat::kRatings, "1 2 3 yesterday", "expected a numeric timestamp"},
        LineCase{"EmptyField", DataFormat::kRatings, "1,,3", "column 3: empty field"},
        LineCase{"TrailingComma", DataFormat::kRatings, "1,2,3,", "separator at the end of the line"},
        LineCase{"LoneColon", DataFormat::kRatings, "1:2:3", "lone ':'"},
        LineCase{"CsvFieldCount", DataFormat::kCsv, "1,2", "expected 3 fields, got 2"},
        LineCase{"CsvEmptyField", DataFormat::kCsv, "1,,3", "field 2: expected a finite number, got an empty field"},
        LineCase{"CsvWord", DataFormat::kCsv, "1,x,3", "field 2 (column 3): expected a finite number, got 'x'"},
        LineCase{"CsvInf", DataFormat::kCsv, "1,2,inf", "got 'inf'"},
        LineCase{"LibsvmBadValue", DataFormat::kLibsvm, "1 2:x", "expected a finite number after the colon, got '2:x' (column 3)"}),
    [](const auto& test) { return std::string(test.param.name); });

TEST(DataErrors, CsvFieldCountAcrossChunksNamesTheFirstBadRow) {
  std::string text = "1,2,3\n";
  for (int i = 0; i < 100; ++i) text += "1,2,3\n";
  text += "1,2\n1,2\n";  // lines 102 and 103
  for (std::size_t chunk : {0, 6, 12, 50}) {
    ExpectMessage(ErrorOf([&] { ParseDataset(text, "c.csv", {.format = DataFormat::kCsv, .threads = 3, .chunk_bytes = chunk}); }),
                  "c.csv:102: ", "expected 3 fields, got 2");
  }
}

TEST(DataErrors, CsvLabelColumnOutOfRange) {
  ExpectMessage(ErrorOf([] { ParseDataset("1,2\n", "c.csv", {.format = DataFormat::kCsv, .csv_label_column = 2}); }),
                "c.csv:1: ", "label column 2 is outside the 2 fields");
}

TEST(DataErrors, RatingsRejectNumFeatures) {
  EXPECT_NE(ErrorOf([] { ParseDataset("1 2 3\n", "r", {.format = DataFormat::kRatings, .num_features = 5}); },
                    ErrorCode::kBadConfig)
                .find("num_features does not apply to ratings"),
            std::string::npos);
}

// A small IDX pair: 3 images of 2x2 and their labels.
std::string Idx3(std::uint32_t count, std::uint32_t h, std::uint32_t w, std::size_t pixels) {
  std::string s = {0, 0, 8, 3};
  for (std::uint32_t v : {count, h, w}) {
    for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>((v >> shift) & 0xff));
  }
  for (std::size_t i = 0; i < pixels; ++i) s.push_back(static_cast<char>(i * 51 % 256));
  return s;
}
std::string Idx1(std::uint32_t count, std::size_t labels) {
  std::string s = {0, 0, 8, 1};
  for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>((count >> shift) & 0xff));
  for (std::size_t i = 0; i < labels; ++i) s.push_back(static_cast<char>(i % 10));
  return s;
}

TEST(IdxFormat, ReadsPlainAndGzipPairs) {
  const TempDir dir;
  for (bool gz : {false, true}) {
    const std::string suffix = gz ? ".gz" : "";
    const auto put = [&](const std::string& name, const std::string& bytes) {
      return dir.Write(name + suffix, gz ? Gzip(bytes) : bytes);
    };
    const std::string images = put("train-images-idx3-ubyte", Idx3(3, 2, 2, 12));
    put("train-labels-idx1-ubyte", Idx1(3, 3));
    const Dataset d = LoadDataset(images);
    ASSERT_TRUE(d.is_dense());
    EXPECT_EQ(d.rows(), 3u);
    EXPECT_EQ(d.num_features(), 4u);
    EXPECT_EQ(d.nnz(), 12u);
    for (std::size_t i = 0; i < 12; ++i) {
      EXPECT_EQ(d.value()[i], static_cast<float>(i * 51 % 256) / 255.0f) << i;
    }
    EXPECT_EQ(std::vector<float>(d.labels().begin(), d.labels().end()), (std::vector<float>{0, 1, 2}));
    EXPECT_EQ(d.DenseRow(2)[3], static_cast<float>(11 * 51 % 256) / 255.0f);
    EXPECT_EQ(d.Row(1).index[3], 3u);  // the shared column array
  }
}

TEST(IdxFormat, RejectsEveryBrokenFile) {
  const TempDir dir;
  const std::string labels = dir.Write("x-labels-idx1-ubyte", Idx1(3, 3));
  const auto load = [&](const std::string& name, const std::string& bytes) {
    const std::string path = dir.Write(name, bytes);
    return ErrorOf([&] { LoadDataset(path, {.format = DataFormat::kIdx, .idx_labels = labels}); });
  };
  const std::string images = dir.Path("x-images-idx3-ubyte");
  std::string bad_magic = Idx3(3, 2, 2, 12);
  bad_magic[0] = 1;
  ExpectMessage(load("x-images-idx3-ubyte", bad_magic), images + ": ", "bad IDX magic");
  std::string bad_type = Idx3(3, 2, 2, 12);
  bad_type[2] = 0x0d;
  ExpectMessage(load("x-images-idx3-ubyte", bad_type), images + ": ", "expected 0x08 (unsigned byte)");
  ExpectMessage(load("x-images-idx3-ubyte", Idx3(3, 2, 2, 11)), images + ": ", "truncated: 27 bytes");
  ExpectMessage(load("x-images-idx3-ubyte", Idx3(3, 2, 2, 13)), images + ": ", "wrong size");
  ExpectMessage(load("x-images-idx3-ubyte", Idx3(3, 2, 2, 12).substr(0, 9)), images + ": ", "truncated");
  ExpectMessage(load("x-images-idx3-ubyte", Gzip(Idx3(3, 2, 2, 11))), images + ": ",
                "truncated: ends at byte 27, expected 28 bytes for 3x2x2 images");
  ExpectMessage(load("x-images-idx3-ubyte", Gzip(Idx3(3, 2, 2, 14))), images + ": ", "wrong size");
  ExpectMessage(load("x-images-idx3-ubyte", Idx1(3, 3)), images + ": ", "is this the labels file?");
  const std::string short_labels = dir.Write("s-labels", Idx1(2, 2));
  const std::string good = dir.Write("good-images", Idx3(3, 2, 2, 12));
  ExpectMessage(ErrorOf([&] { LoadDataset(good, {.format = DataFormat::kIdx, .idx_labels = short_labels}); }),
                short_labels + ": ", "holds 2 labels, expected 3");
  const std::string cut_labels = dir.Write("c-labels", Idx1(3, 2));
  ExpectMessage(ErrorOf([&] { LoadDataset(good, {.format = DataFormat::kIdx, .idx_labels = cut_labels}); }),
                cut_labels + ": ", "truncated");
  const std::string lonely = dir.Write("lonely-images-idx3-ubyte", Idx3(3, 2, 2, 12));
  ExpectMessage(ErrorOf([&] { LoadDataset(lonely); }), lonely + ": ",
                "no labels file found (tried " + dir.Path("lonely-labels-idx1-ubyte"));
}

class CacheCorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteCache(MakeSyntheticClassification({.rows = 300, .features = 50, .nnz_per_row = 5}, 0).train,
               dir_.Path("good.cache"));
    bytes_ = testing::ReadBytes(dir_.Path("good.cache"));
  }
  std::string Load(const std::string& bytes) {
    const std::string path = dir_.Write("bad.cache", bytes);
    return ErrorOf([&] { LoadDataset(path); });
  }
  std::string Path() const { return dir_.Path("bad.cache"); }

  TempDir dir_;
  std::string bytes_;
};

TEST_F(CacheCorruptionTest, TruncationAtAnyPointIsDetected) {
  for (std::size_t keep : {std::size_t{9}, std::size_t{100}, std::size_t{256}, bytes_.size() / 2,
                           bytes_.size() - 1}) {
    const std::string m = Load(bytes_.substr(0, keep));
    ExpectMessage(m, Path() + ": ", "truncated: " + std::to_string(keep) + " bytes");
  }
  ExpectMessage(Load(bytes_ + "x"), Path() + ": ", "wrong size");
}

TEST_F(CacheCorruptionTest, AnyFlippedByteFailsTheChecksum) {
  for (std::size_t at : {std::size_t{20}, std::size_t{30}, std::size_t{100}, std::size_t{300},
                         bytes_.size() / 2, bytes_.size() - 1}) {
    std::string bad = bytes_;
    bad[at] = static_cast<char>(bad[at] ^ 0x01);
    ExpectMessage(Load(bad), Path() + ": ", "checksum mismatch");
  }
}

TEST_F(CacheCorruptionTest, OtherVersionsAndOtherFilesAreRejected) {
  std::string other = bytes_;
  other[8] = 2;  // format version 2
  ExpectMessage(Load(other), Path() + ": ", "cache format version 2, expected 1");
  std::string magic = bytes_;
  magic[0] = 'X';
  // Without the magic the file is not recognised as a cache by content; by extension it is.
  ExpectMessage(Load(magic), Path() + ": ", "not a Corral cache");
  ExpectMessage(ErrorOf([&] { ReadCache(dir_.Write("e.cache", "")); }), dir_.Path("e.cache") + ": ",
                "truncated: 0 bytes");
}

}  // namespace
}  // namespace corral
