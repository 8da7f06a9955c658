// XXH64 (Yann Collet's xxHash, 64-bit variant), written out here so the cache needs no
// extra library, and a block-parallel digest built on it. The cache checksums every byte on
// every load, and zlib's CRC-32 ran at ~2 GB/s, most of a cache load; XXH64 runs at several
// times that, and its blocks hash in parallel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace corral::detail {

inline std::uint64_t Xxh64(std::span<const char> bytes, std::uint64_t seed = 0) {
  constexpr std::uint64_t kP1 = 0x9E3779B185EBCA87ULL;
  constexpr std::uint64_t kP2 = 0xC2B2AE3D27D4EB4FULL;
  constexpr std::uint64_t kP3 = 0x165667B19E3779F9ULL;
  constexpr std::uint64_t kP4 = 0x85EBCA77C2B2AE63ULL;
  constexpr std::uint64_t kP5 = 0x27D4EB2F165667C5ULL;
  const auto rotl = [](std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); };
  const auto read64 = [](const char* p) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  };
  const auto round = [&](std::uint64_t acc, std::uint64_t input) {
    acc += input * kP2;
    acc = rotl(acc, 31);
    return acc * kP1;
  };
  const auto merge = [&](std::uint64_t acc, std::uint64_t v) {
    acc ^= round(0, v);
    return acc * kP1 + kP4;
  };
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  std::uint64_t h;
  if (bytes.size() >= 32) {
    std::uint64_t v1 = seed + kP1 + kP2, v2 = seed + kP2, v3 = seed, v4 = seed - kP1;
    for (; p + 32 <= end; p += 32) {
      v1 = round(v1, read64(p));
      v2 = round(v2, read64(p + 8));
      v3 = round(v3, read64(p + 16));
      v4 = round(v4, read64(p + 24));
    }
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    h = merge(merge(merge(merge(h, v1), v2), v3), v4);
  } else {
    h = seed + kP5;
  }
  h += static_cast<std::uint64_t>(bytes.size());
  for (; p + 8 <= end; p += 8) h = rotl(h ^ round(0, read64(p)), 27) * kP1 + kP4;
  if (p + 4 <= end) {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    h = rotl(h ^ (std::uint64_t{v} * kP1), 23) * kP2 + kP3;
    p += 4;
  }
  for (; p < end; ++p) h = rotl(h ^ (std::uint64_t{static_cast<unsigned char>(*p)} * kP5), 11) * kP1;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

}  // namespace corral::detail
