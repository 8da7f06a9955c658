// Over 300 lines: each vector step has an AVX2 form (the fixed-point step also an AVX-512 one)
// and a portable one beside it, which the sanitizer builds run and the tests hold to the same
// results.
// Buckwild!'s dense kernels (internal): the dot product of a dense row with the shared
// fixed-point model, and the row's rounded update of it, 16 coordinates (a block) at a time;
// the update also sums the next row's dot product from the blocks it stores, so that a step
// reads the model once.
//
// The model is an array of 64-bit words, each holding 8 int8 or 4 int16 coordinates (T). A
// block, 32 bytes of int16 or 16 of int8 (under AVX-512 the fixed-point step's pair of blocks,
// 64 or 32 bytes), is loaded and stored whole by one vector instruction in an extended asm
// statement, as the float model's wide access is (models/src/wide_params.h
// says why that is defined, and what the hardware promises: every coordinate is read and
// written whole, the block as a whole is not atomic, which is the asynchrony HOGWILD! allows).
// W: any worker (StoreBlock), R: any worker (LoadBlock); beside buckwild.h's relaxed
// std::atomic_ref<uint64_t> accesses to the same words (the sparse kernels, the evaluator's
// snapshot). Sanitizer builds and other architectures move a block's words one relaxed
// std::atomic_ref<uint64_t> at a time (kAsm false); the arithmetic is the same code, so the
// same bits (tests/buckwild_kernels_test.cc).
//
// The dot product is exact: products of 16-bit values summed in pairs in int32 (pmaddwd), the
// int32 lanes widened into int64 before they can overflow. Its value does not depend on the
// order of the sum, so every build agrees on it.
//
// The update of coordinate q by the step's coefficient c (in model quanta per data quantum):
// t = (q - c x) * shrink, rounded onto the grid.
// - Stochastic rounding of int8 data: in fixed point (FixedStep). The step's two
//   coefficients, shrink and -c shrink, are rounded stochastically once per step to integers
//   of s fraction bits, then each coordinate's q' = floor((A q + b x' + r) / 2^s) with r
//   uniform on [0, 2^s), all in int32: E q' = t, without a float operation per coordinate.
// - To nearest, int16 data, and a step the fixed point cannot hold (MakeFixedStep): t in
//   float as the scalar kernels compute it, z = t 2^15 rounded to the nearest integer (the
//   vector unit's conversion), q' = floor((z + 2^14) / 2^15); a stochastic step here takes r
//   uniform on [0, 2^15) instead of 2^14, unbiased to within 2^-16 of a quantum.
// Either way q' is clamped to +-max(T).
//
// Rows and the model are padded to whole blocks with zeros. A padded coordinate adds nothing to
// a dot product, and for a finite c its update is floor((0 + r) / 2^s) = 0 (r < 2^s): it stays 0.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include <corral/rng.h>

#include "models/src/wide_params.h"

// The 32-byte vectors below pass between inline functions only. Without AVX GCC warns that
// their calling convention differs from an AVX build's, which concerns no caller here. Not
// popped: GCC reports it where the templates are instantiated, at the end of the includer.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace corral::internal::buckwild {

using I8x16 = std::int8_t __attribute__((vector_size(16)));
using I16x8 = std::int16_t __attribute__((vector_size(16)));
using I16x16 = std::int16_t __attribute__((vector_size(32)));
using I32x8 = std::int32_t __attribute__((vector_size(32)));
using U32x8 = std::uint32_t __attribute__((vector_size(32)));
using I64x4 = std::int64_t __attribute__((vector_size(32)));
using F32x8 = float __attribute__((vector_size(32)));

inline constexpr std::size_t kBlock = 16;  // coordinates per block

#if defined(__AVX512BW__)
// With AVX-512 the fixed-point step moves two blocks at once, b and b + 1 for an even b (a
// pair), in 512-bit vectors: half the instructions per coordinate of the 256-bit form, the same
// bits (each 128-bit lane of the pair's arithmetic is a lane of one block's).
using I8x32 = std::int8_t __attribute__((vector_size(32)));
using I16x32 = std::int16_t __attribute__((vector_size(64)));
using I32x16 = std::int32_t __attribute__((vector_size(64)));
using U32x16 = std::uint32_t __attribute__((vector_size(64)));
template <typename E>
using Pair = std::conditional_t<sizeof(E) == 1, I8x32, I16x32>;
inline constexpr bool kPairs = true;
#else
inline constexpr bool kPairs = false;
#endif

// A block of 16 E's (E: int8 or int16).
template <typename E>
using Block = std::conditional_t<sizeof(E) == 1, I8x16, I16x16>;

template <typename E>
inline constexpr std::size_t kWordsPerBlock = kBlock * sizeof(E) / sizeof(std::uint64_t);

// Largest |value| of an E on the grid.
template <typename E>
inline constexpr float kGridMax = static_cast<float>(std::numeric_limits<E>::max());

// Coordinates rounded up to whole blocks.
inline std::size_t PaddedLength(std::size_t n) { return (n + kBlock - 1) / kBlock * kBlock; }

// A shared vector V (a block, or a pair under AVX-512) at word p: one instruction (kAsm), else
// word by word, relaxed.
template <bool kAsm, typename V>
inline V LoadWords(const std::uint64_t* p) {
  static_assert(sizeof(V) < 64 || kPairs, "64-byte vectors are AVX-512's pairs");
  constexpr std::size_t kWords = sizeof(V) / sizeof(std::uint64_t);
  V v{};
  if constexpr (kAsm) {
    static_assert(detail::kWideAsmAvailable);
    using Bytes = const std::uint64_t(*)[kWords];
    if constexpr (sizeof(V) == 64) {
#if defined(__AVX512F__)
      asm("vmovdqu64 %1, %0" : "=v"(v) : "m"(*reinterpret_cast<Bytes>(p)));
#endif
    } else {
#if defined(__AVX__)
      asm("vmovdqu %1, %0" : "=x"(v) : "m"(*reinterpret_cast<Bytes>(p)));
#elif defined(__SSE2__)
      if constexpr (sizeof(V) == 16) {
        asm("movdqu %1, %0" : "=x"(v) : "m"(*reinterpret_cast<Bytes>(p)));
      } else {  // two halves: without AVX a 32-byte vector is two registers
        I16x8 lo, hi;
        asm("movdqu %1, %0" : "=x"(lo) : "m"(*reinterpret_cast<const std::uint64_t(*)[2]>(p)));
        asm("movdqu %1, %0" : "=x"(hi) : "m"(*reinterpret_cast<const std::uint64_t(*)[2]>(p + 2)));
        v = reinterpret_cast<V>(__builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
      }
#endif
    }
  } else {
    for (std::size_t i = 0; i < kWords; ++i) {
      // const_cast: atomic_ref needs a non-const object; a load does not modify it.
      const std::uint64_t word =
          std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(p[i])).load(std::memory_order_relaxed);
      std::memcpy(reinterpret_cast<char*>(&v) + i * sizeof word, &word, sizeof word);
    }
  }
  return v;
}

template <bool kAsm, typename V>
inline void StoreWords(std::uint64_t* p, V v) {
  static_assert(sizeof(V) < 64 || kPairs, "64-byte vectors are AVX-512's pairs");
  constexpr std::size_t kWords = sizeof(V) / sizeof(std::uint64_t);
  if constexpr (kAsm) {
    static_assert(detail::kWideAsmAvailable);
    using Bytes = std::uint64_t(*)[kWords];
    if constexpr (sizeof(V) == 64) {
#if defined(__AVX512F__)
      asm("vmovdqu64 %1, %0" : "=m"(*reinterpret_cast<Bytes>(p)) : "v"(v));
#endif
    } else {
#if defined(__AVX__)
      asm("vmovdqu %1, %0" : "=m"(*reinterpret_cast<Bytes>(p)) : "x"(v));
#elif defined(__SSE2__)
      if constexpr (sizeof(v) == 16) {
        asm("movdqu %1, %0" : "=m"(*reinterpret_cast<Bytes>(p)) : "x"(v));
      } else {
        const auto words = reinterpret_cast<I16x16>(v);
        const I16x8 lo = __builtin_shufflevector(words, words, 0, 1, 2, 3, 4, 5, 6, 7);
        const I16x8 hi = __builtin_shufflevector(words, words, 8, 9, 10, 11, 12, 13, 14, 15);
        asm("movdqu %1, %0" : "=m"(*reinterpret_cast<std::uint64_t(*)[2]>(p)) : "x"(lo));
        asm("movdqu %1, %0" : "=m"(*reinterpret_cast<std::uint64_t(*)[2]>(p + 2)) : "x"(hi));
      }
#endif
    }
  } else {
    for (std::size_t i = 0; i < kWords; ++i) {
      std::uint64_t word;
      std::memcpy(&word, reinterpret_cast<const char*>(&v) + i * sizeof word, sizeof word);
      std::atomic_ref<std::uint64_t>(p[i]).store(word, std::memory_order_relaxed);
    }
  }
}

template <bool kAsm, typename E>
inline Block<E> LoadBlock(const std::uint64_t* p) {
  return LoadWords<kAsm, Block<E>>(p);
}

template <bool kAsm, typename E>
inline void StoreBlock(std::uint64_t* p, Block<E> v) {
  StoreWords<kAsm>(p, v);
}

// A private vector V of E's at p (the worker's own quantized row): a block, or a pair.
template <typename V, typename E>
inline V Private(const E* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename E>
inline Block<E> PrivateBlock(const E* p) {
  return Private<Block<E>>(p);
}

template <typename E>
inline I16x16 Widen(Block<E> v) {
  if constexpr (sizeof(E) == 1) {
#if defined(__AVX2__)
    return reinterpret_cast<I16x16>(_mm256_cvtepi8_epi16(reinterpret_cast<__m128i>(v)));  // one instruction
#else
    return __builtin_convertvector(v, I16x16);
#endif
  } else {
    return v;
  }
}

#if defined(__AVX512BW__)
// acc + pmaddwd(a, b) in each int32 lane: one vpdpwssd with AVX512-VNNI (which wraps as the
// add does; the sums here never overflow).
inline __m512i MultiplyAddPairsInto(__m512i acc, __m512i a, __m512i b) {
#if defined(__AVX512VNNI__)
  return _mm512_dpwssd_epi32(acc, a, b);
#else
  return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
#endif
}

template <typename E>
inline __m512i WidenPair(Pair<E> v) {
  if constexpr (sizeof(E) == 1) {
    return _mm512_cvtepi8_epi16(reinterpret_cast<__m256i>(v));
  } else {
    return reinterpret_cast<__m512i>(v);
  }
}
#endif

// Lanes 0-7 (kHigh false) or 8-15 of a block as floats.
template <bool kHigh, typename E>
inline F32x8 Floats(Block<E> v) {
#if defined(__AVX2__)
  // (GCC widens a generic int8 vector to int32 one byte at a time.)
  __m256i wide;
  if constexpr (sizeof(E) == 1) {
    const auto bytes = reinterpret_cast<__m128i>(v);
    wide = _mm256_cvtepi8_epi32(kHigh ? _mm_srli_si128(bytes, 8) : bytes);
  } else {
    const auto words = reinterpret_cast<__m256i>(v);
    wide = _mm256_cvtepi16_epi32(kHigh ? _mm256_extracti128_si256(words, 1) : _mm256_castsi256_si128(words));
  }
  return reinterpret_cast<F32x8>(_mm256_cvtepi32_ps(wide));
#else
  const auto half = kHigh ? __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15)
                          : __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7);
  return __builtin_convertvector(__builtin_convertvector(half, I32x8), F32x8);
#endif
}

// Floats of a private block's lanes 0-7 (kHigh false) or 8-15, read from p.
template <bool kHigh, typename E>
inline F32x8 PrivateFloats(const E* p) {
#if defined(__AVX2__)
  // Widened straight from memory: no shuffle to take the high half.
  const auto* half = reinterpret_cast<const __m128i*>(p + (kHigh ? 8 : 0));
  const __m256i wide = sizeof(E) == 1 ? _mm256_cvtepi8_epi32(_mm_loadl_epi64(half))
                                      : _mm256_cvtepi16_epi32(_mm_loadu_si128(half));
  return reinterpret_cast<F32x8>(_mm256_cvtepi32_ps(wide));
#else
  return Floats<kHigh, E>(PrivateBlock(p));
#endif
}

// Lane i: a[2i] b[2i] + a[2i+1] b[2i+1] in int32 (pmaddwd). Exact unless both pairs are
// -32768 * -32768, which the grids (+-max) never hold.
inline I32x8 MultiplyAddPairs(I16x16 a, I16x16 b) {
#if defined(__AVX2__)
  return reinterpret_cast<I32x8>(_mm256_madd_epi16(reinterpret_cast<__m256i>(a), reinterpret_cast<__m256i>(b)));
#elif defined(__SSE2__)
  using I32x4 = std::int32_t __attribute__((vector_size(16)));
  const auto half = [](I16x16 v, bool high) {
    return high ? __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15)
                : __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7);
  };
  const auto lo = reinterpret_cast<I32x4>(
      _mm_madd_epi16(reinterpret_cast<__m128i>(half(a, false)), reinterpret_cast<__m128i>(half(b, false))));
  const auto hi = reinterpret_cast<I32x4>(
      _mm_madd_epi16(reinterpret_cast<__m128i>(half(a, true)), reinterpret_cast<__m128i>(half(b, true))));
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
#else
  I32x8 out;
  for (int i = 0; i < 8; ++i) out[i] = std::int32_t{a[2 * i]} * b[2 * i] + std::int32_t{a[2 * i + 1]} * b[2 * i + 1];
  return out;
#endif
}

// Blocks whose pair sums one int32 lane holds without overflow: each pair sum is at most
// 2 max(T) max(D) in magnitude (1 for int16 x int16, 258 for int16 x int8, 66,572 for int8 x int8).
template <typename T, typename D>
inline constexpr std::size_t kBlocksPerFlush = static_cast<std::size_t>(
    std::numeric_limits<std::int32_t>::max() /
    (2 * std::int64_t{std::numeric_limits<T>::max()} * std::numeric_limits<D>::max()));

// Fractional bits of the fixed point the update rounds from (module comment): |t| 2^15 stays
// below 2^31 for every t on the int16 grid.
inline constexpr int kFractionBits = 15;

// Per-worker random numbers for stochastic rounding, 16 at a time: 8 xorshift32 lanes stepped
// together, each lane's 32 bits giving two numbers r of up to 16 bits. Four sets of lanes, set k
// for the blocks b with b % 4 == k, so that the steps of four blocks overlap: one set is a chain
// of six dependent instructions a block, which bound the update with two sets (standalone,
// AVX-512, 2,000 coordinates, rows in cache: 241-256 -> 157-169 ns a step). Not for statistics,
// only to make rounding unbiased.
struct RoundingStream {
  static constexpr std::size_t kSets = 4;
  std::array<U32x8, kSets> sets{};
  // Sets 0 and 1 from the high halves of 16 draws, 2 and 3 from their low halves.
  void Seed(Rng& rng) {
    for (std::size_t k = 0; k < 2; ++k) {
      for (int i = 0; i < 8; ++i) {
        const std::uint64_t v = rng();
        sets[k][i] = static_cast<std::uint32_t>(v >> 32) | 1u;  // xorshift32: never 0
        sets[k + 2][i] = static_cast<std::uint32_t>(v) | 1u;
      }
    }
  }
  // `lanes` (a set, or under AVX-512 two side by side) stepped; returns their 32 bits.
  template <typename U>
  static U Step(U& lanes) {
    U x = lanes;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    lanes = x;
    return x;
  }
  // r uniform on [0, 2^bits) (bits <= 16) for two groups of coordinates, one r a lane in each:
  // each lane's low bits (lo) and its high bits (hi), from `lanes`.
  template <typename U, typename I>
  static void Next(U& lanes, int bits, I& lo, I& hi) {
    const U x = Step(lanes);
    lo = reinterpret_cast<I>(x & ((1u << bits) - 1));
    hi = reinterpret_cast<I>(x >> (32 - bits));
  }
};

// Blocks of D per cache line, the prefetches' stride.
template <typename D>
inline constexpr std::size_t kBlocksPerLine = std::max<std::size_t>(1, 64 / (kBlock * sizeof(D)));

// An exact sum of products of T and D grid values, a block at a time: pair sums in int32,
// widened into int64 every kBlocksPerFlush blocks.
template <typename T, typename D>
class ExactDot {
 public:
  void Add(Block<T> q, Block<D> x) {
    sum_ += MultiplyAddPairs(Widen<T>(q), Widen<D>(x));
    Counted();
  }
  // Add, for block b of rows read in order, with the line of `ahead` at block b asked for
  // every 64 bytes of D.
  void Add(Block<T> q, Block<D> x, const D* ahead, std::size_t b) {
    Ask(ahead, b);
    Add(q, x);
  }
#if defined(__AVX512BW__)
  // Add for the pair at block b (even), into lanes of their own: each lane still takes one
  // pair sum a call.
  void Add(Pair<T> q, Pair<D> x, const D* ahead, std::size_t b) {
    Ask(ahead, b);
    pairs_ = reinterpret_cast<I32x16>(
        MultiplyAddPairsInto(reinterpret_cast<__m512i>(pairs_), WidenPair<T>(q), WidenPair<D>(x)));
    Counted();
  }
#endif
  std::int64_t Value() {
    Flush();
    return (total_[0] + total_[1]) + (total_[2] + total_[3]);
  }

 private:
  static void Ask(const D* ahead, std::size_t b) {
    if (b % kBlocksPerLine<D> == 0) __builtin_prefetch(ahead);
  }
  void Counted() {
    if (++pending_ == kBlocksPerFlush<T, D>) Flush();
  }
  // v's eight int32 lanes added into total_'s four int64 ones.
  void Widened(I32x8 v) {
    total_ += __builtin_convertvector(__builtin_shufflevector(v, v, 0, 1, 2, 3), I64x4) +
              __builtin_convertvector(__builtin_shufflevector(v, v, 4, 5, 6, 7), I64x4);
  }
  void Flush() {
    Widened(sum_);
    sum_ = I32x8{};
#if defined(__AVX512BW__)
    Widened(__builtin_shufflevector(pairs_, pairs_, 0, 1, 2, 3, 4, 5, 6, 7));
    Widened(__builtin_shufflevector(pairs_, pairs_, 8, 9, 10, 11, 12, 13, 14, 15));
    pairs_ = I32x16{};
#endif
    pending_ = 0;
  }
  I32x8 sum_{};
#if defined(__AVX512BW__)
  I32x16 pairs_{};
#endif
  I64x4 total_{};
  std::size_t pending_ = 0;
};

// sum_j q_j x_j over `blocks` blocks of the shared model (words from `model`) and the private
// row x, exactly. `ahead`: the row the worker reads next (as long; may be x), asked of the
// memory system a cache line per 64 bytes of x as the sum goes (a shuffled row otherwise
// misses the cache on every line).
template <bool kAsm, typename T, typename D>
std::int64_t DenseDot(const std::uint64_t* model, const D* x, std::size_t blocks, const D* ahead) {
  ExactDot<T, D> dot;
  for (std::size_t b = 0; b < blocks; ++b) {
    dot.Add(LoadBlock<kAsm, T>(model + b * kWordsPerBlock<T>), PrivateBlock(x + b * kBlock), ahead + b * kBlock, b);
  }
  return dot.Value();
}

#if defined(__AVX2__)
// 16 int16 words, in order, onto T's grid +-max(T): saturated (packsswb for int8), then
// -max(T) - 1, the one value saturation leaves past the lower end, raised to -max(T).
template <typename T>
inline Block<T> OnGrid(__m256i words) {
  if constexpr (sizeof(T) == 1) {
    const __m128i bytes = _mm_packs_epi16(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1));
    return reinterpret_cast<I8x16>(_mm_max_epi8(bytes, _mm_set1_epi8(-127)));
  } else {
    return reinterpret_cast<I16x16>(_mm256_max_epi16(words, _mm256_set1_epi16(-32767)));
  }
}
#endif

// Lanes 0-7 from lo, 8-15 from hi: y = t 2^15 in float, rounded to the nearest integer (ties
// to even) z, then floor((z + r) / 2^15), clamped to T's grid +-max(T). A NaN gives +max(T).
template <typename T>
inline Block<T> RoundToGrid(F32x8 lo, F32x8 hi, I32x8 r_lo, I32x8 r_hi) {
  constexpr float kTop = kGridMax<T> * (1 << kFractionBits);
#if defined(__AVX2__)
  // The upper bound in float (minps returns its second operand for a NaN). Below, cvtps2dq
  // gives INT_MIN for anything under -2^31 and the packs saturate, so -max(T) - 1 is the only
  // value past the lower bound, and OnGrid raises it. packssdw packs within 128-bit
  // halves ([lo 0-3, hi 0-3, lo 4-7, hi 4-7]); vpermq puts the words in order.
  const __m256 top = _mm256_set1_ps(kTop);
  const auto grid = [&](F32x8 y, I32x8 r) {
    const __m256i z = _mm256_cvtps_epi32(_mm256_min_ps(reinterpret_cast<__m256>(y), top));
    return _mm256_srai_epi32(_mm256_add_epi32(z, reinterpret_cast<__m256i>(r)), kFractionBits);
  };
  const __m256i words = _mm256_permute4x64_epi64(_mm256_packs_epi32(grid(lo, r_lo), grid(hi, r_hi)), 0xd8);
  return OnGrid<T>(words);
#else
  Block<T> out;
  for (std::size_t i = 0; i < kBlock; ++i) {
    float y = i < 8 ? lo[i] : hi[i - 8];
    y = y < kTop ? y : kTop;  // NaN: the top
    const std::int32_t z = y >= -0x1.0p31f ? static_cast<std::int32_t>(std::nearbyint(y))  // to nearest, even
                                           : std::numeric_limits<std::int32_t>::min();
    const std::int32_t q = (z + (i < 8 ? r_lo[i] : r_hi[i - 8])) >> kFractionBits;
    constexpr std::int32_t kMax = std::numeric_limits<T>::max();
    out[i] = static_cast<T>(std::clamp(q, -kMax, kMax));
  }
  return out;
#endif
}

// Row x's block moved from q by the float form of the step: (q - c x) * shrink rounded by
// RoundToGrid, `scale` = shrink 2^15.
template <typename T, typename D>
inline Block<T> FloatStepBlock(Block<T> q, const D* x, float c, float scale, I32x8 r_lo, I32x8 r_hi) {
  const F32x8 t_lo = (Floats<false, T>(q) - c * PrivateFloats<false>(x)) * scale;
  const F32x8 t_hi = (Floats<true, T>(q) - c * PrivateFloats<true>(x)) * scale;
  return RoundToGrid<T>(t_lo, t_hi, r_lo, r_hi);
}

// The fixed-point form of a step under stochastic rounding (module comment): with s fraction
// bits, q' = floor((A q + b x' + r) / 2^s) clamped to the grid, r uniform on the integers
// [0, 2^s), x' = x 2^k, and the step's two coefficients rounded stochastically once per step
// (u, u' uniform on [0, 1)):
//   A = 2^s + floor(-(1 - shrink) 2^s + u),   b = floor(-c shrink 2^(s-k) + u').
// Given A and b each coordinate's rounding is exact; over their draws E A = 2^s shrink and
// E b x' = -c shrink x 2^s (to within 2^-24), so E q' = (q - c x) shrink, the float form's
// mean, before clamping. A and b are int16 operands of pmaddwd, which multiplies each
// coordinate's pair (q, x') by (A, b) and adds them in one instruction; with |A|, |b| <= 2^14
// and |x'| < 2^15, |A q + b x' + r| < 2^31 for every pair of widths.
// - k, the data's shift: the least in [0, 8] with |c shrink| < 2^k (int8 values fit an int16
//   8 bits over). It gives b the range of a step of up to 2^8 quanta a data quantum while
//   keeping b's resolution relative to the step.
// - s: the most bits, at most 14, that keep |A|, |b| <= 2^14 (14 unless the step is 2^8
//   quanta a data quantum or more).
// What the draws add to a coordinate's variance: q^2 Var(A) / 2^2s + x'^2 Var(b) / 2^2s, each
// Var at most 1/4, against stochastic rounding's own (up to 1/4).
// - A's fraction is about eta l2 2^s, so the first is at most q^2 eta l2 / 2^s: at the int16
//   grid's end with s = 14, 2^16 eta l2 quanta^2 (0.07 at eta l2 = 10^-6).
// - The second, with s = 14: with k = 0, at most (x / 2^14)^2 / 4, 10^-5 at the int8 grid's
//   end; with k > 0 (then 2^k <= 2 |c shrink|) at most 2^-28 (c x)^2, a standard deviation of
//   2^-14 of the step's own size.
// Int8 data only: with int16 data's values b's resolution, 2^-14 quanta a data quantum, would
// add up to 1 quantum^2 at the data grid's end; int16 data keeps the float form.
// Against the float form, per 16 coordinates: no conversions to and from float, no float
// arithmetic, no rounding. A first version standalone (2,000 int8 values a row, int16 model,
// rows from memory, the two alternated): 0.80-0.88 -> 0.47-0.58 us a step.
struct FixedStep {
  int bits = 0;   // s
  int shift = 0;  // k
  std::int16_t a = 0, b = 0;  // A and b
  // (A, b) in one int32 lane, A in the low half: pmaddwd's operand against each (q, x') lane.
  std::int32_t Lane() const {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint16_t>(b)) << 16 |
                                     static_cast<std::uint16_t>(a));
  }
};

// The most k above: the bits an int16 holds beyond an int8's.
inline constexpr int kMaxDataShift = 8;

// The step's fixed-point form from c, shrink and two uniform 32-bit numbers; nullopt where it
// has none: c not finite (the float form clamps it; NaN gives +max), shrink outside [0, 1], or
// a step that needs s < 1 (2^13 quanta of the model per unit of x' or more: the grid's ends are
// reached anyway, and the float form clamps). Always inlined: called, its optional came back
// through the stack in pieces that one load then read whole, a store-forwarding stall that perf
// put at a third of the call, itself a tenth of the kernel's time.
[[gnu::always_inline]] inline std::optional<FixedStep> MakeFixedStep(float c, float shrink, std::uint32_t u, std::uint32_t v) {
  if (!std::isfinite(c) || !(shrink >= 0 && shrink <= 1)) return std::nullopt;
  // In double, exactly: products of two floats, powers of 2, and 24-bit fractions. No libm call
  // (ldexp and ilogb were a fifth of a step's time outside the kernel): a product with an exact
  // power of 2 is ldexp's value, and a double's exponent field is ilogb's for a normal value;
  // 0 and subnormals read -1023, which every clamp below treats as ilogb's smaller value.
  const auto pow2 = [](int n) { return std::bit_cast<double>(static_cast<std::uint64_t>(n + 1023) << 52); };
  const auto exponent = [](double x) {
    return static_cast<int>(std::bit_cast<std::uint64_t>(x) >> 52 & 0x7ff) - 1023;
  };
  const double a = -(1.0 - static_cast<double>(shrink));
  const double step = -static_cast<double>(c) * static_cast<double>(shrink);
  const int shift = std::clamp(exponent(step) + 1, 0, kMaxDataShift);  // |step| < 2^k
  const double b = step * pow2(-shift);
  const int bits = std::min(14, 13 - exponent(std::max(std::abs(a), std::abs(b))));  // largest 2^s < 2^14
  if (bits < 1) return std::nullopt;
  const auto draw = [bits, &pow2](double coefficient, std::uint32_t uniform) {
    return static_cast<std::int16_t>(std::floor(coefficient * pow2(bits) + (uniform >> 8) * 0x1.0p-24));
  };
  return FixedStep{bits, shift, static_cast<std::int16_t>((1 << bits) + draw(a, u)), draw(b, v)};
}

// Row x's block moved from q by the fixed-point form of `step`: lanes 0-7 of r_lo round
// coordinates 0-3 and 8-11, those of r_hi 4-7 and 12-15 (the order of the AVX2 form's pairs).
template <typename T>
inline Block<T> FixedStepBlock(Block<T> q, const std::int8_t* x, FixedStep step, I32x8 r_lo, I32x8 r_hi) {
#if defined(__AVX2__)
  // Each 32-bit lane of a pair vector holds (q_j, x'_j), so pmaddwd with (A, b) gives
  // A q_j + b x'_j. unpacklo/hi pair coordinates within 128-bit halves (lo: 0-3, 8-11; hi: 4-7,
  // 12-15), and packssdw packs lo's and hi's halves side by side, which puts the words back in
  // order. The packs saturate, so -max(T) - 1 is the only value past the grid's lower end;
  // OnGrid raises it.
  const __m256i qw = reinterpret_cast<__m256i>(Widen<T>(q));
  const __m256i xw =
      _mm256_sll_epi16(reinterpret_cast<__m256i>(Widen<std::int8_t>(PrivateBlock(x))), _mm_cvtsi32_si128(step.shift));
  const __m256i ab = _mm256_set1_epi32(step.Lane());
  const __m128i bits = _mm_cvtsi32_si128(step.bits);
  const auto grid = [&](__m256i pairs, I32x8 r) {
    return _mm256_sra_epi32(_mm256_add_epi32(_mm256_madd_epi16(pairs, ab), reinterpret_cast<__m256i>(r)), bits);
  };
  const __m256i words =
      _mm256_packs_epi32(grid(_mm256_unpacklo_epi16(qw, xw), r_lo), grid(_mm256_unpackhi_epi16(qw, xw), r_hi));
  return OnGrid<T>(words);
#else
  Block<T> out;
  for (std::size_t i = 0; i < kBlock; ++i) {
    const std::size_t lane = (i & 3) | ((i >> 1) & 4);
    const std::int32_t r = (i & 4) != 0 ? r_hi[lane] : r_lo[lane];
    const std::int32_t z = std::int32_t{step.a} * q[i] + std::int32_t{step.b} * (x[i] * (1 << step.shift)) + r;
    constexpr std::int32_t kMax = std::numeric_limits<T>::max();
    out[i] = static_cast<T>(std::clamp(z >> step.bits, -kMax, kMax));  // >>: floor (C++20)
  }
  return out;
#endif
}

#if defined(__AVX512BW__)
// FixedStepBlock for the pair at block b (even): r_lo and r_hi hold block b's r_lo, r_hi in
// lanes 0-7 and block b + 1's in lanes 8-15. The 512-bit unpacks, pmaddwd, shifts and packs act
// on each 128-bit lane alone, so the pair's first half is block b's 256-bit result and its
// second block b + 1's, bit for bit; vpmovswb saturates 32 words into bytes in order.
template <typename T>
inline Pair<T> FixedStepPair(Pair<T> q, const std::int8_t* x, FixedStep step, I32x16 r_lo, I32x16 r_hi) {
  const __m512i qw = WidenPair<T>(q);
  const __m512i xw = _mm512_sll_epi16(WidenPair<std::int8_t>(Private<I8x32>(x)), _mm_cvtsi32_si128(step.shift));
  const __m512i ab = _mm512_set1_epi32(step.Lane());
  // (Shifts and narrowing written so that GCC 12 warns of no undefined source: its
  // _mm512_sra_epi32 and _mm512_cvtsepi16_epi8 trip -Wmaybe-uninitialized, GCC bug 105593.)
  const auto grid = [&](__m512i pairs, I32x16 r) {
    return reinterpret_cast<__m512i>(
        reinterpret_cast<I32x16>(MultiplyAddPairsInto(reinterpret_cast<__m512i>(r), pairs, ab)) >> step.bits);
  };
  const __m512i words =
      _mm512_packs_epi32(grid(_mm512_unpacklo_epi16(qw, xw), r_lo), grid(_mm512_unpackhi_epi16(qw, xw), r_hi));
  if constexpr (sizeof(T) == 1) {  // saturated, then -max(T) - 1 raised, as OnGrid
    return reinterpret_cast<I8x32>(_mm256_max_epi8(_mm512_maskz_cvtsepi16_epi8(~0u, words), _mm256_set1_epi8(-127)));
  } else {
    return reinterpret_cast<I16x32>(_mm512_max_epi16(words, _mm512_set1_epi16(-32767)));
  }
}
#endif

// UpdateBlocks without a pair form.
struct NoPairs {};

// The blocks of the shared model moved by row x's step, `block(q, x, r_lo, r_hi)` giving each
// block's new value from its old one, with r from `stream` at `bits` bits (or 2^(bits - 1),
// to nearest, without a stream); with `next`, also the next row's dot product (DenseUpdate).
// `pair`, under AVX-512 with a stream: the same for two blocks at once (FixedStepPair).
template <bool kAsm, typename T, typename D, typename StepBlock, typename StepPair = NoPairs>
std::int64_t UpdateBlocks(std::uint64_t* model, const D* x, std::size_t blocks, RoundingStream* stream, int bits,
                          const D* next, const D* ahead, StepBlock block, [[maybe_unused]] StepPair pair = {}) {
  // No lambda refers to `dot`: with its address taken the compiler kept it in memory through
  // every asm store (standalone, rows in cache: 0.81 against 0.59 us a step).
  ExactDot<T, D> dot;
  std::size_t b = 0;
  if (stream == nullptr) {
    const I32x8 half = I32x8{} + (1 << (bits - 1));
    for (; b < blocks; ++b) {
      std::uint64_t* words = model + b * kWordsPerBlock<T>;
      const Block<T> updated = block(LoadBlock<kAsm, T>(words), x + b * kBlock, half, half);
      StoreBlock<kAsm, T>(words, updated);
      if (next != nullptr) dot.Add(updated, PrivateBlock(next + b * kBlock), ahead + b * kBlock, b);
    }
    return dot.Value();
  }
  // s_k: set (b + k) % 4 for block b; the four rotate a place a block, in registers.
  U32x8 s0 = stream->sets[0], s1 = stream->sets[1], s2 = stream->sets[2], s3 = stream->sets[3];
#if defined(__AVX512BW__)
  if constexpr (!std::is_same_v<StepPair, NoPairs>) {
    // Pairs of blocks, each pair's two sets side by side (FixedStepPair), then a last block alone.
    U32x16 p0 = __builtin_shufflevector(s0, s1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    U32x16 p1 = __builtin_shufflevector(s2, s3, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    I32x16 lo, hi;
    for (; b + 2 <= blocks; b += 2) {
      RoundingStream::Next(p0, bits, lo, hi);
      std::uint64_t* words = model + b * kWordsPerBlock<T>;
      const Pair<T> updated = pair(LoadWords<kAsm, Pair<T>>(words), x + b * kBlock, lo, hi);
      StoreWords<kAsm>(words, updated);
      if (next != nullptr) dot.Add(updated, Private<Pair<D>>(next + b * kBlock), ahead + b * kBlock, b);
      std::swap(p0, p1);
    }
    s0 = __builtin_shufflevector(p0, p0, 0, 1, 2, 3, 4, 5, 6, 7);
    s1 = __builtin_shufflevector(p0, p0, 8, 9, 10, 11, 12, 13, 14, 15);
    s2 = __builtin_shufflevector(p1, p1, 0, 1, 2, 3, 4, 5, 6, 7);
    s3 = __builtin_shufflevector(p1, p1, 8, 9, 10, 11, 12, 13, 14, 15);
  }
#endif
  I32x8 lo, hi;
  for (; b < blocks; ++b) {
    RoundingStream::Next(s0, bits, lo, hi);
    std::uint64_t* words = model + b * kWordsPerBlock<T>;
    const Block<T> updated = block(LoadBlock<kAsm, T>(words), x + b * kBlock, lo, hi);
    StoreBlock<kAsm, T>(words, updated);
    if (next != nullptr) dot.Add(updated, PrivateBlock(next + b * kBlock), ahead + b * kBlock, b);
    const U32x8 used = s0;
    s0 = s1;
    s1 = s2;
    s2 = s3;
    s3 = used;
  }
  stream->sets[blocks % 4] = s0;
  stream->sets[(blocks + 1) % 4] = s1;
  stream->sets[(blocks + 2) % 4] = s2;
  stream->sets[(blocks + 3) % 4] = s3;
  return dot.Value();
}

// The shared model's blocks moved by row x's step with coefficient c: each coordinate
// q <- (q - c x) * shrink rounded onto T's grid (module comment), stochastically with r from
// `stream` (int8 data in fixed point: FixedStep), or to nearest when `stream` is null.
// With `next` (a row as long as x), also the next step's dot product, exact, summed from each
// block as this step stores it: the model the next step would load, less what other workers
// write meanwhile (an asynchronous read HOGWILD! allows; one worker's result is the same bits
// as a DenseDot after the update). It saves the next step a pass over the model: standalone,
// 2,000 coordinates a row, 0.71-0.87 -> 0.59 us a step with the rows in cache. `ahead`: the
// row after next (or `next` itself), asked for a line at a time as `next` is read.
template <bool kAsm, typename T, typename D>
std::int64_t DenseUpdate(std::uint64_t* model, const D* x, std::size_t blocks, float c, float shrink,
                         RoundingStream* stream, const D* next = nullptr, const D* ahead = nullptr) {
  if constexpr (sizeof(D) == 1) {  // int8 data: FixedStep
    if (stream != nullptr) {
      const U32x8 u = RoundingStream::Step(stream->sets[1]);  // A's and b's draws
      if (const std::optional<FixedStep> step = MakeFixedStep(c, shrink, u[0], u[1])) {
        const auto block = [step = *step](Block<T> q, const D* row, I32x8 r_lo, I32x8 r_hi) {
          return FixedStepBlock<T>(q, row, step, r_lo, r_hi);
        };
#if defined(__AVX512BW__)
        return UpdateBlocks<kAsm, T>(model, x, blocks, stream, step->bits, next, ahead, block,
                                     [step = *step](Pair<T> q, const D* row, I32x16 r_lo, I32x16 r_hi) {
                                       return FixedStepPair<T>(q, row, step, r_lo, r_hi);
                                     });
#else
        return UpdateBlocks<kAsm, T>(model, x, blocks, stream, step->bits, next, ahead, block);
#endif
      }
    }
  }
  const float scale = shrink * (1 << kFractionBits);  // exact: a power of 2
  return UpdateBlocks<kAsm, T>(model, x, blocks, stream, kFractionBits, next, ahead,
                               [c, scale](Block<T> q, const D* row, I32x8 r_lo, I32x8 r_hi) {
                                 return FloatStepBlock<T>(q, row, c, scale, r_lo, r_hi);
                               });
}

}  // namespace corral::internal::buckwild
