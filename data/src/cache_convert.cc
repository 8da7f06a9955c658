// ConvertToCache: a text file to a cache in one streaming pass (see <corral/cache.h>).
//
// The cache's sections come one after the other, and where each one starts depends on the
// sizes of those before it, which are known only at the end of the file. So each piece's rows
// are appended to one temporary file per section, and the cache is assembled from them once
// the header is known, in chunks of kDigestBlock: memory holds a piece and a chunk, never
// the data set.
#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <corral/cache.h>
#include <corral/load.h>

#include "data/src/cache_format.h"
#include "data/src/durable_file.h"

namespace corral {
namespace {

namespace fmt = detail::cache;

// One section's bytes, appended to a temporary file beside the target and removed with it
// (a DurableFile never committed).
class SectionFile {
 public:
  explicit SectionFile(const std::string& target) : file_(target, "cache") {}

  template <typename T>
  void Append(std::span<const T> xs) {
    file_.Write({reinterpret_cast<const char*>(xs.data()), xs.size_bytes()});
    bytes_ += xs.size_bytes();
  }
  std::uint64_t bytes() const { return bytes_; }

  // Appends the section to `out` a buffer at a time.
  void CopyTo(fmt::CacheWriter& out, fmt::Section s, std::vector<char>& buffer) const {
    for (std::uint64_t at = 0; at < bytes_; at += buffer.size()) {
      const std::span<char> chunk(buffer.data(),
                                  std::min<std::uint64_t>(buffer.size(), bytes_ - at));
      file_.ReadAt(at, chunk);
      out.Append(s, chunk);
    }
  }

 private:
  detail::DurableFile file_;
  std::uint64_t bytes_ = 0;
};

}  // namespace

CacheSummary ConvertToCache(const std::string& path, const std::string& cache_path,
                            const LoadOptions& options, std::size_t piece_bytes) {
  LoadOptions resolved = options;
  if (resolved.format == DataFormat::kAuto) resolved.format = DetectFormat(path);
  const auto whole = [&] {
    const Dataset d = LoadDataset(path, resolved);
    WriteCache(d, cache_path);
    return CacheSummary{.rows = d.rows(), .num_features = d.num_features(), .nnz = d.nnz()};
  };
  // A ratings set's ids are numbered from the whole file; IDX and caches are read whole anyway.
  if (resolved.format != DataFormat::kLibsvm && resolved.format != DataFormat::kCsv) {
    return whole();
  }
  SectionFile row_ptr(cache_path), index(cache_path), value(cache_path), label(cache_path);
  fmt::Contents contents;
  std::string name;
  std::vector<std::uint64_t> offsets;  // a piece's row offsets, moved to the file's
  ForEachPiece(path, resolved, piece_bytes, [&](const Dataset& piece, std::size_t) {
    if (contents.rows == 0) {
      name = piece.name().substr(0, fmt::kMaxNameBytes);
      contents.dense = piece.is_dense();
      if (!contents.dense) row_ptr.Append(std::span<const std::uint64_t>(&contents.nnz, 1));
    }
    // LIBSVM: the file's dimension is its largest; CSV: every piece has the file's own.
    contents.features = std::max<std::uint64_t>(contents.features, piece.num_features());
    if (!contents.dense) {
      const std::span<const std::uint64_t> ptr = piece.row_ptr();
      offsets.resize(ptr.size() - 1);
      for (std::size_t r = 1; r < ptr.size(); ++r) offsets[r - 1] = contents.nnz + ptr[r] - ptr[0];
      row_ptr.Append(std::span<const std::uint64_t>(offsets));
      index.Append(piece.index());
    }
    value.Append(piece.value());
    label.Append(piece.labels());
    contents.rows += piece.rows();
    contents.nnz += piece.nnz();
  });
  if (contents.rows == 0) return whole();  // throws LoadDataset's error for a file without rows
  contents.section_bytes[fmt::kRowPtr] = row_ptr.bytes();
  contents.section_bytes[fmt::kIndex] = index.bytes();
  contents.section_bytes[fmt::kValue] = value.bytes();
  contents.section_bytes[fmt::kLabel] = label.bytes();
  contents.section_bytes[fmt::kName] = name.size();
  fmt::CacheWriter out(cache_path, fmt::MakeHeader(contents));
  std::vector<char> buffer(fmt::kDigestBlock);
  row_ptr.CopyTo(out, fmt::kRowPtr, buffer);
  index.CopyTo(out, fmt::kIndex, buffer);
  value.CopyTo(out, fmt::kValue, buffer);
  label.CopyTo(out, fmt::kLabel, buffer);
  out.Append(fmt::kName, name);
  out.Commit();
  return {.rows = contents.rows, .num_features = contents.features, .nnz = contents.nnz};
}

}  // namespace corral
