// Topologies: who talks to whom, and the mixing matrix W that decentralized SGD averages with
// (DESIGN.md §4).
//
// A Topology is a plain value: n workers and, for each round of its period, the sparse rows of
// W (worker i's new value is W_ii x_i + sum_j W_ij x_j). Static graphs have a period of 1; the
// one-peer exponential graph changes its single peer every round (Ying et al. 2021,
// "Exponential Graph is Provably Efficient for Decentralized Deep Training"). Nothing here
// assumes shared memory: a transport reads Neighbours() to know what to receive and
// Recipients() to know what to send, whether the peers are threads or MPI ranks.
//
// Thread safety: a Topology is immutable after construction; any number of threads may read it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace corral {

// How MakeTopology weighs the edges of a graph. A file with weights uses its own; the
// one-peer exponential graph always mixes 1/2-1/2.
enum class MixingWeights {
  kMetropolis,  // Metropolis-Hastings: w_ij = 1/(1 + max(deg i, deg j)); symmetric, doubly stochastic
  kUniform,     // w_ij = 1/(1 + max degree) on every edge
};

// "metropolis" or "uniform"; anything else is a kBadConfig corral::Error naming the value.
MixingWeights ParseMixingWeights(std::string_view name);
std::string_view ToString(MixingWeights weights);

struct TopologyOptions {
  // Edge weights of the graph (--weights).
  MixingWeights weights = MixingWeights::kMetropolis;
  // hierarchical: the group (NUMA node) of each worker, one entry per worker; any integer ids.
  // Empty means one group (the complete graph). The engine fills it from hwloc.
  std::vector<int> groups;
  // random-regular:d draws its graph from this seed; the same seed gives the same graph.
  std::uint64_t seed = 1;
};

// One entry of a row (or column) of W.
struct Neighbour {
  int worker = 0;       // j
  double weight = 0.0;  // W_ij in a row (Neighbours); W_ji in a column (Recipients)
};

// One round's mixing matrix as a list of off-diagonal entries, the form MakeTopology builds
// and embedders may build too.
struct MixingEntry {
  int row = 0;  // i: the worker that mixes
  int col = 0;  // j: the worker whose value it mixes in; j != i
  double weight = 0.0;
};
struct MixingRound {
  std::vector<MixingEntry> entries;  // at most one per (row, col); zero weights are dropped
  std::vector<double> self;          // W_ii, one per worker
};

class Topology {
 public:
  // rounds: W for rounds 0..period-1 (at least one); round t uses rounds[t mod period].
  // `weights` says where the weights came from, for reports. Throws kBadConfig for an entry
  // out of range, on the diagonal or given twice, or a `self` of the wrong size.
  Topology(std::string spec, int workers, std::vector<MixingRound> rounds,
           std::string weights = "given");

  int workers() const { return workers_; }
  // The spec it was made from ("ring", "torus:4x4", "file:edges.txt").
  const std::string& spec() const { return spec_; }
  // Where the weights came from: "metropolis", "uniform", "given" (a file's), "one-peer 1/2".
  const std::string& weights() const { return weights_; }
  // Number of distinct mixing matrices before the sequence repeats (1 for static graphs).
  int period() const { return static_cast<int>(rounds_.size()); }
  bool time_varying() const { return rounds_.size() > 1; }

  // The workers whose values `worker` mixes in at `round` (W_ij != 0, j != i), by increasing
  // j, with W_ij: what the worker receives.
  std::span<const Neighbour> Neighbours(int worker, std::uint64_t round = 0) const;
  // The workers that mix in `worker`'s value at `round` (W_ji != 0), with W_ji: what the
  // worker sends. The same list as Neighbours() when W is symmetric.
  std::span<const Neighbour> Recipients(int worker, std::uint64_t round = 0) const;
  // W_ii at `round`.
  double SelfWeight(int worker, std::uint64_t round = 0) const;
  // W_ij at `round` (0 where there is no edge; SelfWeight on the diagonal).
  double Weight(int i, int j, std::uint64_t round = 0) const;

  // Undirected links: pairs {i, j} that exchange anything (W_ij or W_ji != 0) in some round
  // of the period. A ring of n > 2 workers has n.
  std::size_t edges() const { return edges_; }

 private:
  // Compressed sparse rows of one round, and the same matrix by columns.
  struct Round {
    std::vector<std::size_t> row_begin, col_begin;  // workers + 1 offsets each
    std::vector<Neighbour> rows, cols;
    std::vector<double> self;
  };
  const Round& At(int worker, std::uint64_t round) const;

  std::string spec_;
  std::string weights_;
  int workers_ = 0;
  std::vector<Round> rounds_;
  std::size_t edges_ = 0;
};

// Builds the named topology for `workers` workers (>= 1). Specs:
//   ring, torus (the most square R x C with R*C = n) or torus:RxC, complete, star (worker 0
//   the centre), hypercube (n a power of two), exponential (i ~ i+2^k mod n, symmetrised),
//   one-peer-exponential (round t: i mixes with i+2^(t mod ceil(log2 n)), 1/2-1/2),
//   random-regular:d (seeded, connected), hierarchical (complete inside each group of
//   options.groups, a ring across the groups' first workers) or hierarchical:G (G equal
//   contiguous groups; options.groups is then ignored), file:PATH (one undirected edge "i j" or "i j w" per line, 0-based
//   worker ids, '#' starts a comment; with weights W_ij = W_ji = w and W_ii = 1 - row sum,
//   either every line has a weight or none does).
// Weights follow options.weights except for a file with weights and one-peer-exponential.
// Throws kBadConfig for an unknown spec (listing the valid ones) or one that does not fit n,
// kBadInput/kIo for a bad or unreadable file.
Topology MakeTopology(std::string_view spec, int workers, const TopologyOptions& options = {});

// The valid spec forms, for messages and --help.
std::string_view TopologySpecs();

// What Analyze() finds. For a time-varying topology the spectral numbers describe the product
// of one period, P = W(period-1) ... W(1) W(0): the mixing after one full cycle (for
// one-peer-exponential on n = 2^k workers P is the exact average, so gap = 1).
struct TopologyReport {
  int workers = 0;
  std::size_t edges = 0;
  int period = 1;
  int min_degree = 0;  // |Neighbours(i, t)| over all workers i and rounds t
  int max_degree = 0;
  bool symmetric = false;          // W = W^T in every round
  bool doubly_stochastic = false;  // entries >= 0 and rows and columns sum to 1, within 1e-9
  double stochastic_error = 0.0;   // the largest |row or column sum - 1| or negative entry
  bool connected = false;          // the undirected union graph of the period
  // 1 - max(|lambda_2|, |lambda_n|) of a symmetric (static) W; otherwise 1 - ||P - J||_2
  // with J = 11^T/n, which is the same number for symmetric doubly stochastic W.
  double gap = 0.0;
  double beta = 0.0;  // ||I - W||_2 (||I - P||_2 when time-varying)
};

inline constexpr double kStochasticTolerance = 1e-9;
inline constexpr int kMaxAnalyzedWorkers = 4096;
// Workers of one topology: one per thread of one machine. MakeTopology refuses more, so that
// a hostile count never builds (for `complete`) n^2 edges: 4096 workers are 8M edges.
inline constexpr int kMaxTopologyWorkers = 4096;

// Dense analysis: O(n^3) time and O(n^2) memory (Eigen's SelfAdjointEigenSolver). Throws
// kBadConfig above kMaxAnalyzedWorkers workers rather than run for minutes.
TopologyReport Analyze(const Topology& topology);

}  // namespace corral
