// Loops the codecs share: half-precision casts, reductions, the per-coordinate random stream of
// stochastic rounding, and B-bit packing. All are plain loops over contiguous arrays with no
// calls or early exits, written so that GCC/Clang vectorise them at -O2/-O3 (reductions keep
// explicit lanes because float addition is not associative and the compiler may not reorder it).
//
// Thread safety: pure functions.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>
#include <utility>

namespace corral::internal::compress {

static_assert(std::endian::native == std::endian::little,
              "Corral's wire formats are little-endian and stored with memcpy");

// Dense codecs encode and decode in chunks of this many coordinates: a multiple of 8, so a
// chunk of B-bit codes starts on a byte boundary, and small enough for a stack buffer in L1.
inline constexpr std::size_t kChunk = 256;

inline void StoreF32(std::byte* p, float x) { std::memcpy(p, &x, sizeof x); }
inline float LoadF32(const std::byte* p) {
  float x;
  std::memcpy(&x, p, sizeof x);
  return x;
}

// float -> IEEE binary16 bits, round to nearest even; overflow (|x| >= 65520) gives inf, NaN a
// quiet NaN with the sign kept. Branch-free form of F. Giesen's float_to_half_fast3_rtne (2016):
// both the normal and the subnormal result are computed and one is selected.
inline std::uint16_t FloatToHalfBits(float f) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  u &= 0x7fffffffu;
  // Normal half: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even.
  const std::uint32_t odd = (u >> 13) & 1u;
  const std::uint32_t normal = (u - (112u << 23) + 0xfffu + odd) >> 13;
  // Subnormal half (|x| < 2^-14): adding 0.5f aligns the half's ulp 2^-24 with float's ulp of
  // 0.5, so the FPU's own round-to-nearest-even does the rounding.
  const float magic = std::bit_cast<float>(126u << 23);
  const std::uint32_t subnormal =
      std::bit_cast<std::uint32_t>(std::bit_cast<float>(u) + magic) - (126u << 23);
  const std::uint32_t special = u > 0x7f800000u ? 0x7e00u : 0x7c00u;  // NaN : inf
  const std::uint32_t h = u >= (143u << 23) ? special : (u < (113u << 23) ? subnormal : normal);
  return static_cast<std::uint16_t>(h | sign);
}

// IEEE binary16 bits -> float (exact). Branch-free form of Giesen's half_to_float.
inline float HalfBitsToFloat(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t shifted = static_cast<std::uint32_t>(h & 0x7fffu) << 13;
  const std::uint32_t exponent = shifted & (0x7c00u << 13);
  const std::uint32_t normal = shifted + ((127u - 15u) << 23);
  const std::uint32_t special = normal + ((128u - 16u) << 23);  // inf/NaN: exponent 255
  // Subnormal: build 2^-14 * (1 + m) and subtract 2^-14, exactly.
  const float magic = std::bit_cast<float>(113u << 23);
  const std::uint32_t subnormal =
      std::bit_cast<std::uint32_t>(std::bit_cast<float>(normal + (1u << 23)) - magic);
  const std::uint32_t o =
      exponent == (0x7c00u << 13) ? special : (exponent == 0 ? subnormal : normal);
  return std::bit_cast<float>(o | sign);
}

// float -> bfloat16 bits, round to nearest even; large finite values round to inf as IEEE
// rounding does; NaN stays a (quiet) NaN instead of rounding into inf.
inline std::uint16_t FloatToBf16Bits(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const std::uint32_t nan = (u >> 16) | 0x40u;
  return static_cast<std::uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}
inline float Bf16BitsToFloat(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

// Sum of squares and of absolute values in double, over 8 independent lanes.
inline constexpr std::size_t kLanes = 8;
inline double SumSquares(std::span<const float> x) {
  double lane[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= x.size(); i += kLanes) {
    for (std::size_t j = 0; j < kLanes; ++j) {
      lane[j] += static_cast<double>(x[i + j]) * static_cast<double>(x[i + j]);
    }
  }
  double sum = 0;
  for (; i < x.size(); ++i) sum += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  for (double l : lane) sum += l;
  return sum;
}
inline double SumAbs(std::span<const float> x) {
  double lane[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= x.size(); i += kLanes) {
    for (std::size_t j = 0; j < kLanes; ++j) lane[j] += std::fabs(static_cast<double>(x[i + j]));
  }
  double sum = 0;
  for (; i < x.size(); ++i) sum += std::fabs(static_cast<double>(x[i]));
  for (double l : lane) sum += l;
  return sum;
}

// Minimum and maximum, and whether every entry is finite (NaN slips through min/max, so a
// lane of x * 0 catches it: that is NaN exactly when x is inf or NaN). GCC does not vectorise
// a float min/max reduction without -ffinite-math-only, so the lanes are an explicit GNU
// vector (GCC and Clang), whose elementwise select compiles to minps/maxps.
struct Range {
  float lo;
  float hi;
  bool finite;
};
inline Range MinMax(std::span<const float> x) {
  using Float8 = float __attribute__((vector_size(32)));
  constexpr float kInf = std::numeric_limits<float>::infinity();
  Float8 lo, hi;
  Float8 zero = {};
  for (std::size_t j = 0; j < 8; ++j) {
    lo[j] = kInf;
    hi[j] = -kInf;
  }
  std::size_t i = 0;
  for (; i + 8 <= x.size(); i += 8) {
    Float8 v;
    std::memcpy(&v, x.data() + i, sizeof v);
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
    zero += v * 0.0f;
  }
  Range r{kInf, -kInf, true};
  float z = 0.0f;
  for (; i < x.size(); ++i) {
    r.lo = std::min(r.lo, x[i]);
    r.hi = std::max(r.hi, x[i]);
    z += x[i] * 0.0f;
  }
  for (std::size_t j = 0; j < 8; ++j) {
    r.lo = std::min(r.lo, lo[j]);
    r.hi = std::max(r.hi, hi[j]);
    z += zero[j];
  }
  r.finite = z == 0.0f;
  return r;
}

// The random stream of stochastic rounding: coordinate k of a message gets a uniform u_k in
// [0, 1) from a counter-based hash of (k, 64-bit seed), the seed drawn once per message from the
// worker's Rng. Two rounds of C. Wellons' lowbias32 integer hash (32-bit multiplies vectorise on
// every x86 SIMD level), so the loop needs no sequential generator state. Rounding up when
// u_k < frac makes the rounding unbiased to within 2^-24 of one level (u has 24 bits).
inline std::uint32_t Mix32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}
struct UniformStream {
  std::uint32_t lo;
  std::uint32_t hi;
  explicit UniformStream(std::uint64_t seed)
      : lo(static_cast<std::uint32_t>(seed)), hi(static_cast<std::uint32_t>(seed >> 32)) {}
  float operator()(std::uint32_t k) const {
    return static_cast<float>(Mix32(Mix32(k ^ lo) + hi) >> 8) * 0x1.0p-24f;
  }
};

// B-bit codes, packed LSB-first: code j occupies bits [j B, (j+1) B) of the byte stream.
inline constexpr std::size_t PackedBytes(std::size_t count, int bits) {
  return (count * static_cast<std::size_t>(bits) + 7) / 8;
}

namespace detail {
__extension__ using Word128 = unsigned __int128;  // GCC/Clang builtin; __extension__: not ISO

// Eight B-bit codes fill exactly B bytes: one word per group, with B a compile-time constant
// so the shifts unroll and the B-byte memcpy is a fixed-size store. Returns codes packed.
template <int B>
std::size_t PackGroups(const std::uint32_t* codes, std::size_t count, std::byte* out) {
  using Word = std::conditional_t<(B <= 8), std::uint64_t, Word128>;
  const std::size_t groups = count / 8;
  for (std::size_t g = 0; g < groups; ++g) {
    Word word = 0;
    for (int j = 0; j < 8; ++j) word |= static_cast<Word>(codes[8 * g + j]) << (j * B);
    std::memcpy(out + g * B, &word, B);
  }
  return groups * 8;
}
template <int B>
std::size_t UnpackGroups(const std::byte* in, std::size_t count, std::uint32_t* codes) {
  using Word = std::conditional_t<(B <= 8), std::uint64_t, Word128>;
  constexpr Word kMask = (Word{1} << B) - 1;
  const std::size_t groups = count / 8;
  for (std::size_t g = 0; g < groups; ++g) {
    Word word = 0;
    std::memcpy(&word, in + g * B, B);
    for (int j = 0; j < 8; ++j)
      codes[8 * g + j] = static_cast<std::uint32_t>((word >> (j * B)) & kMask);
  }
  return groups * 8;
}

using PackFn = std::size_t (*)(const std::uint32_t*, std::size_t, std::byte*);
using UnpackFn = std::size_t (*)(const std::byte*, std::size_t, std::uint32_t*);
template <int... B>
constexpr std::array<PackFn, 17> PackTable(std::integer_sequence<int, B...>) {
  return {nullptr, nullptr, &PackGroups<B + 2>...};
}
template <int... B>
constexpr std::array<UnpackFn, 17> UnpackTable(std::integer_sequence<int, B...>) {
  return {nullptr, nullptr, &UnpackGroups<B + 2>...};
}
inline constexpr std::array<PackFn, 17> kPack = PackTable(std::make_integer_sequence<int, 15>());
inline constexpr std::array<UnpackFn, 17> kUnpack =
    UnpackTable(std::make_integer_sequence<int, 15>());
}  // namespace detail

// Writes PackedBytes(count, bits) bytes; bits in 2..16, codes < 2^bits. Whole groups of 8 go
// through the fixed-width kernel; a last partial group (only at the end of a message) bit by bit.
inline void PackCodes(const std::uint32_t* codes, std::size_t count, int bits, std::byte* out) {
  if (bits == 8) {  // byte-aligned widths: plain narrowing loops that vectorise
    for (std::size_t j = 0; j < count; ++j) out[j] = static_cast<std::byte>(codes[j]);
    return;
  }
  if (bits == 16) {
    for (std::size_t j = 0; j < count; ++j) {
      const auto code = static_cast<std::uint16_t>(codes[j]);
      std::memcpy(out + 2 * j, &code, 2);
    }
    return;
  }
  const std::size_t done = detail::kPack[static_cast<std::size_t>(bits)](codes, count, out);
  out += PackedBytes(done, bits);
  std::uint64_t acc = 0;
  int filled = 0;
  for (std::size_t j = done; j < count; ++j) {
    acc |= static_cast<std::uint64_t>(codes[j]) << filled;
    filled += bits;
    while (filled >= 8) {
      *out++ = static_cast<std::byte>(acc);
      acc >>= 8;
      filled -= 8;
    }
  }
  if (filled > 0) *out = static_cast<std::byte>(acc);
}
// Reads `count` codes written by PackCodes.
inline void UnpackCodes(const std::byte* in, std::size_t count, int bits, std::uint32_t* codes) {
  if (bits == 8) {
    for (std::size_t j = 0; j < count; ++j) codes[j] = static_cast<std::uint32_t>(in[j]);
    return;
  }
  if (bits == 16) {
    for (std::size_t j = 0; j < count; ++j) {
      std::uint16_t code;
      std::memcpy(&code, in + 2 * j, 2);
      codes[j] = code;
    }
    return;
  }
  const std::size_t done = detail::kUnpack[static_cast<std::size_t>(bits)](in, count, codes);
  in += PackedBytes(done, bits);
  const std::uint64_t mask = (std::uint64_t{1} << bits) - 1;
  std::uint64_t acc = 0;
  int filled = 0;
  for (std::size_t j = done; j < count; ++j) {
    while (filled < bits) {
      acc |= static_cast<std::uint64_t>(*in++) << filled;
      filled += 8;
    }
    codes[j] = static_cast<std::uint32_t>(acc & mask);
    acc >>= bits;
    filled -= bits;
  }
}

}  // namespace corral::internal::compress
