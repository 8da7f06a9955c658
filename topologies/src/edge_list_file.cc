// The `file:PATH` topology: an edge list, one "i j [w]" per line.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <corral/error.h>

#include "topologies/src/graph.h"

namespace corral::internal {
namespace {

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> fields;
  constexpr std::string_view kSpace = " \t\r\v\f";
  std::size_t at = line.find_first_not_of(kSpace);
  while (at != std::string_view::npos) {
    const std::size_t end = line.find_first_of(kSpace, at);
    fields.push_back(line.substr(at, end == std::string_view::npos ? end : end - at));
    at = end == std::string_view::npos ? end : line.find_first_not_of(kSpace, end);
  }
  return fields;
}

}  // namespace

Graph ReadEdgeListFile(const std::string& path, int workers) {
  std::ifstream in(path);
  if (!in) {
    throw Error(ErrorCode::kIo, path + ": cannot open for reading: " + std::strerror(errno));
  }
  Graph graph{.workers = workers};
  std::map<std::pair<int, int>, std::size_t> first_line;  // edge -> the line that gave it
  std::size_t weighted_line = 0, unweighted_line = 0;     // the first line with / without a weight
  std::string text;
  for (std::size_t line_no = 1; std::getline(in, text); ++line_no) {
    const std::string where = path + ":" + std::to_string(line_no) + ": ";
    auto fail = [&](const std::string& what) { throw Error(ErrorCode::kBadInput, where + what); };
    std::string_view line = text;
    line = line.substr(0, line.find('#'));
    const std::vector<std::string_view> fields = Fields(line);
    if (fields.empty()) continue;
    if (fields.size() > 3 || fields.size() < 2) {
      fail("expected 'i j' or 'i j w' (two worker ids and an optional weight), got " +
           std::to_string(fields.size()) + " field" + (fields.size() == 1 ? "" : "s"));
    }
    int ids[2];
    for (int k = 0; k < 2; ++k) {
      const std::string_view f = fields[static_cast<std::size_t>(k)];
      const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), ids[k]);
      if (ec != std::errc() || end != f.data() + f.size() || ids[k] < 0 || ids[k] >= workers) {
        fail("column " + std::to_string(k + 1) + ": expected a worker id in 0.." +
             std::to_string(workers - 1) + ", got '" + std::string(f) + "'");
      }
    }
    if (ids[0] == ids[1]) {
      fail("'" + std::to_string(ids[0]) + " " + std::to_string(ids[1]) +
           "' is a self-loop: expected two different workers (the self weight is 1 - row sum)");
    }
    const std::pair<int, int> edge{std::min(ids[0], ids[1]), std::max(ids[0], ids[1])};
    if (const auto [it, fresh] = first_line.emplace(edge, line_no); !fresh) {
      fail("edge " + std::to_string(edge.first) + "-" + std::to_string(edge.second) +
           " is given again (first on line " + std::to_string(it->second) + ")");
    }
    if (fields.size() == 3) {
      double w = 0.0;
      const std::string_view f = fields[2];
      const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), w);
      if (ec != std::errc() || end != f.data() + f.size() || !std::isfinite(w) || w <= 0.0 || w > 1.0) {
        fail("column 3: expected a weight in (0, 1], got '" + std::string(f) + "'");
      }
      if (unweighted_line != 0) {
        fail("has a weight but line " + std::to_string(unweighted_line) +
             " has none: expected a weight on every line or on none");
      }
      if (weighted_line == 0) weighted_line = line_no;
      graph.weights.push_back(w);
    } else {
      if (weighted_line != 0) {
        fail("has no weight but line " + std::to_string(weighted_line) +
             " has one: expected a weight on every line or on none");
      }
      if (unweighted_line == 0) unweighted_line = line_no;
    }
    graph.edges.push_back(edge);
  }
  if (in.bad()) throw Error(ErrorCode::kIo, path + ": read failed: " + std::strerror(errno));
  if (graph.edges.empty()) {
    throw Error(ErrorCode::kBadInput, path + ": no edges: expected lines 'i j' or 'i j w'");
  }
  return graph;
}

}  // namespace corral::internal
