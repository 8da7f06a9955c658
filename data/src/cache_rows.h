// Reading a range of a cache's rows (internal): what a rank of a run across ranks reads
// (engine/src/cluster/rank_data.cc), so that its memory holds its rows' pages, not the file's.
//
// The whole file is still checked (size, header, the checksum over every block): each block is
// hashed from the mapping and its pages are then released from this process (madvise
// MADV_DONTNEED; they stay in the page cache), so the check passes over the file without
// keeping it. Only the range's rows are then validated (offsets, indices, finite values) and
// viewed; they are mapped again on their first touch. So the process's peak resident memory
// holds the range and a block per hashing thread, not the file (plus, where the kernel maps a
// page cache's large folio whole, up to a folio past the range's ends: ~1-2 MB measured on
// Linux 6.18; docs/algorithms.md, "Data by rank").
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include <corral/dataset.h>
#include <corral/load.h>

namespace corral::detail {

struct RowRange {
  std::size_t first = 0;
  std::size_t count = 0;
};

struct CacheRows {
  Dataset rows;           // rows [first, first + count), named by the path
  std::size_t total = 0;  // the cache's row count
};

// Maps and checks the cache at `path` as ReadCache does, then views the rows `pick` chooses
// from the cache's row count. Throws as ReadCache does (kBadInput naming the file and the row:
// an offset or a value's by its row in the file, an index's by its row in the range, the
// range's first row named); kBadConfig when `pick` returns a range beyond the rows.
CacheRows ReadCacheRows(const std::string& path, const std::function<RowRange(std::size_t)>& pick,
                        int threads = 0);

// ReadCacheRows, then what LoadDataset does with a cache (options.num_features widens the
// dimension or refuses a narrower one; a ratings mapping renumbers the ids).
CacheRows LoadCacheRows(const std::string& path, const LoadOptions& options,
                        const std::function<RowRange(std::size_t)>& pick);

}  // namespace corral::detail
