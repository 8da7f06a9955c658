#include "data/src/cache_format.h"

#include <algorithm>
#include <stdexcept>

#include <corral/cache.h>

#include "data/src/checksum.h"

namespace corral::detail::cache {
namespace {

std::uint64_t AlignUp(std::uint64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

}  // namespace

Header MakeHeader(const Contents& c) {
  Header h{};
  std::memcpy(h.data(), kMagic, sizeof kMagic);
  Put<std::uint32_t>(h, kVersionAt, kCacheVersion);
  Put<std::uint32_t>(h, kBomAt, kByteOrderMark);
  Put<std::uint32_t>(h, kLayoutAt, c.dense ? kDense : kSparse);
  Put<std::uint32_t>(h, kFlagsAt, c.ratings != nullptr ? kRatingsFlag : 0);
  Put<std::uint64_t>(h, kRowsAt, c.rows);
  Put<std::uint64_t>(h, kFeaturesAt, c.features);
  Put<std::uint64_t>(h, kNnzAt, c.nnz);
  Put<std::uint32_t>(h, kHeaderSizeAt, kHeaderBytes);
  if (c.ratings != nullptr) {
    Put<std::uint64_t>(h, kUsersAt, c.ratings->num_users);
    Put<std::uint64_t>(h, kItemsAt, c.ratings->num_items);
    Put<std::uint64_t>(h, kKnownUsersAt, c.ratings->known_users);
    Put<std::uint64_t>(h, kKnownItemsAt, c.ratings->known_items);
  }
  std::uint64_t end = kHeaderBytes;
  for (std::size_t s = 0; s < kNumSections; ++s) {
    const std::uint64_t bytes = c.section_bytes[s];
    const std::uint64_t at = bytes == 0 ? 0 : AlignUp(end);
    if (bytes != 0) end = at + bytes;
    Put<std::uint64_t>(h, kSectionsAt + 16 * s, at);
    Put<std::uint64_t>(h, kSectionsAt + 16 * s + 8, bytes);
  }
  Put<std::uint64_t>(h, kFileSizeAt, end);
  return h;
}

std::uint64_t HeaderDigest(std::span<const char> header) {
  Header zeroed;
  std::memcpy(zeroed.data(), header.data(), kHeaderBytes);
  Put<std::uint64_t>(zeroed, kChecksumAt, 0);
  return Xxh64(zeroed);
}

std::uint64_t CombineDigests(std::span<const std::uint64_t> block_digests) {
  return Xxh64({reinterpret_cast<const char*>(block_digests.data()), block_digests.size() * 8});
}

CacheWriter::CacheWriter(const std::string& path, const Header& header)
    : header_(header), file_(path, "cache"), digests_{HeaderDigest(header)} {
  block_.reserve(kDigestBlock);
  file_.Write(header_);
  written_ = kHeaderBytes;
}

void CacheWriter::Append(Section s, std::span<const char> bytes) {
  static constexpr char kZeros[kAlign] = {};
  const auto at = Get<std::uint64_t>(header_, kSectionsAt + 16 * s);
  while (written_ < at) Write({kZeros, std::min<std::uint64_t>(kAlign, at - written_)});
  Write(bytes);
}

void CacheWriter::Write(std::span<const char> bytes) {
  file_.Write(bytes);
  written_ += bytes.size();
  while (!bytes.empty()) {
    if (block_.empty() && bytes.size() >= kDigestBlock) {  // a whole block: hash it in place
      digests_.push_back(Xxh64(bytes.first(kDigestBlock)));
      bytes = bytes.subspan(kDigestBlock);
      continue;
    }
    const std::size_t n = std::min(kDigestBlock - block_.size(), bytes.size());
    block_.insert(block_.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    bytes = bytes.subspan(n);
    if (block_.size() == kDigestBlock) {
      digests_.push_back(Xxh64(block_));
      block_.clear();
    }
  }
}

void CacheWriter::Commit() {
  if (written_ != Get<std::uint64_t>(header_, kFileSizeAt)) {
    throw std::logic_error("CacheWriter: the sections written disagree with the header's sizes");
  }
  if (!block_.empty()) digests_.push_back(Xxh64(block_));
  const std::uint64_t digest = CombineDigests(digests_);
  file_.WriteAt(kChecksumAt, {reinterpret_cast<const char*>(&digest), sizeof digest});
  file_.Commit();
}

}  // namespace corral::detail::cache
