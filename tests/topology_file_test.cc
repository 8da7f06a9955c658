// The file:PATH topology: edge lists with and without weights, and every kind of bad line.
#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <corral/error.h>
#include <corral/topology.h>

namespace corral {
namespace {

using ::testing::HasSubstr;

// A file named after the running test, so that tests run in parallel by ctest never share one.
std::string WriteFile(const std::string& text) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("corral_topology_" + std::string(info->name()) + ".txt");
  std::ofstream(path) << text;
  return path.string();
}

TEST(TopologyFile, EdgesWithoutWeightsGetMetropolisWeights) {
  const std::string path = WriteFile("# a path 0-1-2 and an extra edge\n0 1\n\n  1 2   # middle\n2\t3\n");
  const Topology t = MakeTopology("file:" + path, 4);
  EXPECT_EQ(t.spec(), "file:" + path);
  EXPECT_EQ(t.edges(), 3u);
  EXPECT_EQ(t.weights(), "metropolis");
  EXPECT_DOUBLE_EQ(t.Weight(0, 1), 1.0 / 3);  // max(deg 0, deg 1) = 2
  EXPECT_DOUBLE_EQ(t.Weight(1, 2), 1.0 / 3);
  EXPECT_DOUBLE_EQ(t.SelfWeight(0), 2.0 / 3);
  EXPECT_DOUBLE_EQ(t.SelfWeight(1), 1.0 / 3);
  EXPECT_EQ(t.Weight(0, 2), 0.0);
  const TopologyReport r = Analyze(t);
  EXPECT_TRUE(r.symmetric);
  EXPECT_TRUE(r.doubly_stochastic);
  EXPECT_TRUE(r.connected);
}

TEST(TopologyFile, GivenWeightsAreUsedAndTheDiagonalIsOneMinusTheRowSum) {
  const std::string path = WriteFile("0 1 0.5\n1 2 0.25\n0 2 0.125\n");
  const Topology t = MakeTopology("file:" + path, 3, {.weights = MixingWeights::kUniform});
  EXPECT_EQ(t.weights(), "given");
  EXPECT_EQ(t.Weight(0, 1), 0.5);
  EXPECT_EQ(t.Weight(1, 0), 0.5);
  EXPECT_EQ(t.Weight(2, 1), 0.25);
  EXPECT_DOUBLE_EQ(t.SelfWeight(0), 1 - 0.5 - 0.125);
  EXPECT_DOUBLE_EQ(t.SelfWeight(1), 1 - 0.5 - 0.25);
  EXPECT_DOUBLE_EQ(t.SelfWeight(2), 1 - 0.25 - 0.125);
  EXPECT_TRUE(Analyze(t).doubly_stochastic);
}

TEST(TopologyFile, WeightsThatOverfillARowAreReported) {
  // Row 1 sums to 1.5 before its diagonal: W_11 = -0.5, not a stochastic matrix.
  const Topology t = MakeTopology("file:" + WriteFile("0 1 0.75\n1 2 0.75\n"), 3);
  const TopologyReport r = Analyze(t);
  EXPECT_FALSE(r.doubly_stochastic);
  EXPECT_NEAR(r.stochastic_error, 0.5, 1e-12);
}

TEST(TopologyFile, IsolatedWorkersLeaveTheGraphDisconnected) {
  const TopologyReport r = Analyze(MakeTopology("file:" + WriteFile("0 1\n"), 3));
  EXPECT_FALSE(r.connected);
  EXPECT_NEAR(r.gap, 0.0, 1e-12);
}

void ExpectBadInput(const std::string& text, int workers, const std::string& message) {
  const std::string path = WriteFile(text);
  try {
    MakeTopology("file:" + path, workers);
    FAIL() << "expected an error for:\n" << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadInput) << e.what();
    EXPECT_THAT(e.what(), HasSubstr(path + message));
  }
}

TEST(TopologyFile, BadLinesNameFileLineAndWhatWasExpected) {
  ExpectBadInput("0 1\n1\n", 3, ":2: expected 'i j' or 'i j w' (two worker ids and an optional weight), got 1 field");
  ExpectBadInput("0 1 0.5 7\n", 3, ":1: expected 'i j' or 'i j w'");
  ExpectBadInput("# header\n0 x\n", 3, ":2: column 2: expected a worker id in 0..2, got 'x'");
  ExpectBadInput("0 1\n1 3\n", 3, ":2: column 2: expected a worker id in 0..2, got '3'");
  ExpectBadInput("-1 1\n", 3, ":1: column 1: expected a worker id in 0..2, got '-1'");
  ExpectBadInput("0 1\n2 2\n", 3, ":2: '2 2' is a self-loop");
  ExpectBadInput("0 1\n1 2\n1 0\n", 3, ":3: edge 0-1 is given again (first on line 1)");
  ExpectBadInput("0 1 0.5\n1 2 abc\n", 3, ":2: column 3: expected a weight in (0, 1], got 'abc'");
  ExpectBadInput("0 1 1.5\n", 3, ":1: column 3: expected a weight in (0, 1], got '1.5'");
  ExpectBadInput("0 1 0.5\n1 2\n", 3, ":2: has no weight but line 1 has one");
  ExpectBadInput("0 1\n1 2 0.5\n", 3, ":2: has a weight but line 1 has none");
  ExpectBadInput("# nothing\n\n", 3, ": no edges");
}

TEST(TopologyFile, MissingFileIsAnIoError) {
  try {
    MakeTopology("file:/nonexistent/corral_edges.txt", 3);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/corral_edges.txt: cannot open for reading"));
  }
}

}  // namespace
}  // namespace corral
