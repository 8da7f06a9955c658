// The binary cache (see <corral/cache.h> for the layout and its guarantees).
#include <corral/cache.h>

#include <algorithm>
#include <array>
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

#include "data/src/cache_format.h"
#include "data/src/cache_rows.h"
#include "data/src/cache_seal.h"
#include "data/src/checksum.h"
#include "data/src/mapped_buffer.h"
#include "data/src/text_pipeline.h"

namespace corral {
namespace {

using namespace detail::cache;  // the layout's names (data/src/cache_format.h)

std::string Hex(std::uint64_t v) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%016llx", static_cast<unsigned long long>(v));
  return buffer;
}

// The file's digest (cache_format.h's kDigestBlock), computed from the file as mapped: its
// blocks hash in parallel, and the result does not depend on the thread count. With `release`
// (the mapping of `file`), each block's pages are released from the process once hashed.
std::uint64_t FileDigest(std::span<const char> file, int threads,
                         const detail::MappedFile* release = nullptr) {
  const std::span<const char> body = file.subspan(kHeaderBytes);
  const std::size_t blocks = (body.size() + kDigestBlock - 1) / kDigestBlock;
  std::vector<std::uint64_t> digests(blocks + 1);
  digests[0] = HeaderDigest(file.first(kHeaderBytes));
  const auto hash_block = [&](std::size_t b) {
    const std::size_t at = b * kDigestBlock;
    const std::size_t bytes = std::min(kDigestBlock, body.size() - at);
    digests[b + 1] = detail::Xxh64(body.subspan(at, bytes));
    if (release != nullptr) release->Release(kHeaderBytes + at, kHeaderBytes + at + bytes);
  };
  const int workers = detail::ResolveThreads(threads);
  if (workers == 1 || blocks < 2) {
    for (std::size_t b = 0; b < blocks; ++b) hash_block(b);
  } else {
    oneapi::tbb::task_arena arena(workers);
    arena.execute([&] { oneapi::tbb::parallel_for(std::size_t{0}, blocks, hash_block); });
  }
  return CombineDigests(digests);
}

template <typename T>
std::span<const char> BytesOf(std::span<const T> s) {
  return {reinterpret_cast<const char*>(s.data()), s.size_bytes()};
}

// The readers refuse NaN and Inf, so a cache holds none unless it was forged or written from a
// caller's own arrays; a NaN label would train to a perfect accuracy, an Inf value look like
// a divergence. The fast pass finds nothing on every honest load; the slow one names the row
// (d's row r is the file's row first + r).
void RequireFinite(const Dataset& d, const std::string& path, std::size_t first) {
  const auto finite = [](std::span<const float> xs) {
    return std::all_of(xs.begin(), xs.end(), [](float x) { return std::isfinite(x); });
  };
  if (finite(d.labels()) && finite(d.value())) return;
  for (std::size_t r = 0; r < d.rows(); ++r) {
    const float y = d.Label(r);
    if (!std::isfinite(y)) {
      throw Error(ErrorCode::kBadInput, path + ": row " + std::to_string(first + r) + ": label " +
                                            std::to_string(y) + ", expected a finite number");
    }
    const SparseRow row = d.Row(r);
    for (std::size_t k = 0; k < row.nnz(); ++k) {
      if (!std::isfinite(row.value[k])) {
        throw Error(ErrorCode::kBadInput,
                    path + ": row " + std::to_string(first + r) + ": feature " +
                        std::to_string(row.index[k]) + " is " + std::to_string(row.value[k]) +
                        ", expected a finite number");
      }
    }
  }
}

}  // namespace

void detail::SealCache(std::span<char> file) {
  const std::uint64_t digest = FileDigest(file, 1);
  std::memcpy(file.data() + kChecksumAt, &digest, sizeof digest);
}

void WriteCache(const Dataset& data, const std::string& path) {
  std::array<std::span<const char>, kNumSections> sections{};
  if (!data.is_dense()) {
    sections[kRowPtr] = BytesOf(data.row_ptr());
    sections[kIndex] = BytesOf(data.index());
  }
  sections[kValue] = BytesOf(data.value());
  sections[kLabel] = BytesOf(data.labels());
  const RatingsInfo* ratings = data.ratings();
  if (ratings != nullptr) {
    sections[kUserIds] = BytesOf(std::span<const std::uint64_t>(ratings->user_ids));
    sections[kItemIds] = BytesOf(std::span<const std::uint64_t>(ratings->item_ids));
  }
  const std::string name = data.name().substr(0, kMaxNameBytes);
  sections[kName] = name;

  Contents contents{.dense = data.is_dense(), .ratings = ratings, .rows = data.rows(),
                    .features = data.num_features(), .nnz = data.nnz()};
  for (std::size_t s = 0; s < kNumSections; ++s) contents.section_bytes[s] = sections[s].size();
  CacheWriter out(path, MakeHeader(contents));
  for (std::size_t s = 0; s < kNumSections; ++s) {
    if (!sections[s].empty()) out.Append(static_cast<Section>(s), sections[s]);
  }
  out.Commit();
}

namespace {

// ReadCache (pick null: every row) and ReadCacheRows (cache_rows.h): with a range, the file's
// pages are released as they are hashed and only the range's rows are validated and viewed.
detail::CacheRows ReadCacheImpl(const std::string& path, int threads,
                                const std::function<detail::RowRange(std::size_t)>* pick) {
  // A range is read from few pages: they are mapped on their first touch, not all at once.
  auto file = std::make_shared<detail::MappedFile>(path, /*populate=*/pick == nullptr);
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
  if (const std::uint64_t computed =
          FileDigest(bytes, threads, pick != nullptr ? file.get() : nullptr);
      computed != stored) {
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
  const detail::RowRange range =
      pick != nullptr ? (*pick)(rows) : detail::RowRange{.first = 0, .count = rows};
  if (range.first > rows || range.count > rows - range.first) {
    throw Error(ErrorCode::kBadConfig,
                path + ": cannot read rows [" + std::to_string(range.first) + ", +" +
                    std::to_string(range.count) + "), expected a range of its " +
                    std::to_string(rows) + " rows");
  }
  Dataset d;
  if (layout == kDense) {
    if (features != 0 ? nnz % features != 0 || nnz / features != rows : nnz != 0) {
      bad("corrupt header: " + std::to_string(nnz) + " values for " + std::to_string(rows) +
          " dense rows of " + std::to_string(features));
    }
    d = Dataset::WrapDense(as_floats(kValue).subspan(range.first * features, range.count * features),
                           as_floats(kLabel).subspan(range.first, range.count), features, file,
                           path);
  } else {
    expect_size(kRowPtr, (rows + 1) * 8, "row offsets");
    expect_size(kIndex, nnz * 4, "indices");
    const std::span<const std::uint64_t> offsets(
        reinterpret_cast<const std::uint64_t*>(sections[kRowPtr].data()), rows + 1);
    if (range.count == rows) {
      const CsrView view{.row_ptr = offsets,
                         .index = {reinterpret_cast<const std::uint32_t*>(sections[kIndex].data()),
                                   nnz},
                         .value = as_floats(kValue),
                         .label = as_floats(kLabel),
                         .num_features = features};
      d = Dataset::WrapSparse(view, file, path);
    } else {
      // The range's offsets, checked here (Validate checks the rebased copy) and rebased to
      // start at 0; the two ends of the whole table are checked too, as Validate would.
      if (offsets[0] != 0 || offsets[rows] != nnz) {
        bad("corrupt row offsets: from " + std::to_string(offsets[0]) + " to " +
            std::to_string(offsets[rows]) + ", expected from 0 to the " + std::to_string(nnz) +
            " non-zeros");
      }
      struct Owner {
        std::shared_ptr<const detail::MappedFile> file;
        std::vector<std::uint64_t> offsets;
      };
      auto owner = std::make_shared<Owner>(Owner{.file = file, .offsets = {}});
      owner->offsets.resize(range.count + 1);
      const std::uint64_t base = offsets[range.first];
      for (std::size_t r = range.first; r <= range.first + range.count; ++r) {
        if (offsets[r] > nnz || (r > range.first && offsets[r] < offsets[r - 1])) {
          bad("corrupt row offsets at row " + std::to_string(r) + " (" +
              std::to_string(offsets[r]) + "), expected non-decreasing offsets up to the " +
              std::to_string(nnz) + " non-zeros");
        }
        owner->offsets[r - range.first] = offsets[r] - base;
      }
      const std::uint64_t stored_here = owner->offsets.back();
      const CsrView view{
          .row_ptr = owner->offsets,
          .index = {reinterpret_cast<const std::uint32_t*>(sections[kIndex].data()) + base,
                    stored_here},
          .value = as_floats(kValue).subspan(base, stored_here),
          .label = as_floats(kLabel).subspan(range.first, range.count),
          .num_features = features};
      try {
        d = Dataset::WrapSparse(view, std::move(owner), path);
      } catch (const Error& e) {  // its rows are the range's: say where the range starts
        std::string what = e.what();
        if (what.starts_with(path + ": ")) what.erase(0, path.size() + 2);
        bad(what + " (row numbers counted from row " + std::to_string(range.first) +
            " of the file)");
      }
    }
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
  RequireFinite(d, path, range.first);
  return {.rows = std::move(d), .total = rows};
}

}  // namespace

Dataset ReadCache(const std::string& path, int threads) {
  return ReadCacheImpl(path, threads, nullptr).rows;
}

detail::CacheRows detail::ReadCacheRows(const std::string& path,
                                        const std::function<RowRange(std::size_t)>& pick,
                                        int threads) {
  return ReadCacheImpl(path, threads, &pick);
}

}  // namespace corral
