// Corral's binary dataset cache: a file that loads by mmap, without parsing or copying.
//
//   corral::WriteCache(corral::LoadDataset("big.svm"), "big.cache");
//   corral::Dataset d = corral::LoadDataset("big.cache");   // or ReadCache
//
// Layout (little-endian): a 256-byte header (magic "CORRALDS", format version, byte-order
// mark, layout sparse/dense, flags, rows, features, nnz, file size, a 64-bit checksum (XXH64
// over the XXH64s of the file's 1 MiB blocks), a table of sections) followed by 64-byte aligned sections: row offsets, column indices, values, labels
// and, for ratings sets, the user and item id maps; the dataset's name is kept too. A dense
// set stores only values and labels.
//
// Nothing in a cache is trusted: ReadCache checks the size, magic, version, byte order and
// the checksum over the whole file, then the section table and every CSR invariant, and
// reports any failure as corral::Error (kBadInput) naming the file and what was wrong. A cache
// from another format version is rejected (re-create it with `corral data convert`).
// WriteCache and ConvertToCache write a temporary file beside the target and rename it into
// place, so a reader never sees half a cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <corral/dataset.h>
#include <corral/load.h>

namespace corral {

inline constexpr std::uint32_t kCacheVersion = 1;

// Throws corral::Error (kIo) when the file cannot be written.
void WriteCache(const Dataset& data, const std::string& path);

// What ConvertToCache wrote.
struct CacheSummary {
  std::size_t rows = 0;
  std::size_t num_features = 0;
  std::size_t nnz = 0;  // stored values
};

inline constexpr std::size_t kConvertPieceBytes = std::size_t{16} << 20;

// Writes the cache of the data file `path`, read as LoadDataset(path, options) reads it, to
// `cache_path`: the same bytes as WriteCache(LoadDataset(path, options), cache_path), but
// LIBSVM and CSV text is read in pieces of about `piece_bytes` (ForEachPiece), each section
// appended to a temporary file beside `cache_path`, and the cache assembled from those, so
// memory holds about a piece (its text and rows) whatever the file's size. Ratings (whose
// ids are numbered from the whole file), IDX and cache inputs are loaded whole. Throws as
// LoadDataset and WriteCache do (a bad line is named by its line in the file); after an error
// no cache and no temporary file is left (a target that existed is kept).
CacheSummary ConvertToCache(const std::string& path, const std::string& cache_path,
                            const LoadOptions& options = {},
                            std::size_t piece_bytes = kConvertPieceBytes);

// Maps and checks a cache; the Dataset keeps the mapping alive and is named by `path`.
// `threads` hash the file's blocks in parallel (0 = all hardware threads).
Dataset ReadCache(const std::string& path, int threads = 0);

}  // namespace corral
