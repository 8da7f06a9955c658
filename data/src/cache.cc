// The binary cache (see <corral/cache.h> for the layout and its guarantees).
#include <corral/cache.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include <corral/error.h>
#include <corral/limits.h>

#include "data/src/cache_seal.h"
#include "data/src/checksum.h"
#include "data/src/durable_file.h"
#include "data/src/mapped_buffer.h"
#include "data/src/text_pipeline.h"

namespace corral {
namespace {

constexpr char kMagic[8] = {'C', 'O', 'R', 'R', 'A', 'L', 'D', 'S'};
constexpr std::uint32_t kByteOrderMark = 0x01020304;
constexpr std::size_t kHeaderBytes = 256;
constexpr std::size_t kAlign = 64;
constexpr std::size_t kMaxNameBytes = 4096;

// Byte offsets of the header fields.
enum Field : std::size_t {
  kVersionAt = 8, kBomAt = 12, kLayoutAt = 16, kFlagsAt = 20, kRowsAt = 24, kFeaturesAt = 32,
  kNnzAt = 40, kFileSizeAt = 48, kChecksumAt = 56, kHeaderSizeAt = 64, kUsersAt = 72,
  kItemsAt = 80, kKnownUsersAt = 88, kKnownItemsAt = 96, kSectionsAt = 104,
};
enum Section : std::size_t {
  kRowPtr, kIndex, kValue, kLabel, kUserIds, kItemIds, kName, kNumSections = 8,
};
constexpr std::uint32_t kSparse = 0;
constexpr std::uint32_t kDense = 1;
constexpr std::uint32_t kRatingsFlag = 1;

template <typename T>
void Put(std::array<char, kHeaderBytes>& h, std::size_t at, T v) {
  std::memcpy(h.data() + at, &v, sizeof v);
}
template <typename T>
T Get(std::span<const char> h, std::size_t at) {
  T v;
  std::memcpy(&v, h.data() + at, sizeof v);
  return v;
}

std::string Hex(std::uint64_t v) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%016llx", static_cast<unsigned long long>(v));
  return buffer;
}

// The file's digest: XXH64 of the XXH64s of its 1 MiB blocks (the header, with the checksum
// field read as zero, is block 0), so the blocks hash in parallel and the result does not
// depend on the thread count.
std::uint64_t FileDigest(std::span<const char> file, int threads) {
  std::array<char, kHeaderBytes> header;
  std::memcpy(header.data(), file.data(), kHeaderBytes);
  Put<std::uint64_t>(header, kChecksumAt, 0);
  const std::span<const char> body = file.subspan(kHeaderBytes);
  constexpr std::size_t kBlock = 1 << 20;
  const std::size_t blocks = (body.size() + kBlock - 1) / kBlock;
  std::vector<std::uint64_t> digests(blocks + 1);
  digests[0] = detail::Xxh64(header);
  const auto hash_block = [&](std::size_t b) {
    digests[b + 1] =
        detail::Xxh64(body.subspan(b * kBlock, std::min(kBlock, body.size() - b * kBlock)));
  };
  const int workers = detail::ResolveThreads(threads);
  if (workers == 1 || blocks < 2) {
    for (std::size_t b = 0; b < blocks; ++b) hash_block(b);
  } else {
    oneapi::tbb::task_arena arena(workers);
    arena.execute([&] { oneapi::tbb::parallel_for(std::size_t{0}, blocks, hash_block); });
  }
  return detail::Xxh64({reinterpret_cast<const char*>(digests.data()), digests.size() * 8});
}

struct Piece {
  const char* data = nullptr;
  std::size_t bytes = 0;
};

template <typename T>
Piece PieceOf(std::span<const T> s) {
  return {reinterpret_cast<const char*>(s.data()), s.size_bytes()};
}

// Writes the sections through a DurableFile, padding between them, and checksums the file
// as written before committing it.
class AtomicWriter {
 public:
  explicit AtomicWriter(const std::string& path) : file_(path, "cache") {}

  void PadTo(std::size_t offset) {
    static constexpr char kZeros[kAlign] = {};
    while (written_ < offset) {
      const std::size_t n = std::min(kAlign, offset - written_);
      file_.Write({kZeros, n});
      written_ += n;
    }
  }
  void Append(Piece p) {
    file_.Write({p.data, p.bytes});
    written_ += p.bytes;
  }

  void Commit() {
    // The digest is taken from the file as written (mapped back from the page cache).
    const std::uint64_t digest = FileDigest(detail::MappedFile(file_.temp_path()).bytes(), 0);
    file_.WriteAt(kChecksumAt, {reinterpret_cast<const char*>(&digest), sizeof digest});
    file_.Commit();
  }

 private:
  detail::DurableFile file_;
  std::size_t written_ = 0;
};

// The readers refuse NaN and Inf, so a cache holds none unless it was forged or written from a
// caller's own arrays; a NaN label would train to a perfect accuracy, an Inf value look like
// a divergence. The fast pass finds nothing on every honest load; the slow one names the row.
void RequireFinite(const Dataset& d, const std::string& path) {
  const auto finite = [](std::span<const float> xs) {
    return std::all_of(xs.begin(), xs.end(), [](float x) { return std::isfinite(x); });
  };
  if (finite(d.labels()) && finite(d.value())) return;
  for (std::size_t r = 0; r < d.rows(); ++r) {
    const float y = d.Label(r);
    if (!std::isfinite(y)) {
      throw Error(ErrorCode::kBadInput, path + ": row " + std::to_string(r) + ": label " +
                                            std::to_string(y) + ", expected a finite number");
    }
    const SparseRow row = d.Row(r);
    for (std::size_t k = 0; k < row.nnz(); ++k) {
      if (!std::isfinite(row.value[k])) {
        throw Error(ErrorCode::kBadInput,
                    path + ": row " + std::to_string(r) + ": feature " +
                        std::to_string(row.index[k]) + " is " + std::to_string(row.value[k]) +
                        ", expected a finite number");
      }
    }
  }
}

std::size_t AlignUp(std::size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

}  // namespace

void detail::SealCache(std::span<char> file) {
  const std::uint64_t digest = FileDigest(file, 1);
  std::memcpy(file.data() + kChecksumAt, &digest, sizeof digest);
}

void WriteCache(const Dataset& data, const std::string& path) {
  std::array<Piece, kNumSections> pieces{};
  if (!data.is_dense()) {
    pieces[kRowPtr] = PieceOf(data.row_ptr());
    pieces[kIndex] = PieceOf(data.index());
  }
  pieces[kValue] = PieceOf(data.value());
  pieces[kLabel] = PieceOf(data.labels());
  const RatingsInfo* ratings = data.ratings();
  if (ratings != nullptr) {
    pieces[kUserIds] = PieceOf(std::span<const std::uint64_t>(ratings->user_ids));
    pieces[kItemIds] = PieceOf(std::span<const std::uint64_t>(ratings->item_ids));
  }
  const std::string name = data.name().substr(0, kMaxNameBytes);
  pieces[kName] = {name.data(), name.size()};

  std::array<char, kHeaderBytes> h{};
  std::memcpy(h.data(), kMagic, sizeof kMagic);
  Put<std::uint32_t>(h, kVersionAt, kCacheVersion);
  Put<std::uint32_t>(h, kBomAt, kByteOrderMark);
  Put<std::uint32_t>(h, kLayoutAt, data.is_dense() ? kDense : kSparse);
  Put<std::uint32_t>(h, kFlagsAt, ratings != nullptr ? kRatingsFlag : 0);
  Put<std::uint64_t>(h, kRowsAt, data.rows());
  Put<std::uint64_t>(h, kFeaturesAt, data.num_features());
  Put<std::uint64_t>(h, kNnzAt, data.nnz());
  Put<std::uint32_t>(h, kHeaderSizeAt, kHeaderBytes);
  if (ratings != nullptr) {
    Put<std::uint64_t>(h, kUsersAt, ratings->num_users);
    Put<std::uint64_t>(h, kItemsAt, ratings->num_items);
    Put<std::uint64_t>(h, kKnownUsersAt, ratings->known_users);
    Put<std::uint64_t>(h, kKnownItemsAt, ratings->known_items);
  }
  std::size_t offset = kHeaderBytes;
  std::array<std::size_t, kNumSections> offsets{};
  for (std::size_t s = 0; s < kNumSections; ++s) {
    offsets[s] = pieces[s].bytes == 0 ? 0 : AlignUp(offset);
    if (pieces[s].bytes != 0) offset = offsets[s] + pieces[s].bytes;
    Put<std::uint64_t>(h, kSectionsAt + 16 * s, offsets[s]);
    Put<std::uint64_t>(h, kSectionsAt + 16 * s + 8, pieces[s].bytes);
  }
  Put<std::uint64_t>(h, kFileSizeAt, offset);

  AtomicWriter out(path);
  out.Append({h.data(), h.size()});
  for (std::size_t s = 0; s < kNumSections; ++s) {
    if (pieces[s].bytes == 0) continue;
    out.PadTo(offsets[s]);
    out.Append(pieces[s]);
  }
  out.Commit();
}

Dataset ReadCache(const std::string& path, int threads) {
  auto file = std::make_shared<detail::MappedFile>(path);
  const std::span<const char> bytes = file->bytes();
  const auto bad = [&](const std::string& what) {
    throw Error(ErrorCode::kBadInput, path + ": " + what);
  };
  if (bytes.size() < kHeaderBytes) {
    bad("truncated: " + std::to_string(bytes.size()) + " bytes, expected at least the " +
        std::to_string(kHeaderBytes) + "-byte cache header");
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    bad("not a Corral cache (bad magic), expected a file written by `corral data convert`");
  }
  if (Get<std::uint32_t>(bytes, kBomAt) != kByteOrderMark) {
    bad("cache written on a machine with another byte order, expected little-endian");
  }
  if (const auto version = Get<std::uint32_t>(bytes, kVersionAt); version != kCacheVersion) {
    bad("cache format version " + std::to_string(version) + ", expected " +
        std::to_string(kCacheVersion) +
        " (written by another Corral version; re-create it with `corral data convert`)");
  }
  const auto file_size = Get<std::uint64_t>(bytes, kFileSizeAt);
  if (file_size != bytes.size()) {
    bad((bytes.size() < file_size ? "truncated: " : "wrong size: ") +
        std::to_string(bytes.size()) + " bytes, expected " + std::to_string(file_size) +
        " as its header says");
  }
  const auto stored = Get<std::uint64_t>(bytes, kChecksumAt);
  if (const std::uint64_t computed = FileDigest(bytes, threads); computed != stored) {
    bad("checksum mismatch (stored " + Hex(stored) + ", computed " + Hex(computed) +
        "): the file is corrupt, expected an intact cache");
  }
  // From here on the bytes are as written; the checks below catch a writer's bug or a
  // deliberately forged file, so that nothing is ever read out of bounds.
  const auto layout = Get<std::uint32_t>(bytes, kLayoutAt);
  const auto flags = Get<std::uint32_t>(bytes, kFlagsAt);
  const auto rows = Get<std::uint64_t>(bytes, kRowsAt);
  const auto features = Get<std::uint64_t>(bytes, kFeaturesAt);
  const auto nnz = Get<std::uint64_t>(bytes, kNnzAt);
  if (Get<std::uint32_t>(bytes, kHeaderSizeAt) != kHeaderBytes || layout > kDense ||
      flags > kRatingsFlag || (layout == kDense && flags != 0)) {
    bad("corrupt header (size, layout or flags), expected values this version writes");
  }
  if (rows > bytes.size() || nnz > bytes.size()) bad("corrupt header: counts exceed the file");
  // Every field is checked on its own, not only by the checksum, which a forger recomputes.
  if (rows == 0 && (features != 0 || nnz != 0)) {
    bad("header declares 0 rows of " + std::to_string(features) + " features, expected at least "
        "one row (only the empty set, of 0 features, has none)");
  }
  CheckFeatureCount(features, ErrorCode::kBadInput, path + ": header");
  std::array<std::span<const char>, kNumSections> sections;
  for (std::size_t s = 0; s < kNumSections; ++s) {
    const auto at = Get<std::uint64_t>(bytes, kSectionsAt + 16 * s);
    const auto size = Get<std::uint64_t>(bytes, kSectionsAt + 16 * s + 8);
    if (size != 0 && (at % kAlign != 0 || at < kHeaderBytes || at > bytes.size() ||
                      size > bytes.size() - at)) {
      bad("corrupt section table: section " + std::to_string(s) +
          " lies outside the file or is misaligned");
    }
    sections[s] = size == 0 ? std::span<const char>() : bytes.subspan(at, size);
  }
  const auto expect_size = [&](std::size_t s, std::uint64_t want, const char* what) {
    if (sections[s].size() != want) {
      bad("corrupt section table: " + std::string(what) + " has " +
          std::to_string(sections[s].size()) + " bytes, expected " + std::to_string(want));
    }
  };
  const auto as_floats = [&](std::size_t s) {
    return std::span<const float>(reinterpret_cast<const float*>(sections[s].data()),
                                  sections[s].size() / sizeof(float));
  };
  expect_size(kLabel, rows * 4, "labels");
  expect_size(kValue, nnz * 4, "values");
  Dataset d;
  if (layout == kDense) {
    if (features != 0 ? nnz % features != 0 || nnz / features != rows : nnz != 0) {
      bad("corrupt header: " + std::to_string(nnz) + " values for " + std::to_string(rows) +
          " dense rows of " + std::to_string(features));
    }
    d = Dataset::WrapDense(as_floats(kValue), as_floats(kLabel), features, file, path);
  } else {
    expect_size(kRowPtr, (rows + 1) * 8, "row offsets");
    expect_size(kIndex, nnz * 4, "indices");
    const CsrView view{
        .row_ptr = {reinterpret_cast<const std::uint64_t*>(sections[kRowPtr].data()), rows + 1},
        .index = {reinterpret_cast<const std::uint32_t*>(sections[kIndex].data()), nnz},
        .value = as_floats(kValue),
        .label = as_floats(kLabel),
        .num_features = features};
    d = Dataset::WrapSparse(view, file, path);
  }
  if (flags & kRatingsFlag) {
    auto info = std::make_shared<RatingsInfo>();
    info->num_users = Get<std::uint64_t>(bytes, kUsersAt);
    info->num_items = Get<std::uint64_t>(bytes, kItemsAt);
    info->known_users = Get<std::uint64_t>(bytes, kKnownUsersAt);
    info->known_items = Get<std::uint64_t>(bytes, kKnownItemsAt);
    if (info->num_users > bytes.size() || info->num_items > bytes.size()) {
      bad("corrupt header: user or item counts exceed the file");
    }
    expect_size(kUserIds, info->num_users * 8, "user ids");
    expect_size(kItemIds, info->num_items * 8, "item ids");
    const auto copy_ids = [&](std::size_t s, std::vector<std::uint64_t>& out, std::size_t known) {
      out.resize(sections[s].size() / 8);
      if (!out.empty()) std::memcpy(out.data(), sections[s].data(), sections[s].size());
      const auto split = out.begin() + static_cast<std::ptrdiff_t>(std::min(known, out.size()));
      const auto not_ascending = [](auto first, auto last) {
        return std::adjacent_find(first, last, std::greater_equal<>()) != last;
      };
      if (not_ascending(out.begin(), split) || not_ascending(split, out.end())) {
        bad("corrupt ratings id map: ids out of order, expected ascending ids");
      }
    };
    copy_ids(kUserIds, info->user_ids, info->known_users);
    copy_ids(kItemIds, info->item_ids, info->known_items);
    d = d.WithRatings(std::move(info));
  }
  RequireFinite(d, path);
  return d;
}

}  // namespace corral
