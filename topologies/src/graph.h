// Graph: the undirected simple graph a static topology is built from, before it is weighted.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace corral::internal {

struct Graph {
  int workers = 0;
  std::vector<std::pair<int, int>> edges;  // u < v, each pair once
  std::vector<double> weights;             // empty (weigh by rule) or one per edge (given)
};

// Reads an edge-list file: one edge "i j" or "i j w" per line, 0-based ids below `workers`,
// '#' to the end of a line is a comment. Throws kIo if it cannot be read and kBadInput naming
// path:line and what was expected for a malformed, out-of-range, self-loop or repeated edge,
// or for weights given on some lines only.
Graph ReadEdgeListFile(const std::string& path, int workers);

}  // namespace corral::internal
