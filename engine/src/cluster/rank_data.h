// Reading a data file by rank: each rank of a run across ranks reads only the rows its
// workers train on (RankPartOf), so no rank holds the whole set (docs/algorithms.md, "Data by
// rank"). The binary cache is mapped and viewed at the rank's row range; LIBSVM text is cut at
// line boundaries into one byte chunk per rank, the ranks count their chunks' rows, gather the
// counts, and each rank parses exactly the lines of its own rows. Other formats (IDX, CSV,
// ratings, gzip-compressed text) cannot be cut by range: the caller reads them whole.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include <corral/cluster.h>
#include <corral/dataset.h>
#include <corral/load.h>
#include <corral/train.h>

namespace corral::internal {

struct RankRows {
  Dataset mine;   // this rank's rows, with the whole set's dimension
  RankPart part;  // which rows of the whole set they are
};

// Collective: every rank calls it with the same path (or a copy of the same file). nullopt on
// every rank when the file's format is not read by range (the caller then loads it whole). An
// error on any rank (a missing file, a bad line) throws on every rank: that rank's own error
// there, kBadInput "another rank could not read PATH" on the others, so no rank waits for one
// that failed. options.num_features 0: the largest index of any rank's rows. LIBSVM text is
// parsed `piece_bytes` at a time (whole lines; tests make it tiny), so a rank holds its rows and
// one piece of text, never its whole range of text.
inline constexpr std::size_t kRankPieceBytes = std::size_t{4} << 20;
std::optional<RankRows> LoadRankRows(const std::string& path, const LoadOptions& options,
                                     Cluster& cluster, std::size_t piece_bytes = kRankPieceBytes);

}  // namespace corral::internal
