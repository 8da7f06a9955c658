// Topology: the sparse rows and columns of each round's mixing matrix.
#include <corral/topology.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include <corral/error.h>

namespace corral {
namespace {

[[noreturn]] void Fail(const std::string& spec, const std::string& what) {
  throw Error(ErrorCode::kBadConfig, "topology '" + spec + "': " + what);
}

// Groups the entries by `key` (row or column) into offsets + neighbours, each group sorted by
// the other index so that Neighbours() lists workers in increasing order.
void Compress(int workers, const std::vector<MixingEntry>& entries, bool by_row,
              std::vector<std::size_t>& begin, std::vector<Neighbour>& out) {
  begin.assign(static_cast<std::size_t>(workers) + 1, 0);
  for (const MixingEntry& e : entries) ++begin[static_cast<std::size_t>(by_row ? e.row : e.col) + 1];
  for (std::size_t i = 1; i < begin.size(); ++i) begin[i] += begin[i - 1];
  out.resize(entries.size());
  std::vector<std::size_t> next(begin.begin(), begin.end() - 1);
  for (const MixingEntry& e : entries) {
    const int key = by_row ? e.row : e.col;
    out[next[static_cast<std::size_t>(key)]++] = {by_row ? e.col : e.row, e.weight};
  }
  for (std::size_t i = 0; i + 1 < begin.size(); ++i) {
    std::sort(out.begin() + static_cast<std::ptrdiff_t>(begin[i]),
              out.begin() + static_cast<std::ptrdiff_t>(begin[i + 1]),
              [](const Neighbour& a, const Neighbour& b) { return a.worker < b.worker; });
  }
}

}  // namespace

Topology::Topology(std::string spec, int workers, std::vector<MixingRound> rounds,
                   std::string weights)
    : spec_(std::move(spec)), weights_(std::move(weights)), workers_(workers) {
  if (workers < 1) Fail(spec_, "needs at least 1 worker, got " + std::to_string(workers));
  if (rounds.empty()) Fail(spec_, "needs at least one round");
  std::set<std::pair<int, int>> links;  // undirected, over the whole period
  for (MixingRound& r : rounds) {
    if (r.self.size() != static_cast<std::size_t>(workers)) {
      Fail(spec_, "a round has " + std::to_string(r.self.size()) + " self weights, expected " +
                      std::to_string(workers));
    }
    std::erase_if(r.entries, [](const MixingEntry& e) { return e.weight == 0.0; });
    std::set<std::pair<int, int>> seen;
    for (const MixingEntry& e : r.entries) {
      const std::string where = "entry (" + std::to_string(e.row) + ", " + std::to_string(e.col) + ")";
      if (e.row < 0 || e.row >= workers || e.col < 0 || e.col >= workers) {
        Fail(spec_, where + " is out of range: expected worker ids 0.." + std::to_string(workers - 1));
      }
      if (e.row == e.col) Fail(spec_, where + " is on the diagonal: self weights go in `self`");
      if (!seen.emplace(e.row, e.col).second) Fail(spec_, where + " is given twice");
      links.emplace(std::min(e.row, e.col), std::max(e.row, e.col));
    }
    Round round;
    Compress(workers, r.entries, /*by_row=*/true, round.row_begin, round.rows);
    Compress(workers, r.entries, /*by_row=*/false, round.col_begin, round.cols);
    round.self = std::move(r.self);
    rounds_.push_back(std::move(round));
  }
  edges_ = links.size();
}

const Topology::Round& Topology::At(int worker, std::uint64_t round) const {
  if (worker < 0 || worker >= workers_) {
    throw Error(ErrorCode::kBadConfig, "topology '" + spec_ + "': worker " + std::to_string(worker) +
                                           " is out of range: expected 0.." +
                                           std::to_string(workers_ - 1));
  }
  return rounds_[round % rounds_.size()];
}

std::span<const Neighbour> Topology::Neighbours(int worker, std::uint64_t round) const {
  const Round& r = At(worker, round);
  const auto i = static_cast<std::size_t>(worker);
  return std::span<const Neighbour>(r.rows).subspan(r.row_begin[i], r.row_begin[i + 1] - r.row_begin[i]);
}

std::span<const Neighbour> Topology::Recipients(int worker, std::uint64_t round) const {
  const Round& r = At(worker, round);
  const auto i = static_cast<std::size_t>(worker);
  return std::span<const Neighbour>(r.cols).subspan(r.col_begin[i], r.col_begin[i + 1] - r.col_begin[i]);
}

double Topology::SelfWeight(int worker, std::uint64_t round) const {
  return At(worker, round).self[static_cast<std::size_t>(worker)];
}

double Topology::Weight(int i, int j, std::uint64_t round) const {
  if (i == j) return SelfWeight(i, round);
  At(j, round);  // range check
  const std::span<const Neighbour> row = Neighbours(i, round);
  const auto it = std::lower_bound(row.begin(), row.end(), j,
                                   [](const Neighbour& n, int w) { return n.worker < w; });
  return it != row.end() && it->worker == j ? it->weight : 0.0;
}

}  // namespace corral
