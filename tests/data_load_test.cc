// LoadDataset: every format's round trip (write, read back, same bits), format detection,
// gzip input, and parallel parsing equal to serial parsing for any chunk size.
#include <corral/load.h>

#include <zlib.h>

#include <bit>
#include <charconv>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <corral/cache.h>
#include <corral/dataset.h>
#include <corral/error.h>
#include <corral/rng.h>
#include <corral/synthetic.h>
#include <corral/write.h>

#include "data_test_util.h"

namespace corral {
namespace {

using testing::ErrorOf;
using testing::ExpectSameData;
using testing::TempDir;

void WriteGzip(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

Dataset SparseSet() {
  return MakeSyntheticClassification(
             {.rows = 2000, .features = 300, .nnz_per_row = 12, .zipf = 1.0, .seed = 5}, 0)
      .train;
}
Dataset DenseSet() {
  return MakeSyntheticClassification(
             {.rows = 500, .features = 17, .seed = 6, .dense = true, .classes = 4}, 0)
      .train;
}
SyntheticRatings RatingsSets() {
  return MakeSyntheticRatings(
      {.users = 60, .items = 80, .rank = 3, .ratings = 2000, .test_fraction = 0.2, .seed = 9});
}

TEST(DataRoundTrip, LibsvmSparse) {
  const TempDir dir;
  const Dataset original = SparseSet();
  WriteLibsvm(original, dir.Path("a.svm"));
  ExpectSameData(LoadDataset(dir.Path("a.svm"), {.num_features = 300}), original);
}

TEST(DataRoundTrip, LibsvmFromDenseKeepsEveryValue) {
  const TempDir dir;
  const Dataset original = DenseSet();
  WriteLibsvm(original, dir.Path("d.svm"));
  const Dataset back = LoadDataset(dir.Path("d.svm"));
  EXPECT_FALSE(back.is_dense());
  EXPECT_EQ(back.nnz(), original.nnz());
  EXPECT_TRUE(std::ranges::equal(back.value(), original.value()));
  EXPECT_TRUE(std::ranges::equal(back.labels(), original.labels()));
}

TEST(DataRoundTrip, CsvWithAndWithoutHeader) {
  const TempDir dir;
  const Dataset original = DenseSet();
  for (bool header : {false, true}) {
    const std::string path = dir.Path(header ? "h.csv" : "n.csv");
    WriteCsv(original, path, header);
    ExpectSameData(LoadDataset(path), original);
    ExpectSameData(LoadDataset(path, {.format = DataFormat::kCsv, .threads = 3, .chunk_bytes = 100}),
                   original);
  }
}

TEST(DataRoundTrip, RatingsTrainAndTestKeepTheMapping) {
  const TempDir dir;
  const SyntheticRatings r = RatingsSets();
  ASSERT_GT(r.test.rows(), 0u);
  WriteRatings(r.train, dir.Path("r.data"));
  WriteRatings(r.test, dir.Path("r.data.test"));
  const Dataset train = LoadDataset(dir.Path("r.data"));
  ExpectSameData(train, r.train);
  const Dataset test = LoadDataset(dir.Path("r.data.test"), {.format = DataFormat::kRatings,
                                                             .ratings_mapping = train.ratings_shared()});
  ExpectSameData(test, r.test);
}

TEST(DataRoundTrip, CacheIsBitExactForEveryLayout) {
  const TempDir dir;
  const SyntheticRatings r = RatingsSets();
  const std::vector<Dataset> sets = {SparseSet(), DenseSet(), r.train, r.test, Dataset()};
  for (std::size_t i = 0; i < sets.size(); ++i) {
    SCOPED_TRACE(i);
    // Built piecewise: "s" + std::string trips a false -Wrestrict in GCC 12 at -O3.
    std::string file = "s";
    file += std::to_string(i);
    file += ".cache";
    const std::string path = dir.Path(file);
    WriteCache(sets[i], path);
    const Dataset back = ReadCache(path);
    ExpectSameData(back, sets[i]);
    EXPECT_EQ(back.name(), path);
    ExpectSameData(LoadDataset(path), sets[i]);  // detected by its magic
    // Writing is deterministic: the same data gives the same bytes.
    WriteCache(sets[i], path + "2");
    EXPECT_TRUE(testing::ReadBytes(path) == testing::ReadBytes(path + "2"));
  }
}

TEST(DataRoundTrip, CacheOfATestSetIsRemappedToTheTrainMapping) {
  const TempDir dir;
  const SyntheticRatings r = RatingsSets();
  WriteRatings(r.test, dir.Path("t.tsv"));
  // Converted on its own, the test file has its own dense ids; loading the cache with the
  // train mapping must give the same set as parsing the text with it.
  WriteCache(LoadDataset(dir.Path("t.tsv")), dir.Path("t.cache"));
  const Dataset remapped = LoadDataset(dir.Path("t.cache"), {.ratings_mapping = r.train.ratings_shared()});
  ExpectSameData(remapped, r.test);
}

TEST(DataRoundTrip, WriteDatasetPicksTheFormat) {
  const TempDir dir;
  const SyntheticRatings r = RatingsSets();
  WriteDataset(r.train, dir.Path("x.cache"));
  WriteDataset(r.train, dir.Path("x.txt"));
  WriteDataset(DenseSet(), dir.Path("d.csv"));
  EXPECT_EQ(DetectFormat(dir.Path("x.cache")), DataFormat::kCache);
  EXPECT_EQ(DetectFormat(dir.Path("x.txt")), DataFormat::kRatings);  // "u<TAB>i<TAB>r" lines
  EXPECT_EQ(DetectFormat(dir.Path("d.csv")), DataFormat::kCsv);
  ExpectSameData(LoadDataset(dir.Path("x.txt")), r.train);
}

TEST(DataFormats, GzipTextIsDecompressed) {
  const TempDir dir;
  const Dataset original = SparseSet();
  WriteLibsvm(original, dir.Path("a.svm"));
  WriteGzip(dir.Path("a.svm.gz"), testing::ReadBytes(dir.Path("a.svm")));
  ExpectSameData(LoadDataset(dir.Path("a.svm.gz"), {.num_features = 300, .chunk_bytes = 4096}),
                 original);
}

TEST(DataFormats, DetectsByMagicExtensionAndContent) {
  const TempDir dir;
  EXPECT_EQ(DetectFormat(dir.Write("a", "1 1:2 3:4\n")), DataFormat::kLibsvm);
  EXPECT_EQ(DetectFormat(dir.Write("b", "# c\n-1\n")), DataFormat::kLibsvm);
  EXPECT_EQ(DetectFormat(dir.Write("c", "1\t2\t5\t881250949\n")), DataFormat::kRatings);
  EXPECT_EQ(DetectFormat(dir.Write("d", "1::1193::5::978300760\n")), DataFormat::kRatings);
  EXPECT_EQ(DetectFormat(dir.Write("e", "1,0.5,0.25,1,2\n")), DataFormat::kCsv);
  EXPECT_EQ(DetectFormat(dir.Write("f.csv", "1,2,3\n")), DataFormat::kCsv);
  EXPECT_EQ(DetectFormat(dir.Write("ratings.csv", "userId,movieId,rating,timestamp\n")),
            DataFormat::kRatings);
  EXPECT_EQ(DetectFormat(dir.Write("u.data", "1 1:1\n")), DataFormat::kRatings);
  EXPECT_EQ(DetectFormat(dir.Write("g", std::string("\0\0\x08\x03", 4))), DataFormat::kIdx);
  EXPECT_EQ(DetectFormat(dir.Write("h", "CORRALDS")), DataFormat::kCache);
  WriteGzip(dir.Path("i.gz"), "1 2 3\n");
  EXPECT_EQ(DetectFormat(dir.Path("i.gz")), DataFormat::kRatings);
}

TEST(DataFormats, ParseDataFormatNamesEveryFormat) {
  for (DataFormat f : {DataFormat::kAuto, DataFormat::kLibsvm, DataFormat::kIdx,
                       DataFormat::kRatings, DataFormat::kCsv, DataFormat::kCache}) {
    EXPECT_EQ(ParseDataFormat(DataFormatName(f)), f);
  }
  EXPECT_NE(ErrorOf([] { ParseDataFormat("svm"); }, ErrorCode::kBadConfig)
                .find("unknown data format 'svm'"),
            std::string::npos);
}

TEST(RatingsFormat, SeparatorsTimestampsHeaderAndComments) {
  const std::string text =
      "userId,movieId,rating,timestamp\r\n"
      "# a comment\n"
      "10\t200\t4\t881250949\n"
      "10 300 3.5\n"
      "  7 , 200 , 5 , 1e9\n"
      "7::300::1\n"
      "\n"
      "10,200,2\n";
  const Dataset d = ParseDataset(text, "r.csv", {.format = DataFormat::kRatings});
  ASSERT_EQ(d.rows(), 5u);
  const RatingsInfo* m = d.ratings();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->user_ids, (std::vector<std::uint64_t>{7, 10}));  // ascending original ids
  EXPECT_EQ(m->item_ids, (std::vector<std::uint64_t>{200, 300}));
  EXPECT_EQ(d.num_features(), 4u);
  const std::vector<std::pair<std::uint32_t, std::uint32_t>> want = {
      {1, 2}, {1, 3}, {0, 2}, {0, 3}, {1, 2}};  // (user, num_users + item)
  for (std::size_t r = 0; r < d.rows(); ++r) {
    EXPECT_EQ(d.Row(r).index[0], want[r].first) << r;
    EXPECT_EQ(d.Row(r).index[1], want[r].second) << r;
    EXPECT_EQ(d.Row(r).value[0], 1.0f);
  }
  EXPECT_EQ(std::vector<float>(d.labels().begin(), d.labels().end()),
            (std::vector<float>{4, 3.5f, 5, 1, 2}));
  EXPECT_EQ(m->DenseUser(10), 1u);
  EXPECT_FALSE(m->DenseUser(11).has_value());
}

TEST(RatingsFormat, UnseenTestIdsComeAfterTheTrainIds) {
  const Dataset train = ParseDataset("5 50 1\n3 30 2\n", "train", {.format = DataFormat::kRatings});
  const Dataset test = ParseDataset("9 30 3\n3 99 4\n1 50 5\n", "test",
                                    {.format = DataFormat::kRatings,
                                     .ratings_mapping = train.ratings_shared()});
  const RatingsInfo* m = test.ratings();
  EXPECT_EQ(m->known_users, 2u);
  EXPECT_EQ(m->known_items, 2u);
  EXPECT_EQ(m->user_ids, (std::vector<std::uint64_t>{3, 5, 1, 9}));
  EXPECT_EQ(m->item_ids, (std::vector<std::uint64_t>{30, 50, 99}));
  // Known ids keep the train set's dense ids; unseen ones are >= known_users / known_items.
  EXPECT_EQ(test.Row(0).index[0], 3u);                  // user 9: unseen
  EXPECT_EQ(test.Row(0).index[1], m->num_users + 0u);   // item 30: known
  EXPECT_EQ(test.Row(1).index[0], 0u);                  // user 3: known
  EXPECT_EQ(test.Row(1).index[1], m->num_users + 2u);   // item 99: unseen
  EXPECT_EQ(test.Row(2).index[0], 2u);                  // user 1: unseen
  EXPECT_EQ(train.ratings()->DenseUser(5), m->DenseUser(5));
}

TEST(CsvFormat, LabelColumnQuotesBlankLinesAndCrlf) {
  const Dataset d = ParseDataset("\"a\",\"b\",\"y\"\r\n1, 2 ,0\r\n\r\n3,4,1\r\n", "x.csv",
                                 {.format = DataFormat::kCsv, .csv_label_column = -1});
  ASSERT_TRUE(d.is_dense());
  EXPECT_EQ(d.rows(), 2u);
  EXPECT_EQ(d.num_features(), 2u);
  EXPECT_EQ(std::vector<float>(d.value().begin(), d.value().end()), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(std::vector<float>(d.labels().begin(), d.labels().end()), (std::vector<float>{0, 1}));
  const Dataset wide = ParseDataset("1,2,3\n", "w.csv", {.format = DataFormat::kCsv, .num_features = 4});
  EXPECT_EQ(wide.num_features(), 4u);
  EXPECT_EQ(std::vector<float>(wide.value().begin(), wide.value().end()),
            (std::vector<float>{2, 3, 0, 0}));
}

// Texts with comments, blank lines, CRLF and a missing final newline, big enough for many
// chunks; each is parsed serially and then with every (threads, chunk size) pair.
struct ChunkCase {
  const char* name;
  DataFormat format;
  std::string text;
};

std::string LibsvmText() {
  std::string text = "# header\n";
  for (int r = 0; r < 700; ++r) {
    text += (r % 2 ? "+1" : "-1.0");
    for (int k = 1 + r % 3; k < 40; k += 1 + (r + k) % 5) {
      text += ' ';
      text += std::to_string(k);
      text += ':';
      text += std::to_string((r * 7 + k) % 13);
      text += "e-1";
    }
    text += r % 5 == 0 ? "\r\n" : (r % 7 == 0 ? " # c\n\n" : "\n");
  }
  return text + "1 3:1";
}
std::string RatingsText() {
  std::string text = "user,item,rating\n";
  for (int r = 0; r < 900; ++r) {
    text += std::to_string(r * 7919 % 101) + (r % 3 ? "\t" : ",") + std::to_string(r * 104729 % 211) +
            (r % 2 ? " " : "::") + std::to_string(r % 5 + 1) + (r % 4 ? "\t12345\n" : "\n");
  }
  return text;
}
std::string CsvText() {
  std::string text = "y,a,b,c\n";
  for (int r = 0; r < 800; ++r) {
    text += std::to_string(r % 3) + "," + std::to_string(r) + ".5,-" + std::to_string(r % 17) +
            ",1e-3" + (r % 9 ? "\n" : "\r\n\n");
  }
  return text;
}

class ChunkTest : public ::testing::TestWithParam<ChunkCase> {};

TEST_P(ChunkTest, ParallelEqualsSerialForAnyChunkSize) {
  const ChunkCase& c = GetParam();
  const Dataset serial = ParseDataset(c.text, "t", {.format = c.format, .threads = 1});
  ASSERT_GT(serial.rows(), 500u);
  for (int threads : {1, 2, 4}) {
    for (std::size_t chunk : {1, 2, 7, 64, 1000, 100000}) {
      SCOPED_TRACE("threads " + std::to_string(threads) + " chunk " + std::to_string(chunk));
      ExpectSameData(ParseDataset(c.text, "t", {.format = c.format, .threads = threads, .chunk_bytes = chunk}),
                     serial);
    }
  }
}

TEST_P(ChunkTest, FirstErrorAndItsLineDoNotDependOnChunking) {
  const ChunkCase& c = GetParam();
  std::string text = c.text;
  // Break line 400 and line 600 (counting from 1): the first must always be the one reported.
  const auto break_line = [&](int line) {
    std::size_t at = 0;
    for (int i = 1; i < line; ++i) at = text.find('\n', at) + 1;
    text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), 'x');
  };
  break_line(600);
  break_line(400);
  const std::string serial = ErrorOf([&] { ParseDataset(text, "t.txt", {.format = c.format, .threads = 1}); });
  EXPECT_EQ(serial.rfind("t.txt:400: ", 0), 0u) << serial;
  for (int threads : {2, 4}) {
    for (std::size_t chunk : {1, 13, 256, 5000}) {
      EXPECT_EQ(ErrorOf([&] {
                  ParseDataset(text, "t.txt", {.format = c.format, .threads = threads, .chunk_bytes = chunk});
                }),
                serial);
    }
  }
}

// ForEachPiece: for any piece size the pieces, in order, hold the file's rows (a header only
// at the file's start), and a bad line is reported as LoadDataset reports it, by its line in
// the file.
TEST_P(ChunkTest, PiecesConcatenateToTheFile) {
  const ChunkCase& c = GetParam();
  const TempDir dir;
  const std::string path = dir.Write("data.txt", c.text);
  LoadOptions options{.format = c.format, .threads = 2};
  const Dataset whole = LoadDataset(path, options);
  if (whole.ratings() != nullptr) {
    options.ratings_mapping = whole.ratings_shared();  // the ids of the whole file
  } else {
    options.num_features = whole.num_features();
  }
  for (std::size_t piece : {1, 100, 4096, 1 << 20}) {
    SCOPED_TRACE("piece " + std::to_string(piece));
    std::size_t rows = 0;
    std::size_t pieces = 0;
    ForEachPiece(path, options, piece, [&](const Dataset& d, std::size_t first_row) {
      ++pieces;
      EXPECT_EQ(first_row, rows);
      ExpectSameData(d, whole.Slice(rows, rows + d.rows()));
      rows += d.rows();
    });
    EXPECT_EQ(rows, whole.rows());
    if (piece == 1 << 20) {
      EXPECT_EQ(pieces, 1u);
    } else if (piece == 100) {
      EXPECT_GT(pieces, 0.8 * static_cast<double>(c.text.size()) / 100);  // about 100 bytes each
    }
  }
  std::string text = c.text;
  std::size_t at = 0;
  for (int i = 1; i < 400; ++i) at = text.find('\n', at) + 1;
  text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), 'x');  // breaks line 400
  const std::string bad = dir.Write("bad.txt", text);
  const std::string want = ErrorOf([&] { LoadDataset(bad, options); });
  EXPECT_NE(want.find("bad.txt:400: "), std::string::npos) << want;
  for (std::size_t piece : {1, 333, 1 << 20}) {
    EXPECT_EQ(ErrorOf([&] { ForEachPiece(bad, options, piece, [](const Dataset&, std::size_t) {}); }), want);
  }
}

TEST(ForEachPiece, CacheAndBadSizes) {
  const TempDir dir;
  const Dataset original = SparseSet();
  WriteCache(original, dir.Path("a.cache"));
  std::size_t rows = 0;
  ForEachPiece(dir.Path("a.cache"), {}, 4096, [&](const Dataset& d, std::size_t first_row) {
    EXPECT_EQ(first_row, rows);
    ExpectSameData(d, original.Slice(rows, rows + d.rows()));
    rows += d.rows();
  });
  EXPECT_EQ(rows, original.rows());
  EXPECT_NE(ErrorOf([&] { ForEachPiece(dir.Path("a.cache"), {}, 0, [](const Dataset&, std::size_t) {}); },
                    ErrorCode::kBadConfig)
                .find("pieces of 0 bytes"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { ForEachPiece(dir.Path("absent.svm"), {}, 100, [](const Dataset&, std::size_t) {}); },
                    ErrorCode::kIo)
                .find("absent.svm"),
            std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Formats, ChunkTest,
                         ::testing::Values(ChunkCase{"Libsvm", DataFormat::kLibsvm, LibsvmText()},
                                           ChunkCase{"Ratings", DataFormat::kRatings, RatingsText()},
                                           ChunkCase{"Csv", DataFormat::kCsv, CsvText()}),
                         [](const auto& test) { return std::string(test.param.name); });

// The parser's fast decimal path must give exactly std::from_chars' float, digit pattern by
// digit pattern: short and long mantissas, points anywhere, exponents near the fast path's
// edges, signs, zeros.
TEST(DataFormats, ValuesAreCorrectlyRoundedLikeFromChars) {
  Rng rng(77);
  std::string text;
  std::vector<float> want;
  for (int i = 0; i < 20000; ++i) {
    std::string token = rng.Below(2) ? "-" : "";
    const int digits = 1 + static_cast<int>(rng.Below(10));
    const int point = static_cast<int>(rng.Below(static_cast<std::uint64_t>(digits) + 2)) - 1;
    for (int d = 0; d < digits; ++d) {
      if (d == point) token += '.';
      token += static_cast<char>('0' + rng.Below(10));
    }
    if (rng.Below(3) == 0) {
      token += rng.Below(2) ? 'e' : 'E';
      token += std::to_string(static_cast<int>(rng.Below(27)) - 13);
    }
    float expected = 0;
    const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), expected);
    if (ec != std::errc() || ptr != token.data() + token.size()) continue;
    text += "1 1:" + token + "\n";
    want.push_back(expected);
  }
  const Dataset d = ParseDataset(text, "values");
  ASSERT_EQ(d.nnz(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(d.value()[i]), std::bit_cast<std::uint32_t>(want[i]))
        << "line " << i + 1 << ": " << want[i];
  }
}

TEST(DataFormats, FileAndMemoryParsesAgree) {
  const TempDir dir;
  const std::string text = LibsvmText();
  ExpectSameData(LoadDataset(dir.Write("a.svm", text), {.chunk_bytes = 333}),
                 ParseDataset(text, "mem"));
}

}  // namespace
}  // namespace corral
