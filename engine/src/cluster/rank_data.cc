#include "engine/src/cluster/rank_data.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <exception>
#include <functional>
#include <string_view>
#include <vector>

#include <corral/error.h>
#include <corral/shards.h>

#include "data/src/cache_rows.h"
#include "engine/src/cluster/collectives.h"

namespace corral::internal {
namespace {

// Runs `step` on every rank and agrees on its outcome: when it threw on some rank, every rank
// throws (its own error where it failed), so none goes on into a collective the failed rank
// never reaches.
void Agreed(Cluster& cluster, const std::string& path, const std::function<void()>& step) {
  std::exception_ptr error;
  try {
    step();
  } catch (...) {
    error = std::current_exception();
  }
  if (!AnyAcross(cluster, error != nullptr)) return;
  if (error) std::rethrow_exception(error);
  throw Error(ErrorCode::kBadInput, "another rank could not read " + path);
}

// A file read by position (pread), a bounded block at a time: a rank's memory holds its rows
// and one block of text, never its whole range of text nor the file.
class File {
 public:
  explicit File(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw Error(ErrorCode::kIo, path + ": cannot open the file");
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      ::close(fd_);
      throw Error(ErrorCode::kIo, path + ": cannot read the file's size");
    }
    size_ = static_cast<std::size_t>(st.st_size);
  }
  ~File() { ::close(fd_); }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  std::size_t size() const { return size_; }

  // Bytes [at, at + n) (fewer at the end of the file) into `into`.
  void Read(std::size_t at, std::size_t n, std::string& into) const {
    n = at < size_ ? std::min(n, size_ - at) : 0;
    into.resize(n);
    for (std::size_t done = 0; done < n;) {
      const ssize_t got = ::pread(fd_, into.data() + done, n - done, static_cast<off_t>(at + done));
      if (got <= 0) throw Error(ErrorCode::kIo, path_ + ": cannot read the file");
      done += static_cast<std::size_t>(got);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::size_t size_ = 0;
};

constexpr std::size_t kBlock = std::size_t{4} << 20;   // bytes read per scan step

// Whether a LIBSVM line is a row, decided on its first byte that is not blank: a token before
// any '#' (the reader's rule, data/src/libsvm.cc: blank and comment-only lines are not rows).
struct LineState {
  bool decided = false;
  bool data = false;
  // Feeds one byte; true at a line end that closes a row.
  bool Feed(char c) {
    if (c == '\n') {
      const bool row = data;
      decided = data = false;
      return row;
    }
    if (!decided && c != ' ' && c != '\t' && c != '\r') {
      decided = true;
      data = c != '#';
    }
    return false;
  }
};

// Where chunk c of `chunks` starts: the first line start at or after c * size / chunks.
std::size_t ChunkStart(const File& file, std::size_t c, std::size_t chunks, std::string& buffer) {
  std::size_t at = ContiguousShardBegin(file.size(), chunks, c);
  if (at == 0 || at >= file.size()) return at;
  for (std::size_t from = at - 1; from < file.size(); from += buffer.size()) {
    file.Read(from, 64 * 1024, buffer);
    const std::size_t nl = buffer.find('\n');
    if (nl != std::string::npos) return from + nl + 1;
  }
  return file.size();
}

// Scans [begin, end) from a line start, on line `line`: stops after the line end that closes
// the `rows`-th row (rows = -1: never). Returns where it stopped, its line, and the rows and
// line ends passed; a last line without a line end counts as a row when it is one.
struct Scan {
  std::size_t at = 0;
  std::uint64_t line = 1;
  std::uint64_t rows = 0;
  std::uint64_t ends = 0;
};
Scan ScanRows(const File& file, std::size_t begin, std::size_t end, std::uint64_t line,
              std::uint64_t rows, std::string& buffer) {
  Scan scan{.at = begin, .line = line};
  LineState state;
  while (scan.at < end && scan.rows < rows) {
    file.Read(scan.at, std::min(kBlock, end - scan.at), buffer);
    std::size_t k = 0;
    for (; k < buffer.size() && scan.rows < rows; ++k) {
      if (state.Feed(buffer[k])) ++scan.rows;
      if (buffer[k] == '\n') {
        ++scan.ends;
        ++scan.line;
      }
    }
    scan.at += k;
  }
  if (scan.at == end && end == file.size() && state.data && scan.rows < rows) ++scan.rows;
  return scan;
}

// Parses the rows in [begin, end) (whole lines, the first on line `line`) piece by piece, about
// `piece_bytes` of text at a time (whole lines), into one set of this rank's rows.
Dataset ParseRange(const File& file, const std::string& path, std::size_t begin, std::size_t end,
                   std::uint64_t line, const LoadOptions& options, std::size_t piece_bytes) {
  std::vector<std::uint64_t> row_ptr{0};
  std::vector<std::uint32_t> index;
  std::vector<float> value, label;
  std::size_t features = options.num_features;
  std::string text;
  LoadOptions piece = options;
  piece.format = DataFormat::kLibsvm;
  for (std::size_t at = begin; at < end;) {
    file.Read(at, std::min(piece_bytes, end - at), text);
    if (at + text.size() < end) {
      const std::size_t nl = text.rfind('\n');
      if (nl == std::string::npos) {  // a line longer than a piece: read on to its end
        std::string more;
        std::size_t next = at + text.size();
        while (text.back() != '\n' && next < end) {
          file.Read(next, std::min(kBlock, end - next), more);
          const std::size_t cut = more.find('\n');
          text.append(more, 0, cut == std::string::npos ? more.size() : cut + 1);
          next = at + text.size();
        }
      } else {
        text.resize(nl + 1);
      }
    }
    LineState state;
    std::uint64_t rows = 0, ends = 0;
    for (const char c : text) {
      if (state.Feed(c)) ++rows;
      if (c == '\n') ++ends;
    }
    if (state.data) ++rows;  // the file's last line, without a line end
    if (rows > 0) {
      piece.first_line = line;
      const Dataset part = ParseDataset(text, path, piece);
      features = std::max(features, part.num_features());
      const std::uint64_t base = row_ptr.back();
      const std::span<const std::uint64_t> offsets = part.row_ptr();
      for (std::size_t r = 1; r <= part.rows(); ++r) {
        row_ptr.push_back(base + offsets[r] - offsets[0]);
      }
      index.insert(index.end(), part.index().begin(), part.index().end());
      value.insert(value.end(), part.value().begin(), part.value().end());
      label.insert(label.end(), part.labels().begin(), part.labels().end());
    }
    line += ends;
    at += text.size();
  }
  return Dataset(std::move(row_ptr), std::move(index), std::move(value), std::move(label), features,
                 path);
}

RankRows ReadLibsvmPart(const std::string& path, const LoadOptions& options, Cluster& cluster,
                        std::size_t piece_bytes) {
  std::optional<File> file;
  std::array<std::uint64_t, 2> mine{};
  const auto ranks = static_cast<std::size_t>(cluster.ranks());
  const auto rank = static_cast<std::size_t>(cluster.rank());
  std::string buffer;
  Agreed(cluster, path, [&] {
    file.emplace(path);
    const std::size_t begin = ChunkStart(*file, rank, ranks, buffer);
    const std::size_t end = ChunkStart(*file, rank + 1, ranks, buffer);
    const Scan scan = ScanRows(*file, begin, end, 1, ~std::uint64_t{0}, buffer);
    mine = {scan.rows, scan.ends};
  });
  // Every chunk's rows and line ends, in rank (= file) order.
  const std::vector<std::uint64_t> counts =
      GatherAll(cluster, std::span<const std::uint64_t>(mine));
  std::uint64_t total = 0;
  for (std::size_t c = 0; c < ranks; ++c) total += counts[2 * c];
  const RankPart part = RankPartOf(total, cluster.rank(), cluster.ranks());
  // Row k's line start (and line): from the start of the chunk holding it, past the rows
  // before it there. k = total: the end of the file.
  const auto locate = [&](std::uint64_t k) -> std::pair<std::size_t, std::uint64_t> {
    std::uint64_t rows_before = 0, line = 1;
    for (std::size_t c = 0; c < ranks; ++c) {
      if (k < rows_before + counts[2 * c]) {
        const Scan scan = ScanRows(*file, ChunkStart(*file, c, ranks, buffer), file->size(), line,
                                   k - rows_before, buffer);
        return {scan.at, scan.line};
      }
      rows_before += counts[2 * c];
      line += counts[2 * c + 1];
    }
    return {file->size(), line};
  };
  Dataset rows;
  Agreed(cluster, path, [&] {
    if (part.count == 0) {
      rows = Dataset({0}, {}, {}, {}, options.num_features, path);
      return;
    }
    const auto [begin, line] = locate(part.first);
    const std::size_t end = locate(part.first + part.count).first;
    rows = ParseRange(*file, path, begin, end, line, options, piece_bytes);
    if (rows.rows() != part.count) {
      throw Error(ErrorCode::kBadInput,
                  path + ": rank " + std::to_string(rank) + " expected " +
                      std::to_string(part.count) + " rows from line " + std::to_string(line) +
                      ", read " + std::to_string(rows.rows()) +
                      " (does every rank read the same file?)");
    }
  });
  const std::size_t features = MaxAcross(cluster, rows.num_features());
  if (rows.num_features() < features) rows = std::move(rows).WithNumFeatures(features);
  return {.mine = std::move(rows), .part = part};
}

}  // namespace

std::optional<RankRows> LoadRankRows(const std::string& path, const LoadOptions& options,
                                     Cluster& cluster, std::size_t piece_bytes) {
  if (piece_bytes == 0) throw Error(ErrorCode::kBadConfig, "LoadRankRows: piece_bytes must be > 0");
  DataFormat format = options.format;
  bool gzip = false;
  Agreed(cluster, path, [&] {
    if (format == DataFormat::kAuto) format = DetectFormat(path);
    std::string head;
    File(path).Read(0, 2, head);
    gzip = head.size() == 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
           static_cast<unsigned char>(head[1]) == 0x8b;
  });
  // Every rank decides alike (the same file): rank 0's word.
  const bool cut = !gzip && (format == DataFormat::kCache || format == DataFormat::kLibsvm);
  const int by_range = FromRankZero(cluster, cut ? static_cast<int>(format) : -1);
  if (by_range < 0) return std::nullopt;
  if (static_cast<DataFormat>(by_range) == DataFormat::kLibsvm) {
    return ReadLibsvmPart(path, options, cluster, piece_bytes);
  }
  // The cache: checked whole, its pages released as they are hashed, and viewed at this
  // rank's rows (data/src/cache_rows.h): the rank keeps its rows' pages, not the file's.
  std::optional<detail::CacheRows> read;
  Agreed(cluster, path, [&] {
    LoadOptions cache = options;
    cache.format = DataFormat::kCache;
    read.emplace(detail::LoadCacheRows(path, cache, [&](std::size_t rows) {
      const RankPart part = RankPartOf(rows, cluster.rank(), cluster.ranks());
      return detail::RowRange{.first = part.first, .count = part.count};
    }));
  });
  const std::size_t total = FromRankZero(cluster, read->total);
  Agreed(cluster, path, [&] {
    if (read->total != total) {
      throw Error(ErrorCode::kBadInput, path + ": " + std::to_string(read->total) +
                                            " rows on rank " + std::to_string(cluster.rank()) +
                                            ", " + std::to_string(total) + " on rank 0");
    }
  });
  return RankRows{.mine = std::move(read->rows),
                  .part = RankPartOf(total, cluster.rank(), cluster.ranks())};
}

}  // namespace corral::internal
