// Topologies: every kind's W is a valid mixing matrix, the known spectra, degrees, and errors.
#include <algorithm>
#include <bit>
#include <cmath>
#include <numbers>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <corral/error.h>
#include <corral/rng.h>
#include <corral/topology.h>

namespace corral {
namespace {

using ::testing::HasSubstr;

bool IsPowerOfTwo(int n) { return (n & (n - 1)) == 0; }

// A kind of topology, with the sizes it allows.
struct Kind {
  std::string spec;
  MixingWeights weights;
  bool (*allows)(int n);
};

void PrintTo(const Kind& k, std::ostream* os) { *os << k.spec << "/" << ToString(k.weights); }

std::vector<Kind> AllKinds() {
  std::vector<Kind> kinds;
  for (MixingWeights w : {MixingWeights::kMetropolis, MixingWeights::kUniform}) {
    auto any = [](int) { return true; };
    kinds.push_back({"ring", w, any});
    kinds.push_back({"torus", w, any});
    kinds.push_back({"complete", w, any});
    kinds.push_back({"star", w, any});
    kinds.push_back({"hypercube", w, [](int n) { return IsPowerOfTwo(n); }});
    kinds.push_back({"exponential", w, any});
    kinds.push_back({"random-regular:3", w, [](int n) { return n % 2 == 0 && n > 3; }});
    kinds.push_back({"random-regular:4", w, [](int n) { return n > 4; }});
    kinds.push_back({"hierarchical", w, any});
    kinds.push_back({"hierarchical:4", w, [](int n) { return n >= 4; }});
  }
  kinds.push_back({"one-peer-exponential", MixingWeights::kMetropolis, [](int) { return true; }});
  return kinds;
}

// W as a dense matrix, read through the public accessors only.
std::vector<std::vector<double>> DenseW(const Topology& t, std::uint64_t round) {
  const int n = t.workers();
  std::vector<std::vector<double>> w(n, std::vector<double>(n, 0.0));
  for (int i = 0; i < n; ++i) {
    w[i][i] = t.SelfWeight(i, round);
    for (const Neighbour& nb : t.Neighbours(i, round)) w[i][nb.worker] = nb.weight;
  }
  return w;
}

class EveryKind : public ::testing::TestWithParam<Kind> {};

// The row and column sums, the symmetry and the non-negativity, computed here from the
// accessors, for every size 2..64 the kind allows; and Analyze() must agree.
TEST_P(EveryKind, MixingMatrixIsDoublyStochasticAndSymmetric) {
  const Kind& kind = GetParam();
  const bool directed = kind.spec == "one-peer-exponential";  // (I + shift)/2: not symmetric
  int sizes = 0;
  for (int n = 2; n <= 64; ++n) {
    if (!kind.allows(n)) continue;
    ++sizes;
    SCOPED_TRACE("n = " + std::to_string(n));
    const Topology t = MakeTopology(kind.spec, n, {.weights = kind.weights, .seed = 7});
    ASSERT_EQ(t.workers(), n);
    for (int r = 0; r < t.period(); ++r) {
      const auto w = DenseW(t, static_cast<std::uint64_t>(r));
      for (int i = 0; i < n; ++i) {
        double row = 0.0, col = 0.0;
        for (int j = 0; j < n; ++j) {
          row += w[i][j];
          col += w[j][i];
          ASSERT_GE(w[i][j], 0.0) << i << "," << j;
          if (!directed) {
            ASSERT_EQ(w[i][j], w[j][i]) << i << "," << j;
          }
        }
        ASSERT_NEAR(row, 1.0, 1e-12) << "row " << i;
        ASSERT_NEAR(col, 1.0, 1e-12) << "column " << i;
        // Recipients() is the column of W: what i sends and with which weight.
        for (const Neighbour& nb : t.Recipients(i, static_cast<std::uint64_t>(r))) {
          ASSERT_EQ(t.Weight(nb.worker, i, static_cast<std::uint64_t>(r)), nb.weight);
        }
      }
    }
    const TopologyReport report = Analyze(t);
    EXPECT_TRUE(report.doubly_stochastic);
    EXPECT_EQ(report.symmetric, !directed || n == 2);
    EXPECT_TRUE(report.connected);
    EXPECT_GT(report.gap, 0.0);
    EXPECT_LE(report.gap, 1.0 + 1e-12);
  }
  EXPECT_GT(sizes, 0);
}

INSTANTIATE_TEST_SUITE_P(AllKinds, EveryKind, ::testing::ValuesIn(AllKinds()));

TEST(TopologySpectrum, RingMetropolisGapMatchesClosedForm) {
  // Ring, Metropolis: W = I/3 + (shift + shift^T)/3, eigenvalues 1/3 + 2/3 cos(2 pi k / n).
  EXPECT_NEAR(Analyze(MakeTopology("ring", 8)).gap, 0.1953, 1e-4);
  for (int n : {5, 8, 13, 32}) {
    const TopologyReport r = Analyze(MakeTopology("ring", n));
    double lambda2 = 1.0 / 3 + 2.0 / 3 * std::cos(2 * std::numbers::pi / n);
    double lambdan = 1.0 / 3 + 2.0 / 3 * std::cos(2 * std::numbers::pi * (n / 2) / n);
    EXPECT_NEAR(r.gap, 1.0 - std::max(std::abs(lambda2), std::abs(lambdan)), 1e-12) << n;
    EXPECT_NEAR(r.beta, 1.0 - lambdan, 1e-12) << n;
    EXPECT_EQ(r.edges, static_cast<std::size_t>(n));
  }
}

TEST(TopologySpectrum, Torus4x4) {
  const Topology t = MakeTopology("torus", 16);
  const TopologyReport r = Analyze(t);
  EXPECT_NEAR(r.gap, 0.4, 1e-12);
  EXPECT_EQ(r.min_degree, 4);
  EXPECT_EQ(r.max_degree, 4);
  EXPECT_EQ(r.edges, 32u);
  EXPECT_NEAR(Analyze(MakeTopology("torus:4x4", 16)).gap, 0.4, 1e-12);
}

TEST(TopologySpectrum, CompleteGraphAveragesInOneStep) {
  for (int n : {2, 7, 16}) {
    const TopologyReport r = Analyze(MakeTopology("complete", n, {.weights = MixingWeights::kUniform}));
    EXPECT_NEAR(r.gap, 1.0, 1e-12) << n;
    EXPECT_NEAR(r.beta, 1.0, 1e-12) << n;
    EXPECT_EQ(r.edges, static_cast<std::size_t>(n * (n - 1) / 2));
  }
}

TEST(TopologyShape, TorusIsTheMostSquareGrid) {
  // 12 = 3 x 4: every worker has 4 distinct neighbours; 2 x 6 would give 3.
  const Topology t = MakeTopology("torus", 12);
  EXPECT_EQ(Analyze(t).min_degree, 4);
  // 2 x 8: the two vertical neighbours coincide, so degree 3.
  const TopologyReport r = Analyze(MakeTopology("torus:2x8", 16));
  EXPECT_EQ(r.min_degree, 3);
  EXPECT_EQ(r.max_degree, 3);
  // A prime count is a 1 x n torus: a ring.
  EXPECT_EQ(Analyze(MakeTopology("torus", 7)).edges, 7u);
}

TEST(TopologyShape, StarHypercubeExponentialDegrees) {
  for (int n : {2, 8, 16, 64}) {
    SCOPED_TRACE(n);
    const Topology star = MakeTopology("star", n);
    EXPECT_EQ(star.Neighbours(0).size(), static_cast<std::size_t>(n - 1));
    for (int i = 1; i < n; ++i) {
      ASSERT_EQ(star.Neighbours(i).size(), 1u);
      EXPECT_EQ(star.Neighbours(i)[0].worker, 0);
    }
    const int log2n = std::countr_zero(static_cast<unsigned>(n));
    const TopologyReport cube = Analyze(MakeTopology("hypercube", n));
    EXPECT_EQ(cube.min_degree, log2n);
    EXPECT_EQ(cube.max_degree, log2n);
    // i ~ i +- 2^k: 2 log2 n offsets, of which +n/2 and -n/2 are the same worker.
    const TopologyReport expo = Analyze(MakeTopology("exponential", n));
    EXPECT_EQ(expo.min_degree, 2 * log2n - 1);
    EXPECT_EQ(expo.max_degree, 2 * log2n - 1);
  }
  // n = 12: offsets +-1, +-2, +-4, +-8 = {1, 2, 4, 8, 10, 11}.
  const Topology expo12 = MakeTopology("exponential", 12);
  std::vector<int> peers;
  for (const Neighbour& nb : expo12.Neighbours(0)) peers.push_back(nb.worker);
  EXPECT_EQ(peers, (std::vector<int>{1, 2, 4, 8, 10, 11}));
  // Star, Metropolis: the centre keeps 1/n, each leaf 1 - 1/n.
  const Topology star = MakeTopology("star", 8);
  EXPECT_DOUBLE_EQ(star.SelfWeight(0), 1.0 / 8);
  EXPECT_DOUBLE_EQ(star.SelfWeight(3), 7.0 / 8);
}

TEST(TopologyShape, UniformWeightsUseTheLargestDegree) {
  const Topology hier = MakeTopology("hierarchical", 6, {.weights = MixingWeights::kUniform,
                                                          .groups = {0, 0, 0, 0, 1, 1}});
  // Group {0,1,2,3} complete, {4,5} complete, leaders 0 and 4 linked: max degree 4 (worker 0).
  EXPECT_DOUBLE_EQ(hier.Weight(4, 5), 1.0 / 5);
  EXPECT_DOUBLE_EQ(hier.Weight(1, 2), 1.0 / 5);
  const Topology metro = MakeTopology("hierarchical", 6, {.groups = {0, 0, 0, 0, 1, 1}});
  EXPECT_DOUBLE_EQ(metro.Weight(4, 5), 1.0 / 3);  // deg 4 = 2, deg 5 = 1
  EXPECT_DOUBLE_EQ(metro.Weight(0, 4), 1.0 / 5);  // deg 0 = 4
}

TEST(TopologyShape, HierarchicalIsCompleteInsideAndARingAcross) {
  const Topology t = MakeTopology("hierarchical", 8, {.groups = {5, 5, 5, 1, 1, 1, 9, 9}});
  // Inside: 3 + 3 + 1 edges; across: the ring of first workers 3 (group 1), 0 (5), 6 (9).
  EXPECT_EQ(t.edges(), 10u);
  EXPECT_GT(t.Weight(0, 3), 0.0);
  EXPECT_GT(t.Weight(3, 6), 0.0);
  EXPECT_GT(t.Weight(6, 0), 0.0);
  EXPECT_EQ(t.Weight(1, 4), 0.0);
  EXPECT_GT(t.Weight(1, 2), 0.0);
  // Default: one group, the complete graph.
  EXPECT_EQ(MakeTopology("hierarchical", 6).edges(), 15u);
  try {
    MakeTopology("hierarchical", 4, {.groups = {0, 1}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
    EXPECT_THAT(e.what(), HasSubstr("expected one per worker (4)"));
  }
}

TEST(TopologyRandomRegular, EveryDegreeIsDAndTheGraphIsConnected) {
  for (int d : {2, 3, 5, 10}) {
    for (int n : {12, 32, 64}) {
      SCOPED_TRACE("d = " + std::to_string(d) + ", n = " + std::to_string(n));
      const Topology t = MakeTopology("random-regular:" + std::to_string(d), n, {.seed = 11});
      // Connectivity by our own search over Neighbours().
      std::vector<bool> seen(n, false);
      std::vector<int> stack{0};
      seen[0] = true;
      while (!stack.empty()) {
        const int i = stack.back();
        stack.pop_back();
        ASSERT_EQ(t.Neighbours(i).size(), static_cast<std::size_t>(d)) << "worker " << i;
        for (const Neighbour& nb : t.Neighbours(i)) {
          if (!seen[nb.worker]) stack.push_back(nb.worker), seen[nb.worker] = true;
        }
      }
      EXPECT_EQ(std::count(seen.begin(), seen.end(), true), n);
      EXPECT_EQ(t.edges(), static_cast<std::size_t>(n * d / 2));
    }
  }
}

std::set<std::pair<int, int>> EdgeSet(const Topology& t) {
  std::set<std::pair<int, int>> edges;
  for (int i = 0; i < t.workers(); ++i) {
    for (const Neighbour& nb : t.Neighbours(i)) edges.emplace(i, nb.worker);
  }
  return edges;
}

TEST(TopologyRandomRegular, TheSeedChoosesTheGraph) {
  const auto a = EdgeSet(MakeTopology("random-regular:4", 40, {.seed = 1}));
  EXPECT_EQ(a, EdgeSet(MakeTopology("random-regular:4", 40, {.seed = 1})));
  EXPECT_NE(a, EdgeSet(MakeTopology("random-regular:4", 40, {.seed = 2})));
  // Not the circulant it starts from: some worker has a neighbour further than 2 away.
  bool far = false;
  for (const auto& [i, j] : a) far = far || std::min((i - j + 40) % 40, (j - i + 40) % 40) > 2;
  EXPECT_TRUE(far);
}

void ExpectConfigError(const std::string& spec, int n, const std::string& message) {
  try {
    MakeTopology(spec, n);
    FAIL() << spec << " with " << n << " workers: expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadConfig) << e.what();
    EXPECT_THAT(e.what(), HasSubstr(message));
  }
}

TEST(TopologyErrors, BadSpecsNameTheValueAndWhatWasExpected) {
  ExpectConfigError("mesh", 8, "unknown topology 'mesh': expected one of ring, torus");
  ExpectConfigError("mesh", 8, "one-peer-exponential");
  ExpectConfigError("hypercube", 12, "expected a power of two workers, got 12");
  ExpectConfigError("torus:3x5", 16, "3 x 5 = 15 workers: expected R*C = 16");
  ExpectConfigError("torus:4by4", 16, "expected torus:RxC");
  ExpectConfigError("random-regular:3", 9, "is odd");
  ExpectConfigError("random-regular:8", 8, "expected a degree below the number of workers (8)");
  ExpectConfigError("random-regular", 8, "expected random-regular:D");
  ExpectConfigError("random-regular:x", 8, "got 'x'");
  ExpectConfigError("random-regular:1", 8, "never connected");
  ExpectConfigError("ring:2", 8, "ring takes no parameter");
  ExpectConfigError("hierarchical:9", 8, "at most one group per worker");
  ExpectConfigError("ring", 0, "expected at least 1 worker, got 0");
  EXPECT_THROW(ParseMixingWeights("max"), Error);
  try {
    Analyze(MakeTopology("ring", kMaxAnalyzedWorkers + 1));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
    EXPECT_THAT(e.what(), HasSubstr("expected at most 4096"));
  }
  EXPECT_EQ(ParseMixingWeights("uniform"), MixingWeights::kUniform);
}

TEST(TopologyOnePeer, ChangesItsPeerEveryRound) {
  const Topology t = MakeTopology("one-peer-exponential", 16);
  EXPECT_TRUE(t.time_varying());
  ASSERT_EQ(t.period(), 4);
  for (std::uint64_t round = 0; round < 8; ++round) {
    const auto peers = t.Neighbours(3, round);
    ASSERT_EQ(peers.size(), 1u);
    EXPECT_EQ(peers[0].worker, (3 + (1 << (round % 4))) % 16);
    EXPECT_EQ(peers[0].weight, 0.5);
    EXPECT_EQ(t.SelfWeight(3, round), 0.5);
    // It sends to the worker that pulls from it: 3 - 2^k.
    ASSERT_EQ(t.Recipients(3, round).size(), 1u);
    EXPECT_EQ(t.Recipients(3, round)[0].worker, (3 - (1 << (round % 4)) + 16) % 16);
  }
  EXPECT_FALSE(MakeTopology("ring", 16).time_varying());
}

// For n = 2^tau the product of any tau consecutive rounds is 11^T/n (Ying et al. 2021,
// Lemma 1): gossip with one peer per round reaches the exact average.
TEST(TopologyOnePeer, LogNRoundsGiveTheExactAverage) {
  Rng rng(3);
  for (int n = 2; n <= 64; n *= 2) {
    const Topology t = MakeTopology("one-peer-exponential", n);
    const int tau = std::countr_zero(static_cast<unsigned>(n));
    for (std::uint64_t start : {0, 5}) {
      std::vector<double> x(n);
      for (double& v : x) v = rng.Uniform() * 10 - 5;
      const double mean = std::accumulate(x.begin(), x.end(), 0.0) / n;
      for (std::uint64_t round = start; round < start + static_cast<std::uint64_t>(tau); ++round) {
        std::vector<double> next(n);
        for (int i = 0; i < n; ++i) {
          next[i] = t.SelfWeight(i, round) * x[i];
          for (const Neighbour& nb : t.Neighbours(i, round)) next[i] += nb.weight * x[nb.worker];
        }
        x = next;
      }
      for (int i = 0; i < n; ++i) EXPECT_NEAR(x[i], mean, 1e-12) << "n = " << n << ", worker " << i;
    }
    const TopologyReport r = Analyze(t);
    EXPECT_NEAR(r.gap, 1.0, 1e-12) << n;
  }
  // One round short of tau leaves disagreement.
  const TopologyReport ring_like = Analyze(MakeTopology("one-peer-exponential", 12));
  EXPECT_LT(ring_like.gap, 1.0 - 1e-6);
}

TEST(TopologyValue, ConstructorRejectsBadEntries) {
  auto make = [](std::vector<MixingEntry> entries) {
    return Topology("custom", 3, {MixingRound{.entries = std::move(entries), .self = {1, 1, 1}}});
  };
  EXPECT_THROW(make({{.row = 0, .col = 3, .weight = 0.5}}), Error);
  EXPECT_THROW(make({{.row = 1, .col = 1, .weight = 0.5}}), Error);
  EXPECT_THROW(make({{.row = 0, .col = 1, .weight = 0.5}, {.row = 0, .col = 1, .weight = 0.5}}), Error);
  EXPECT_THROW(Topology("custom", 3, {MixingRound{.self = {1}}}), Error);
  const Topology t = make({{.row = 0, .col = 2, .weight = 0.25}});
  EXPECT_EQ(t.edges(), 1u);
  EXPECT_EQ(t.Weight(0, 2), 0.25);
  EXPECT_EQ(t.Weight(2, 0), 0.0);
  EXPECT_FALSE(Analyze(t).symmetric);
  EXPECT_FALSE(Analyze(t).doubly_stochastic);
  EXPECT_FALSE(Analyze(t).connected);
}

}  // namespace
}  // namespace corral
