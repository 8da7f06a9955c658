#include "engine/src/cluster/rank_data.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <exception>
#include <functional>
#include <string_view>
#include <vector>

#include <corral/error.h>
#include <corral/shards.h>

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

// A read-only mapping of a whole file (empty files map nothing).
class Mapping {
 public:
  explicit Mapping(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(ErrorCode::kIo, path + ": cannot open the file");
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      ::close(fd);
      throw Error(ErrorCode::kIo, path + ": cannot read the file's size");
    }
    size_ = static_cast<std::size_t>(st.st_size);
    if (size_ > 0) {
      void* at = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (at == MAP_FAILED) {
        ::close(fd);
        throw Error(ErrorCode::kIo, path + ": cannot map the file");
      }
      data_ = static_cast<const char*>(at);
    }
    ::close(fd);
  }
  ~Mapping() {
    if (data_ != nullptr) ::munmap(const_cast<char*>(data_), size_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  std::string_view text() const { return {data_, size_}; }

 private:
  const char* data_ = nullptr;
  std::size_t size_ = 0;
};

// A LIBSVM data line holds a token before any '#': not blank, not a comment alone (the
// reader's rule, data/src/libsvm.cc).
bool IsDataLine(std::string_view line) {
  for (const char c : line) {
    if (c == ' ' || c == '\t' || c == '\r') continue;
    return c != '#';
  }
  return false;
}

// Where chunk c of `chunks` starts: the first line start at or after c * size / chunks.
std::size_t ChunkStart(std::string_view text, std::size_t c, std::size_t chunks) {
  std::size_t at = ContiguousShardBegin(text.size(), chunks, c);
  if (at == 0 || at >= text.size()) return at;
  if (text[at - 1] == '\n') return at;
  const std::size_t nl = text.find('\n', at);
  return nl == std::string_view::npos ? text.size() : nl + 1;
}

// Data lines and line ends in text[begin, end).
std::array<std::uint64_t, 2> CountLines(std::string_view text, std::size_t begin, std::size_t end) {
  std::array<std::uint64_t, 2> counts{0, 0};
  while (begin < end) {
    std::size_t nl = text.find('\n', begin);
    if (nl == std::string_view::npos || nl >= end) nl = end;
    if (IsDataLine(text.substr(begin, nl - begin))) ++counts[0];
    if (nl < end) ++counts[1];
    begin = nl + 1;
  }
  return counts;
}

// From `begin` (a line start, on line number `line`), past `rows` data lines: the position
// after the last one's line end, and its line number.
std::pair<std::size_t, std::uint64_t> SkipRows(std::string_view text, std::size_t begin,
                                               std::uint64_t line, std::uint64_t rows) {
  while (rows > 0 && begin < text.size()) {
    std::size_t nl = text.find('\n', begin);
    if (nl == std::string_view::npos) nl = text.size();
    if (IsDataLine(text.substr(begin, nl - begin))) --rows;
    begin = nl + 1;
    ++line;
  }
  return {std::min(begin, text.size()), line};
}

RankRows ReadLibsvmPart(const std::string& path, const LoadOptions& options, Cluster& cluster) {
  std::optional<Mapping> file;
  std::array<std::uint64_t, 2> mine{};
  const auto ranks = static_cast<std::size_t>(cluster.ranks());
  const auto rank = static_cast<std::size_t>(cluster.rank());
  Agreed(cluster, path, [&] {
    file.emplace(path);
    const std::string_view text = file->text();
    mine = CountLines(text, ChunkStart(text, rank, ranks), ChunkStart(text, rank + 1, ranks));
  });
  const std::string_view text = file->text();
  // Every chunk's data lines and line ends, in rank (= file) order.
  const std::vector<std::uint64_t> counts =
      GatherAll(cluster, std::span<const std::uint64_t>(mine));
  std::uint64_t total = 0;
  for (std::size_t c = 0; c < ranks; ++c) total += counts[2 * c];
  const RankPart part = RankPartOf(total, cluster.rank(), cluster.ranks());
  // Data row k's position: from the start of the chunk holding it, past the rows before it.
  const auto locate = [&](std::uint64_t k) -> std::pair<std::size_t, std::uint64_t> {
    std::uint64_t rows_before = 0, line = 1;
    for (std::size_t c = 0; c < ranks; ++c) {
      if (k < rows_before + counts[2 * c] || c + 1 == ranks) {
        return SkipRows(text, ChunkStart(text, c, ranks), line, k - rows_before);
      }
      rows_before += counts[2 * c];
      line += counts[2 * c + 1];
    }
    return {text.size(), line};
  };
  Dataset rows;
  Agreed(cluster, path, [&] {
    if (part.count == 0) {
      rows = Dataset({0}, {}, {}, {}, options.num_features, path);
      return;
    }
    const auto [begin, line] = locate(part.first);
    const std::size_t end = locate(part.first + part.count).first;
    LoadOptions piece = options;
    piece.format = DataFormat::kLibsvm;
    piece.first_line = line;
    rows = ParseDataset(text.substr(begin, end - begin), path, piece);
    if (rows.rows() != part.count) {
      throw Error(ErrorCode::kBadInput,
                  path + ": rank " + std::to_string(rank) + " expected " +
                      std::to_string(part.count) + " rows from line " + std::to_string(line) +
                      ", read " +
                      std::to_string(rows.rows()) + " (does every rank read the same file?)");
    }
  });
  const std::size_t features = MaxAcross(cluster, rows.num_features());
  if (rows.num_features() < features) rows = std::move(rows).WithNumFeatures(features);
  return {.mine = std::move(rows), .part = part};
}

}  // namespace

std::optional<RankRows> LoadRankRows(const std::string& path, const LoadOptions& options,
                                     Cluster& cluster) {
  DataFormat format = options.format;
  bool gzip = false;
  Agreed(cluster, path, [&] {
    if (format == DataFormat::kAuto) format = DetectFormat(path);
    const Mapping file(path);
    gzip = file.text().size() >= 2 && static_cast<unsigned char>(file.text()[0]) == 0x1f &&
           static_cast<unsigned char>(file.text()[1]) == 0x8b;
  });
  // Every rank decides alike (the same file): rank 0's word.
  const bool cut = !gzip && (format == DataFormat::kCache || format == DataFormat::kLibsvm);
  const int by_range = FromRankZero(cluster, cut ? static_cast<int>(format) : -1);
  if (by_range < 0) return std::nullopt;
  if (static_cast<DataFormat>(by_range) == DataFormat::kLibsvm) {
    return ReadLibsvmPart(path, options, cluster);
  }
  // The cache: mapped (the file's pages, not a copy) and viewed at this rank's rows.
  std::optional<Dataset> all;
  Agreed(cluster, path, [&] {
    LoadOptions cache = options;
    cache.format = DataFormat::kCache;
    all.emplace(LoadDataset(path, cache));
  });
  const std::size_t total = FromRankZero(cluster, all->rows());
  const RankPart part = RankPartOf(total, cluster.rank(), cluster.ranks());
  Agreed(cluster, path, [&] {
    if (all->rows() != total) {
      throw Error(ErrorCode::kBadInput, path + ": " + std::to_string(all->rows()) +
                                            " rows on rank " + std::to_string(cluster.rank()) +
                                            ", " + std::to_string(total) + " on rank 0");
    }
  });
  return RankRows{.mine = all->Rows(part.first, part.first + part.count), .part = part};
}

}  // namespace corral::internal
