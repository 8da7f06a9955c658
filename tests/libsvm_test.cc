// LIBSVM reader: every accepted dialect to exact CSR arrays, every malformed input to an error
// naming the file and the line, a round trip through text, and the real shared data sets.
#include <corral/libsvm.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <corral/dataset.h>
#include <corral/error.h>
#include <corral/synthetic.h>

#ifndef CORRAL_SOURCE_DIR
#error "tests need CORRAL_SOURCE_DIR (the repository root) to find ../shared/data"
#endif

namespace corral {
namespace {

struct Csr {
  std::vector<std::uint64_t> row_ptr;
  std::vector<std::uint32_t> index;
  std::vector<float> value;
  std::vector<float> label;
  std::size_t num_features = 0;
};

Csr ToCsr(const Dataset& d) {
  return {{d.row_ptr().begin(), d.row_ptr().end()},
          {d.index().begin(), d.index().end()},
          {d.value().begin(), d.value().end()},
          {d.labels().begin(), d.labels().end()},
          d.num_features()};
}

void ExpectSameCsr(const Csr& got, const Csr& want) {
  EXPECT_EQ(got.row_ptr, want.row_ptr);
  EXPECT_EQ(got.index, want.index);
  EXPECT_EQ(got.value, want.value);
  EXPECT_EQ(got.label, want.label);
  EXPECT_EQ(got.num_features, want.num_features);
}

Dataset Parse(const std::string& text, const LibsvmOptions& options = {},
              const std::string& name = "t.svm") {
  std::istringstream in(text);
  return ParseLibsvm(in, name, options);
}

// The message of the corral::Error that parsing `text` throws; fails the test if none is.
std::string ParseError(const std::string& text, const LibsvmOptions& options,
                       const std::string& name) {
  try {
    Parse(text, options, name);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadInput) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error for input:\n" << text;
  return "";
}

struct AcceptCase {
  const char* name;
  std::string text;
  LibsvmOptions options;
  Csr want;
};

class AcceptTest : public ::testing::TestWithParam<AcceptCase> {};

TEST_P(AcceptTest, ParsesToExactCsr) {
  const AcceptCase& c = GetParam();
  const Dataset d = Parse(c.text, c.options);
  ExpectSameCsr(ToCsr(d), c.want);
  EXPECT_EQ(d.name(), "t.svm");
}

const AcceptCase kAccepted[] = {
    {"Basic", "+1 1:0.5 3:2\n-1 2:1\n", {}, {{0, 2, 3}, {0, 2, 1}, {0.5f, 2, 1}, {1, -1}, 3}},
    {"LabelSpellings", "+1\n-1.0\n1\n0\n2.5E+1\n-3e-1\n+0.5\n1.\n", {},
     {{0, 0, 0, 0, 0, 0, 0, 0, 0}, {}, {}, {1, -1, 1, 0, 25, -0.3f, 0.5f, 1}, 0}},
    {"ScientificValues", "1 1:1e-3 2:1E-3 3:3.3519048e-02 4:-2.5E+2 5:.5 6:1e-50\n", {},
     {{0, 6}, {0, 1, 2, 3, 4, 5}, {1e-3f, 1e-3f, 3.3519048e-02f, -250, 0.5f, 0}, {1}, 6}},
    {"QidIgnored", "2 qid:1 1:1 3:1\n1 qid:12 2:4\n", {},
     {{0, 2, 3}, {0, 2, 1}, {1, 1, 4}, {2, 1}, 3}},
    {"Comments", "# header\n1 1:1 # trailing 9:9\n#only\n-1 2:2#tight\n", {},
     {{0, 1, 2}, {0, 1}, {1, 2}, {1, -1}, 2}},
    {"BlankLines", "\n\n1 1:1\n   \n\t\n-1 2:2\n\n", {}, {{0, 1, 2}, {0, 1}, {1, 2}, {1, -1}, 2}},
    {"TrailingBlanks", "1 1:1 \t \n-1 2:2\t\n", {}, {{0, 1, 2}, {0, 1}, {1, 2}, {1, -1}, 2}},
    {"LeadingBlanks", "  1 1:1\n\t-1 2:2\n", {}, {{0, 1, 2}, {0, 1}, {1, 2}, {1, -1}, 2}},
    {"Crlf", "1 1:1 2:2\r\n-1 3:3 \r\n# c\r\n\r\n", {},
     {{0, 2, 3}, {0, 1, 2}, {1, 2, 3}, {1, -1}, 3}},
    {"LabelOnlyRows", "1\n-1 2:5\n0 \n", {}, {{0, 0, 1, 1}, {1}, {5}, {1, -1, 0}, 2}},
    {"ExplicitZerosKept", "1 1:0 2:0.0 3:0e0\n", {}, {{0, 3}, {0, 1, 2}, {0, 0, 0}, {1}, 3}},
    {"Tabs", "1\t1:1\t2:2\n-1\t\t3:3\n", {}, {{0, 2, 3}, {0, 1, 2}, {1, 2, 3}, {1, -1}, 3}},
    {"NoFinalNewline", "1 1:1\n-1 2:2", {}, {{0, 1, 2}, {0, 1}, {1, 2}, {1, -1}, 2}},
    {"Empty", "", {}, {{0}, {}, {}, {}, 0}},
    {"OnlyComments", "# a\n#b\n", {}, {{0}, {}, {}, {}, 0}},
    {"ZeroBased", "1 0:1 2:3\n", {.zero_based = true}, {{0, 2}, {0, 2}, {1, 3}, {1}, 3}},
    {"NumFeaturesWidens", "1 1:1 4:2\n", {.num_features = 10},
     {{0, 2}, {0, 3}, {1, 2}, {1}, 10}},
    {"NumFeaturesAtEdge", "1 4:1\n", {.num_features = 4}, {{0, 1}, {3}, {1}, {1}, 4}},
    {"LargestIndex", "1 4294967296:1\n", {},
     {{0, 1}, {4294967295u}, {1}, {1}, std::size_t{1} << 32}},
};

INSTANTIATE_TEST_SUITE_P(Dialects, AcceptTest, ::testing::ValuesIn(kAccepted),
                         [](const auto& test) { return std::string(test.param.name); });

struct RejectCase {
  const char* name;
  std::string line;   // placed on physical line 4 of bad.svm
  std::string piece;  // expected in the message after "bad.svm:4: "
  LibsvmOptions options = {};
};

class RejectTest : public ::testing::TestWithParam<RejectCase> {};

TEST_P(RejectTest, NamesFileLineAndExpectation) {
  const RejectCase& c = GetParam();
  // A comment, a blank line and a CRLF row come first, so line counting covers all of them.
  const std::string text = "# header\n\n+1 1:1\r\n" + c.line + "\n-1 2:1\n";
  const std::string message = ParseError(text, c.options, "bad.svm");
  EXPECT_EQ(message.rfind("bad.svm:4: ", 0), 0u) << message;
  EXPECT_NE(message.find(c.piece), std::string::npos)
      << "message '" << message << "' lacks '" << c.piece << "'";
}

const RejectCase kRejected[] = {
    {"WordLabel", "abc 1:1", "expected a finite numeric label, got 'abc'"},
    {"FeatureAsLabel", "1:1 2:2", "label, got '1:1'"},
    {"TrailingPlusLabel", "1+ 1:1", "label, got '1+'"},
    {"DoublePlusLabel", "++1", "label, got '++1'"},
    {"PlusMinusLabel", "+-1", "label, got '+-1'"},
    {"NanLabel", "nan 1:1", "label, got 'nan'"},
    {"InfLabel", "-inf", "label, got '-inf'"},
    {"HugeLabel", "1e40 1:1", "label, got '1e40'"},
    {"NoColon", "1 abc", "expected index:value, got 'abc'"},
    {"BareNumber", "1 1:1 3", "expected index:value, got '3'"},
    {"MissingValue", "1 1:", "expected a finite number after the colon, got '1:'"},
    {"WordValue", "1 1:abc", "after the colon, got '1:abc'"},
    {"TwoColons", "1 1:1:1", "after the colon, got '1:1:1'"},
    {"CommaValue", "1 1:1,5", "after the colon, got '1:1,5'"},
    {"HexValue", "1 1:0x10", "after the colon, got '1:0x10'"},
    {"NanValue", "1 1:nan", "after the colon, got '1:nan'"},
    {"InfValue", "1 1:inf", "after the colon, got '1:inf'"},
    {"NegInfValue", "1 1:-infinity", "after the colon, got '1:-infinity'"},
    {"OverflowValue", "1 1:1e40", "after the colon, got '1:1e40'"},
    {"MissingIndex", "1 :1", "expected a non-negative integer index before the colon, got ':1'"},
    {"NegativeIndex", "1 -1:1", "integer index before the colon, got '-1:1'"},
    {"FractionalIndex", "1 1.5:1", "integer index before the colon, got '1.5:1'"},
    {"IndexZero", "1 0:1", "index 0 in '0:1': indices start at 1"},
    {"Decreasing", "1 7:1 5:1", "expected indices in increasing order, got 5 after 7"},
    {"Duplicate", "1 3:1 3:2", "expected indices in increasing order, got 3 after 3"},
    {"IndexTooLarge", "1 4294967297:1", "index 4294967297 is too large, expected at most 4294967296"},
    {"IndexOverflow", "1 99999999999999999999:1", "integer index before the colon"},
    {"BadQid", "1 qid:x 1:1", "expected qid:<non-negative integer>, got 'qid:x'"},
    {"LoneCr", "1 1:1\r2:2", "after the colon"},
    {"BeyondNumFeatures", "1 4:1", "index 4 is beyond num_features 3, expected at most 3",
     {.num_features = 3}},
    {"BeyondNumFeaturesZeroBased", "1 3:1", "index 3 is beyond num_features 3, expected at most 2",
     {.num_features = 3, .zero_based = true}},
};

INSTANTIATE_TEST_SUITE_P(Malformed, RejectTest, ::testing::ValuesIn(kRejected),
                         [](const auto& test) { return std::string(test.param.name); });

TEST(LibsvmTest, CountsEveryPhysicalLine) {
  std::string text;
  for (int i = 0; i < 999; ++i) text += i % 3 == 0 ? "# comment\n" : (i % 3 == 1 ? "\n" : "1 1:1\n");
  text += "1 2:1 1:1\n";
  const std::string message = ParseError(text, {}, "deep.svm");
  EXPECT_EQ(message.rfind("deep.svm:1000: ", 0), 0u) << message;
}

TEST(LibsvmTest, ZeroBasedAcceptsIndexZeroOnly) {
  EXPECT_EQ(Parse("1 0:1\n", {.zero_based = true}).Row(0).index[0], 0u);
  const std::string message = ParseError("1 0:1\n", {}, "one.svm");
  EXPECT_EQ(message.rfind("one.svm:1: ", 0), 0u) << message;
}

TEST(LibsvmTest, CutsLongTokensInMessages) {
  const std::string junk(500, 'x');
  const std::string message = ParseError("1 " + junk + "\n", {}, "long.svm");
  EXPECT_NE(message.find("got '" + std::string(40, 'x') + "...'"), std::string::npos) << message;
  EXPECT_LT(message.size(), 200u);
}

// Serves `text`, then fails the next read the way a dying disk does.
class FailingBuffer : public std::streambuf {
 public:
  explicit FailingBuffer(std::string text) : text_(std::move(text)) {
    setg(text_.data(), text_.data(), text_.data() + text_.size());
  }

 protected:
  int_type underflow() override { throw std::runtime_error("device gone"); }

 private:
  std::string text_;
};

TEST(LibsvmTest, StreamReadFailureIsAnIoError) {
  FailingBuffer buffer("1 1:1\n-1 2:1\n");
  std::istream in(&buffer);
  try {
    ParseLibsvm(in, "flaky");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("flaky: read failed after line 2", 0), 0u) << e.what();
  }
}

class TempDir {
 public:
  TempDir() : path_(std::filesystem::path(::testing::TempDir()) / UniqueName()) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string Write(const std::string& file, const std::string& text) const {
    const std::string path = (path_ / file).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  static std::string UniqueName() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return std::string("corral_") + info->test_suite_name() + "_" + info->name();
  }
  std::filesystem::path path_;
};

TEST(LibsvmTest, ReadsFileAndNamesDatasetByPath) {
  const TempDir dir;
  const std::string path = dir.Write("small.svm", "+1 1:1 3:2\r\n-1 2:0.5\r\n");
  const Dataset d = ReadLibsvm(path);
  EXPECT_EQ(d.name(), path);
  ExpectSameCsr(ToCsr(d), {{0, 2, 3}, {0, 2, 1}, {1, 2, 0.5f}, {1, -1}, 3});
}

TEST(LibsvmTest, FileErrorsNameThePathAndLine) {
  const TempDir dir;
  const std::string path = dir.Write("bad.svm", "1 1:1\n1 1:x\n");
  try {
    ReadLibsvm(path);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadInput);
    EXPECT_EQ(std::string(e.what()).rfind(path + ":2: ", 0), 0u) << e.what();
  }
}

TEST(LibsvmTest, UnreadableFileIsAnIoError) {
  const TempDir dir;
  const std::string missing = (dir.path() / "missing.svm").string();
  for (const auto& [path, reason] : std::map<std::string, std::string>{
           {missing, "No such file or directory"}, {dir.path().string(), "Is a directory"}}) {
    try {
      ReadLibsvm(path);
      ADD_FAILURE() << "no error for " << path;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kIo) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    }
  }
}

// Writes a dataset the way a user would, with enough digits to recover every float exactly.
std::string ToLibsvmText(const Dataset& d) {
  std::string text;
  char buffer[64];
  for (std::size_t r = 0; r < d.rows(); ++r) {
    std::snprintf(buffer, sizeof buffer, "%.9g", static_cast<double>(d.Label(r)));
    text += buffer;
    const SparseRow row = d.Row(r);
    for (std::size_t k = 0; k < row.nnz(); ++k) {
      std::snprintf(buffer, sizeof buffer, " %u:%.9g", static_cast<unsigned>(row.index[k] + 1),
                    static_cast<double>(row.value[k]));
      text += buffer;
    }
    text += '\n';
  }
  return text;
}

TEST(LibsvmTest, SyntheticRoundTripIsExact) {
  const SyntheticSpec spec{.rows = 2000, .features = 300, .nnz_per_row = 12, .seed = 7};
  const Dataset original = MakeSyntheticClassification(spec, 0).train;
  const std::string text = ToLibsvmText(original);

  const Dataset parsed = Parse(text, {.num_features = spec.features});
  ExpectSameCsr(ToCsr(parsed), ToCsr(original));

  // Without a given dimension the reader infers max(index) + 1.
  const Dataset inferred = Parse(text);
  std::uint32_t max_index = 0;
  for (std::uint32_t i : original.index()) max_index = std::max(max_index, i);
  EXPECT_EQ(inferred.num_features(), max_index + 1u);
  EXPECT_EQ(ToCsr(inferred).index, ToCsr(original).index);

  const TempDir dir;
  const Dataset from_file = ReadLibsvm(dir.Write("synthetic.svm", text), {.num_features = 300});
  ExpectSameCsr(ToCsr(from_file), ToCsr(original));
}

// The shared real data sets: $CORRAL_DATA_DIR, else ../shared/data beside the repository.
std::filesystem::path DataDir() {
  if (const char* dir = std::getenv("CORRAL_DATA_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  return std::filesystem::path(CORRAL_SOURCE_DIR "/../shared/data");
}

struct RealCase {
  const char* name;
  const char* file;
  std::size_t num_features_option;
  std::size_t rows, nnz, num_features;
  std::map<float, std::size_t> label_counts;
};

class RealDataTest : public ::testing::TestWithParam<RealCase> {};

TEST_P(RealDataTest, MatchesPublishedCounts) {
  const RealCase& c = GetParam();
  const std::filesystem::path path = DataDir() / c.file;
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not present";
  const Dataset d = ReadLibsvm(path.string(), {.num_features = c.num_features_option});
  EXPECT_EQ(d.rows(), c.rows);
  EXPECT_EQ(d.nnz(), c.nnz);
  EXPECT_EQ(d.num_features(), c.num_features);
  std::map<float, std::size_t> counts;
  for (float label : d.labels()) ++counts[label];
  EXPECT_EQ(counts, c.label_counts);
}

INSTANTIATE_TEST_SUITE_P(
    SharedData, RealDataTest,
    ::testing::Values(
        RealCase{"a9a", "a9a/a9a", 0, 32561, 451592, 123, {{-1.0f, 24720}, {1.0f, 7841}}},
        RealCase{"a9a_t", "a9a/a9a.t", 0, 16281, 225731, 122, {{-1.0f, 12435}, {1.0f, 3846}}},
        RealCase{"a9a_t_dim123", "a9a/a9a.t", 123, 16281, 225731, 123,
                 {{-1.0f, 12435}, {1.0f, 3846}}},
        RealCase{"ijcnn1", "ijcnn1/ijcnn1", 0, 49990, 649870, 22, {{-1.0f, 45137}, {1.0f, 4853}}},
        RealCase{"phishing", "phishing/phishing", 0, 11055, 331650, 68,
                 {{0.0f, 4898}, {1.0f, 6157}}}),
    [](const auto& test) { return std::string(test.param.name); });

TEST(RealDataTest, A9aFirstRowIsExact) {
  const std::filesystem::path path = DataDir() / "a9a/a9a";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not present";
  const Dataset d = ReadLibsvm(path.string());
  // "-1 3:1 11:1 14:1 19:1 39:1 42:1 55:1 64:1 67:1 73:1 75:1 76:1 80:1 83:1 "
  const SparseRow row = d.Row(0);
  EXPECT_EQ(d.Label(0), -1.0f);
  EXPECT_EQ(std::vector<std::uint32_t>(row.index.begin(), row.index.end()),
            (std::vector<std::uint32_t>{2, 10, 13, 18, 38, 41, 54, 63, 66, 72, 74, 75, 79, 82}));
  EXPECT_EQ(std::vector<float>(row.value.begin(), row.value.end()), std::vector<float>(14, 1.0f));
}

}  // namespace
}  // namespace corral
