// MakeTopology: the named graphs of DESIGN.md §4 and their mixing weights.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include <corral/error.h>
#include <corral/rng.h>
#include <corral/topology.h>

#include "topologies/src/graph.h"

namespace corral {
namespace {

using internal::Graph;

constexpr std::string_view kSpecs =
    "ring, torus, torus:RxC, complete, star, hypercube, exponential, one-peer-exponential, "
    "random-regular:D, hierarchical, hierarchical:G, file:PATH";

[[noreturn]] void Fail(std::string_view spec, const std::string& what) {
  throw Error(ErrorCode::kBadConfig, "topology '" + std::string(spec) + "': " + what);
}

bool IsPowerOfTwo(int n) { return n > 0 && (n & (n - 1)) == 0; }

// The smallest k with 2^k >= n.
int CeilLog2(int n) {
  int k = 0;
  while ((std::int64_t{1} << k) < n) ++k;
  return k;
}

// A positive integer parameter such as the d of random-regular:d.
int ParsePositive(std::string_view spec, std::string_view text, std::string_view what) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 1) {
    Fail(spec, "expected " + std::string(what) + " as a positive integer, got '" + std::string(text) + "'");
  }
  return value;
}

// Collects undirected edges, dropping self-loops and repeats (a 2-wide torus meets the same
// neighbour on both sides).
class EdgeSet {
 public:
  explicit EdgeSet(int workers) : workers_(workers) {}
  void Add(int u, int v) {
    if (u != v) edges_.emplace(std::min(u, v), std::max(u, v));
  }
  Graph Take() { return {.workers = workers_, .edges = {edges_.begin(), edges_.end()}}; }

 private:
  int workers_;
  std::set<std::pair<int, int>> edges_;
};

Graph Ring(int n) {
  EdgeSet g(n);
  for (int i = 0; i < n; ++i) g.Add(i, (i + 1) % n);
  return g.Take();
}

// Worker r*cols + c talks to its four wrap-around neighbours.
Graph Torus(int n, int rows, int cols) {
  EdgeSet g(n);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      g.Add(r * cols + c, r * cols + (c + 1) % cols);
      g.Add(r * cols + c, ((r + 1) % rows) * cols + c);
    }
  }
  return g.Take();
}

Graph Complete(int n) {
  EdgeSet g(n);
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) g.Add(i, j);
  }
  return g.Take();
}

Graph Star(int n) {
  EdgeSet g(n);
  for (int i = 1; i < n; ++i) g.Add(0, i);
  return g.Take();
}

Graph Hypercube(int n) {
  EdgeSet g(n);
  for (int i = 0; i < n; ++i) {
    for (int bit = 1; bit < n; bit <<= 1) g.Add(i, i ^ bit);
  }
  return g.Take();
}

// Static exponential graph (Assran et al. 2019; Ying et al. 2021): i ~ i + 2^k mod n.
Graph Exponential(int n) {
  EdgeSet g(n);
  for (int i = 0; i < n; ++i) {
    for (std::int64_t hop = 1; hop < n; hop <<= 1) g.Add(i, static_cast<int>((i + hop) % n));
  }
  return g.Take();
}

bool Connected(int n, const std::vector<std::pair<int, int>>& edges) {
  std::vector<int> parent(static_cast<std::size_t>(n));
  std::iota(parent.begin(), parent.end(), 0);
  auto root = [&](int x) {
    while (parent[static_cast<std::size_t>(x)] != x) {
      x = parent[static_cast<std::size_t>(x)] = parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(x)])];
    }
    return x;
  };
  int components = n;
  for (const auto& [u, v] : edges) {
    const int a = root(u), b = root(v);
    if (a != b) {
      parent[static_cast<std::size_t>(a)] = b;
      --components;
    }
  }
  return components <= 1;
}

// A connected random d-regular graph: start from the circulant graph (i ~ i±1..i±d/2, plus
// i ~ i+n/2 when d is odd), which is d-regular and connected, then randomise it with
// degree-preserving double-edge swaps (the switch chain, e.g. Milo et al. 2003), rejecting
// swaps that would make a loop or a repeated edge, until the graph is connected again.
Graph RandomRegular(std::string_view spec, int n, int d, std::uint64_t seed) {
  if (d >= n) Fail(spec, "expected a degree below the number of workers (" + std::to_string(n) + ")");
  if ((static_cast<std::int64_t>(n) * d) % 2 != 0) {
    Fail(spec, "workers * degree = " + std::to_string(n) + " * " + std::to_string(d) +
                   " is odd: expected an even product (every edge has two ends)");
  }
  if (d == 1 && n > 2) Fail(spec, "degree 1 is a matching, never connected: expected a degree of at least 2");
  EdgeSet start(n);
  for (int i = 0; i < n; ++i) {
    for (int hop = 1; hop <= d / 2; ++hop) start.Add(i, (i + hop) % n);
    if (d % 2 == 1) start.Add(i, (i + n / 2) % n);
  }
  Graph g = start.Take();
  auto key = [n](int u, int v) {
    return static_cast<std::uint64_t>(std::min(u, v)) * static_cast<std::uint64_t>(n) +
           static_cast<std::uint64_t>(std::max(u, v));
  };
  std::unordered_set<std::uint64_t> present;
  for (const auto& [u, v] : g.edges) present.insert(key(u, v));
  Rng rng(seed);
  const std::size_t m = g.edges.size();
  auto swap_edges = [&](std::size_t attempts) {
    for (std::size_t t = 0; t < attempts; ++t) {
      const std::size_t a = rng.Below(m), b = rng.Below(m);
      if (a == b) continue;
      auto [u, v] = g.edges[a];
      auto [x, y] = g.edges[b];
      if (rng() & 1) std::swap(x, y);
      // {u,v},{x,y} -> {u,x},{v,y}: every degree stays the same.
      if (u == x || v == y || present.contains(key(u, x)) || present.contains(key(v, y))) continue;
      present.erase(key(u, v));
      present.erase(key(x, y));
      present.insert(key(u, x));
      present.insert(key(v, y));
      g.edges[a] = {std::min(u, x), std::max(u, x)};
      g.edges[b] = {std::min(v, y), std::max(v, y)};
    }
  };
  swap_edges(10 * m);
  for (int tries = 0; !Connected(n, g.edges); ++tries) {
    if (tries == 1000) Fail(spec, "found no connected graph (seed " + std::to_string(seed) + ")");
    swap_edges(m);
  }
  std::sort(g.edges.begin(), g.edges.end());
  return g;
}

// Complete inside each group; the first worker of each group joins a ring across groups,
// taken in increasing group id.
Graph Hierarchical(std::string_view spec, int n, const std::vector<int>& groups) {
  if (!groups.empty() && groups.size() != static_cast<std::size_t>(n)) {
    Fail(spec, "TopologyOptions::groups has " + std::to_string(groups.size()) +
                   " entries: expected one per worker (" + std::to_string(n) + ")");
  }
  auto group = [&](int i) { return groups.empty() ? 0 : groups[static_cast<std::size_t>(i)]; };
  EdgeSet g(n);
  std::map<int, int> leader;  // group id -> its first worker
  for (int i = 0; i < n; ++i) {
    leader.try_emplace(group(i), i);
    for (int j = i + 1; j < n; ++j) {
      if (group(i) == group(j)) g.Add(i, j);
    }
  }
  std::vector<int> leaders;
  for (const auto& [id, worker] : leader) leaders.push_back(worker);
  if (leaders.size() > 1) {
    for (std::size_t k = 0; k < leaders.size(); ++k) g.Add(leaders[k], leaders[(k + 1) % leaders.size()]);
  }
  return g.Take();
}

// W of a static graph: the given weights, Metropolis-Hastings (Xiao & Boyd 2004, "Fast linear
// iterations for distributed averaging"), or one uniform weight; W_ii = 1 - row sum.
MixingRound Weigh(const Graph& g, MixingWeights weights) {
  std::vector<int> degree(static_cast<std::size_t>(g.workers), 0);
  for (const auto& [u, v] : g.edges) {
    ++degree[static_cast<std::size_t>(u)];
    ++degree[static_cast<std::size_t>(v)];
  }
  const int max_degree = degree.empty() ? 0 : *std::max_element(degree.begin(), degree.end());
  MixingRound round;
  round.self.assign(static_cast<std::size_t>(g.workers), 1.0);
  for (std::size_t e = 0; e < g.edges.size(); ++e) {
    const auto [u, v] = g.edges[e];
    double w;
    if (!g.weights.empty()) {
      w = g.weights[e];
    } else if (weights == MixingWeights::kMetropolis) {
      w = 1.0 / (1 + std::max(degree[static_cast<std::size_t>(u)], degree[static_cast<std::size_t>(v)]));
    } else {
      w = 1.0 / (1 + max_degree);
    }
    round.entries.push_back({.row = u, .col = v, .weight = w});
    round.entries.push_back({.row = v, .col = u, .weight = w});
    round.self[static_cast<std::size_t>(u)] -= w;
    round.self[static_cast<std::size_t>(v)] -= w;
  }
  return round;
}

// One-peer exponential graph (Ying et al. 2021, eq. 6): in round t worker i averages with
// i + 2^(t mod tau), tau = ceil(log2 n). Each W is (I + shift)/2: doubly stochastic, not
// symmetric; for n = 2^tau the product of any tau consecutive rounds is exactly 11^T/n.
std::vector<MixingRound> OnePeerExponential(int n) {
  const int tau = std::max(1, CeilLog2(n));
  std::vector<MixingRound> rounds(static_cast<std::size_t>(tau));
  for (int k = 0; k < tau; ++k) {
    MixingRound& r = rounds[static_cast<std::size_t>(k)];
    r.self.assign(static_cast<std::size_t>(n), n > 1 ? 0.5 : 1.0);
    if (n == 1) continue;
    for (int i = 0; i < n; ++i) {
      r.entries.push_back({.row = i, .col = static_cast<int>((i + (std::int64_t{1} << k)) % n), .weight = 0.5});
    }
  }
  return rounds;
}

}  // namespace

MixingWeights ParseMixingWeights(std::string_view name) {
  if (name == "metropolis") return MixingWeights::kMetropolis;
  if (name == "uniform") return MixingWeights::kUniform;
  throw Error(ErrorCode::kBadConfig,
              "unknown weights '" + std::string(name) + "': expected metropolis or uniform");
}

std::string_view ToString(MixingWeights weights) {
  return weights == MixingWeights::kMetropolis ? "metropolis" : "uniform";
}

std::string_view TopologySpecs() { return kSpecs; }

Topology MakeTopology(std::string_view spec, int workers, const TopologyOptions& options) {
  if (workers < 1) Fail(spec, "expected at least 1 worker, got " + std::to_string(workers));
  if (workers > kMaxTopologyWorkers) {
    Fail(spec, "expected at most " + std::to_string(kMaxTopologyWorkers) +
                   " workers (one per thread of one machine), got " + std::to_string(workers));
  }
  const std::size_t colon = spec.find(':');
  const std::string_view name = spec.substr(0, colon);
  const bool has_param = colon != std::string_view::npos;
  const std::string_view param = has_param ? spec.substr(colon + 1) : std::string_view();
  const int n = workers;
  auto no_param = [&] {
    if (has_param) Fail(spec, std::string(name) + " takes no parameter");
  };

  if (name == "one-peer-exponential") {
    no_param();
    return Topology(std::string(spec), n, OnePeerExponential(n), "one-peer 1/2");
  }
  Graph graph;
  if (name == "ring") {
    no_param();
    graph = Ring(n);
  } else if (name == "torus") {
    int rows = 1;
    int cols = n;
    if (has_param) {
      const std::size_t x = param.find('x');
      if (x == std::string_view::npos) Fail(spec, "expected torus:RxC, e.g. torus:4x4");
      rows = ParsePositive(spec, param.substr(0, x), "the rows R of torus:RxC");
      cols = ParsePositive(spec, param.substr(x + 1), "the columns C of torus:RxC");
      if (static_cast<std::int64_t>(rows) * cols != n) {
        Fail(spec, std::to_string(rows) + " x " + std::to_string(cols) + " = " +
                       std::to_string(static_cast<std::int64_t>(rows) * cols) +
                       " workers: expected R*C = " + std::to_string(n));
      }
    } else {
      for (int r = 1; static_cast<std::int64_t>(r) * r <= n; ++r) {
        if (n % r == 0) rows = r;  // the largest divisor <= sqrt(n): the most square grid
      }
      cols = n / rows;
    }
    graph = Torus(n, rows, cols);
  } else if (name == "complete") {
    no_param();
    graph = Complete(n);
  } else if (name == "star") {
    no_param();
    graph = Star(n);
  } else if (name == "hypercube") {
    no_param();
    if (!IsPowerOfTwo(n)) {
      Fail(spec, "expected a power of two workers, got " + std::to_string(n));
    }
    graph = Hypercube(n);
  } else if (name == "exponential") {
    no_param();
    graph = Exponential(n);
  } else if (name == "random-regular") {
    if (!has_param) Fail(spec, "expected random-regular:D with the degree D, e.g. random-regular:4");
    graph = RandomRegular(spec, n, ParsePositive(spec, param, "the degree D"), options.seed);
  } else if (name == "hierarchical") {
    if (has_param) {
      const int g = ParsePositive(spec, param, "the number of groups G");
      if (g > n) Fail(spec, "expected at most one group per worker (" + std::to_string(n) + ")");
      std::vector<int> groups(static_cast<std::size_t>(n));
      for (int i = 0; i < n; ++i) {
        groups[static_cast<std::size_t>(i)] = static_cast<int>(static_cast<std::int64_t>(i) * g / n);
      }
      graph = Hierarchical(spec, n, groups);
    } else {
      graph = Hierarchical(spec, n, options.groups);
    }
  } else if (name == "file") {
    if (param.empty()) Fail(spec, "expected file:PATH");
    graph = internal::ReadEdgeListFile(std::string(param), n);
  } else {
    throw Error(ErrorCode::kBadConfig,
                "unknown topology '" + std::string(spec) + "': expected one of " + std::string(kSpecs));
  }
  std::vector<MixingRound> rounds;
  rounds.push_back(Weigh(graph, options.weights));
  return Topology(std::string(spec), n, std::move(rounds),
                  graph.weights.empty() ? std::string(ToString(options.weights)) : "given");
}

}  // namespace corral
