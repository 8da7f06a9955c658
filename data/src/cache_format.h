// The binary cache's layout and its writer (internal; the format is described in
// <corral/cache.h>). WriteCache (a dataset in memory) and ConvertToCache (a file read in
// pieces) both write through CacheWriter, so they write the same bytes for the same data.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <corral/ratings_info.h>

#include "data/src/durable_file.h"

namespace corral::detail::cache {

inline constexpr char kMagic[8] = {'C', 'O', 'R', 'R', 'A', 'L', 'D', 'S'};
inline constexpr std::uint32_t kByteOrderMark = 0x01020304;
inline constexpr std::size_t kHeaderBytes = 256;
inline constexpr std::size_t kAlign = 64;
inline constexpr std::size_t kMaxNameBytes = 4096;
// The digest's block: the file's digest is XXH64 of the XXH64s of the header (its checksum
// field read as zero) and of the body's consecutive blocks of this size.
inline constexpr std::size_t kDigestBlock = std::size_t{1} << 20;

// Byte offsets of the header fields.
enum Field : std::size_t {
  kVersionAt = 8, kBomAt = 12, kLayoutAt = 16, kFlagsAt = 20, kRowsAt = 24, kFeaturesAt = 32,
  kNnzAt = 40, kFileSizeAt = 48, kChecksumAt = 56, kHeaderSizeAt = 64, kUsersAt = 72,
  kItemsAt = 80, kKnownUsersAt = 88, kKnownItemsAt = 96, kSectionsAt = 104,
};
// The sections, in file order; the header's table holds (offset, bytes) for each.
enum Section : std::size_t {
  kRowPtr, kIndex, kValue, kLabel, kUserIds, kItemIds, kName, kNumSections = 8,
};
inline constexpr std::uint32_t kSparse = 0;
inline constexpr std::uint32_t kDense = 1;
inline constexpr std::uint32_t kRatingsFlag = 1;

using Header = std::array<char, kHeaderBytes>;

template <typename T>
void Put(Header& h, std::size_t at, T v) {
  std::memcpy(h.data() + at, &v, sizeof v);
}
template <typename T>
T Get(std::span<const char> h, std::size_t at) {
  T v;
  std::memcpy(&v, h.data() + at, sizeof v);
  return v;
}

// What a header records. A dense set has no row offsets or indices; `ratings` is null for
// other sets.
struct Contents {
  bool dense = false;
  const RatingsInfo* ratings = nullptr;
  std::uint64_t rows = 0, features = 0, nnz = 0;
  std::array<std::uint64_t, kNumSections> section_bytes{};
};

// The header for `contents`, its checksum zero: the sections' offsets (64-byte aligned, in
// order, an empty section at offset 0) and the file's size follow from their sizes.
Header MakeHeader(const Contents& contents);

// XXH64 of the header with its checksum field read as zero: the digest's block 0.
std::uint64_t HeaderDigest(std::span<const char> header);
// The file's digest from the digests of its blocks (the header's first).
std::uint64_t CombineDigests(std::span<const std::uint64_t> block_digests);

// Writes a cache file: the header, then each section's bytes in section order, padding up to
// each section's offset; hashes the bytes as they pass, in kDigestBlock blocks (so nothing is
// read back), and on Commit() writes the checksum and renames the file into place
// (DurableFile: a failure or an early destruction leaves no file behind).
//
// Thread safety: owner-only.
class CacheWriter {
 public:
  CacheWriter(const std::string& path, const Header& header);

  // Appends to section `s`. \pre sections come in order; each one's bytes add up to the size
  // its header entry gives.
  void Append(Section s, std::span<const char> bytes);
  void Commit();

 private:
  void Write(std::span<const char> bytes);

  Header header_;
  DurableFile file_;
  std::uint64_t written_ = 0;
  std::vector<std::uint64_t> digests_;  // [0]: the header's; then one per full body block
  std::vector<char> block_;             // the body block being filled
};

}  // namespace corral::detail::cache
