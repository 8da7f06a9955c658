// buckwild's dense kernels (engine/src/modes/buckwild_kernels.h), at every pair of model and
// data widths: the dot product is the exact integer sum, also past the int32 lanes' flush; the
// update rounds to nearest within half a quantum, and stochastically without bias (the
// fixed-point step's two coefficients too); values
// beyond the grid are clamped; padding stays zero; the fixed-point update is each block's step
// in turn (under AVX-512, two blocks at a time with the same bits); the asm variant and the
// word-by-word one (the sanitizer builds') give the same bits; and a stored block (or pair) is
// never seen torn within a coordinate by a concurrent load.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "engine/src/modes/buckwild_kernels.h"

namespace corral::internal::buckwild {
namespace {

template <typename E>
std::vector<E> Grid(std::size_t n, std::uint32_t seed, bool extremes = false) {
  const int max = std::numeric_limits<E>::max();
  std::vector<E> v(n);
  for (E& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<E>(extremes ? ((seed >> 31) != 0 ? max : -max) : static_cast<int>(seed >> 8) % (2 * max + 1) - max);
  }
  return v;
}

// The model's words holding `grid`, padded to whole blocks.
template <typename T>
std::vector<std::uint64_t> Words(const std::vector<T>& grid) {
  std::vector<std::uint64_t> words(PaddedLength(grid.size()) * sizeof(T) / sizeof(std::uint64_t), 0);
  if (!grid.empty()) std::memcpy(words.data(), grid.data(), grid.size() * sizeof(T));  // not null
  return words;
}

template <typename T>
std::vector<T> Values(const std::vector<std::uint64_t>& words, std::size_t n) {
  std::vector<T> out(n);
  if (n > 0) std::memcpy(out.data(), words.data(), n * sizeof(T));
  return out;
}

template <typename T, typename D>
struct Widths {
  using Model = T;
  using Data = D;
};
using AllWidths = ::testing::Types<Widths<std::int16_t, std::int8_t>, Widths<std::int8_t, std::int8_t>,
                                   Widths<std::int16_t, std::int16_t>, Widths<std::int8_t, std::int16_t>>;

template <typename P>
class BuckwildKernels : public ::testing::Test {};
TYPED_TEST_SUITE(BuckwildKernels, AllWidths);

TYPED_TEST(BuckwildKernels, DotIsTheExactSumInBothVariants) {
  using T = typename TypeParam::Model;
  using D = typename TypeParam::Data;
  // 300 blocks pass int16 x int8's flush of the int32 lanes (258 blocks); at the grids' ends
  // the sum is as large as it gets.
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{16}, std::size_t{37}, std::size_t{4800}}) {
    for (const bool extremes : {false, true}) {
      const std::vector<T> q = Grid<T>(n, 1, extremes);
      std::vector<D> x = Grid<D>(PaddedLength(n), 2, extremes);
      std::fill(x.begin() + static_cast<std::ptrdiff_t>(n), x.end(), D{0});
      std::int64_t exact = 0;
      for (std::size_t j = 0; j < n; ++j) exact += std::int64_t{q[j]} * x[j];
      const std::vector<std::uint64_t> words = Words(q);
      const std::size_t blocks = PaddedLength(n) / kBlock;
      EXPECT_EQ((DenseDot<false, T>(words.data(), x.data(), blocks, x.data())), exact) << n << " " << extremes;
      if constexpr (detail::kWideAsmAvailable) {
        EXPECT_EQ((DenseDot<true, T>(words.data(), x.data(), blocks, x.data())), exact) << n << " " << extremes;
      }
    }
  }
}

// To nearest, each coordinate within half a quantum of t; stochastically, within a quantum of
// it, plus for int8 data what the draws of the step's coefficients can move it (FixedStep:
// less than (|q| + |x'|) / 2^s); both clamped to the grid, and a NaN step gives +max.
TYPED_TEST(BuckwildKernels, UpdateRoundsAndClampsAndKeepsThePaddingZero) {
  using T = typename TypeParam::Model;
  using D = typename TypeParam::Data;
  constexpr double kMax = std::numeric_limits<T>::max();
  const std::size_t n = 37;  // 3 blocks, the last one padded
  const std::vector<T> q = Grid<T>(n, 3);
  std::vector<D> x = Grid<D>(PaddedLength(n), 4);
  std::fill(x.begin() + static_cast<std::ptrdiff_t>(n), x.end(), D{0});
  Rng rng(13, 0);
  RoundingStream stream;
  stream.Seed(rng);
  // Small steps, steps that reach past the grid's ends, and a non-finite one; a shrink whose
  // fraction needs all of A's bits, and one that needs few.
  for (const bool stochastic : {false, true}) {
    for (const float shrink : {0.9990234f, 0.99999f}) {
      for (const float c : {0.0f, 0.37f / std::numeric_limits<D>::max(), -2.5f, 3e3f, -1e30f, NAN}) {
        std::vector<std::uint64_t> lanes = Words(q), wide = Words(q);
        RoundingStream copy = stream;
        DenseUpdate<false, T>(lanes.data(), x.data(), PaddedLength(n) / kBlock, c, shrink, stochastic ? &stream : nullptr);
        if constexpr (detail::kWideAsmAvailable) {
          DenseUpdate<true, T>(wide.data(), x.data(), PaddedLength(n) / kBlock, c, shrink, stochastic ? &copy : nullptr);
          EXPECT_EQ(lanes, wide) << c;
        }
        const std::optional<FixedStep> fixed = sizeof(D) == 1 ? MakeFixedStep(c, shrink, 0, 0) : std::nullopt;
        const std::vector<T> got = Values<T>(lanes, PaddedLength(n));
        for (std::size_t j = 0; j < n; ++j) {
          const double t = (static_cast<double>(q[j]) - static_cast<double>(c) * x[j]) * shrink;
          double tolerance = 0.5 + 1e-3;
          if (stochastic) {
            tolerance = 1 + (fixed ? (std::abs(q[j]) + std::abs(x[j]) * std::ldexp(1.0, fixed->shift)) /
                                         std::ldexp(1.0, fixed->bits)
                                   : 1e-3);
          }
          if (std::isnan(c)) {
            EXPECT_EQ(got[j], kMax) << j;  // documented: a NaN gives +max
          } else {
            EXPECT_NEAR(got[j], std::clamp(t, -kMax, kMax), tolerance) << stochastic << " " << c << " " << j;
          }
        }
        if (std::isfinite(c)) {
          for (std::size_t j = n; j < got.size(); ++j) EXPECT_EQ(got[j], 0) << c << " " << j;
        }
      }
    }
  }
}

// The fixed-point step (int8 data): k the least in [0, 8] with |c shrink| < 2^k, s in [1, 14],
// |A|, |b| <= 2^14, and over evenly spread draws the means of A and b are 2^s shrink and
// -c shrink 2^(s-k) (to within the draws' spacing); no fixed form for a step it cannot hold.
TEST(BuckwildFixedStep, RoundsItsCoefficientsWithoutBias) {
  for (const float shrink : {1.0f, 0.99999f, 0.9990234f, 0.75f, 0.0f}) {
    for (const float c : {0.0f, 1e-7f, -0.37f, 3.0f, -250.0f, 4000.0f}) {
      const std::optional<FixedStep> first = MakeFixedStep(c, shrink, 0, 0);
      ASSERT_TRUE(first) << c << " " << shrink;
      const int bits = first->bits, shift = first->shift;
      EXPECT_GE(bits, 1);
      EXPECT_LE(bits, 14);
      EXPECT_GE(shift, 0);
      EXPECT_LE(shift, kMaxDataShift);
      const double size = std::abs(static_cast<double>(c) * shrink);
      if (shift < kMaxDataShift) {
        EXPECT_LT(size, std::ldexp(1.0, shift)) << c << " " << shrink;
      }
      if (shift > 0) {
        EXPECT_GE(size, std::ldexp(1.0, shift - 1)) << c << " " << shrink;
      }
      constexpr int kDraws = 4096;  // u = i / 4096
      double a_sum = 0, b_sum = 0;
      for (std::uint32_t i = 0; i < kDraws; ++i) {
        const std::optional<FixedStep> step = MakeFixedStep(c, shrink, i << 20, (kDraws - 1 - i) << 20);
        ASSERT_TRUE(step);
        ASSERT_EQ(step->bits, bits);
        ASSERT_EQ(step->shift, shift);
        EXPECT_LE(std::abs(step->a), 1 << 14);
        EXPECT_LE(std::abs(step->b), 1 << 14);
        a_sum += step->a;
        b_sum += step->b;
      }
      EXPECT_NEAR(a_sum / kDraws, std::ldexp(static_cast<double>(shrink), bits), 1.0 / kDraws) << c << " " << shrink;
      EXPECT_NEAR(b_sum / kDraws, -std::ldexp(static_cast<double>(c) * shrink, bits - shift), 1.0 / kDraws)
          << c << " " << shrink;
    }
  }
  for (const float c : {NAN, INFINITY, 1e9f}) EXPECT_FALSE(MakeFixedStep(c, 0.9f, 0, 0)) << c;
  for (const float shrink : {-0.5f, 1.5f, NAN}) EXPECT_FALSE(MakeFixedStep(0.1f, shrink, 0, 0)) << shrink;
}

// The next step's dot product summed from the blocks as they are stored: DenseDot's value after
// the update, in both variants, stochastic rounding or not.
TYPED_TEST(BuckwildKernels, UpdateSumsTheNextRowsDotFromTheStoredBlocks) {
  using T = typename TypeParam::Model;
  using D = typename TypeParam::Data;
  const std::size_t n = 4800;  // past int16 x int8's flush
  std::vector<D> x = Grid<D>(PaddedLength(n), 5), next = Grid<D>(PaddedLength(n), 6, true);
  for (std::vector<D>* row : {&x, &next}) std::fill(row->begin() + static_cast<std::ptrdiff_t>(n), row->end(), D{0});
  for (const bool stochastic : {false, true}) {
    Rng rng(12, 0);
    RoundingStream stream;
    stream.Seed(rng);
    std::vector<std::uint64_t> lanes = Words(Grid<T>(n, 7)), wide = lanes;
    const std::size_t blocks = PaddedLength(n) / kBlock;
    RoundingStream copy = stream;
    const std::int64_t fused = DenseUpdate<false, T>(lanes.data(), x.data(), blocks, 0.25f, 0.999f,
                                                     stochastic ? &stream : nullptr, next.data(), next.data());
    EXPECT_EQ(fused, (DenseDot<false, T>(lanes.data(), next.data(), blocks, next.data()))) << stochastic;
    if constexpr (detail::kWideAsmAvailable) {
      EXPECT_EQ((DenseUpdate<true, T>(wide.data(), x.data(), blocks, 0.25f, 0.999f, stochastic ? &copy : nullptr,
                                      next.data(), next.data())),
                fused);
      EXPECT_EQ(wide, lanes);
    }
  }
}

// A step of a fraction f of a quantum lands on the grid's two neighbours with the
// probabilities that make its mean the step itself; both variants draw the same numbers. Also
// near the grid's end with a shrink, where the draw of A moves the result too (FixedStep).
TYPED_TEST(BuckwildKernels, StochasticRoundingIsUnbiased) {
  using T = typename TypeParam::Model;
  using D = typename TypeParam::Data;
  Rng rng(11, 0);
  RoundingStream lanes_stream;
  lanes_stream.Seed(rng);
  RoundingStream wide_stream = lanes_stream;
  const int trials = 100000;
  const T top = std::numeric_limits<T>::max() - 3;
  const D end = std::numeric_limits<D>::max();
  struct Case {
    T start;
    float shrink;
    D x;  // the row's values: +-x
  };
  for (const Case& one : {Case{T{5}, 1.0f, D{1}}, Case{top, 0.9999f, D{1}}, Case{T{5}, 1.0f, end}}) {
    const T start = one.start;
    const float shrink = one.shrink;
    std::vector<D> x(kBlock);
    for (std::size_t i = 0; i < kBlock; ++i) x[i] = static_cast<D>(i % 2 == 0 ? one.x : -one.x);
    for (const float f : {0.001f, 0.25f, 0.5f, 0.75f, 0.97f}) {
      const float c = f / static_cast<float>(one.x);  // steps of -f, +f quanta
      std::vector<double> error(kBlock, 0), square(kBlock, 0);
      for (int k = 0; k < trials; ++k) {
        std::vector<std::uint64_t> a = Words(std::vector<T>(kBlock, start)), b = a;
        DenseUpdate<false, T>(a.data(), x.data(), 1, c, shrink, &lanes_stream);
        if constexpr (detail::kWideAsmAvailable) {
          DenseUpdate<true, T>(b.data(), x.data(), 1, c, shrink, &wide_stream);
          ASSERT_EQ(a, b);
        }
        const std::vector<T> got = Values<T>(a, kBlock);
        for (std::size_t i = 0; i < kBlock; ++i) {
          const double e = got[i] - (start - static_cast<double>(c) * x[i]) * shrink;
          error[i] += e;
          square[i] += e * e;
        }
      }
      // Each mean error within 5 standard errors (measured), plus the resolution 2^-16; where
      // A is exact, the result on the two neighbours of the step (a spread of at most 1/2),
      // also with the data at its grid's end (b's resolution).
      for (std::size_t i = 0; i < kBlock; ++i) {
        const double mean = error[i] / trials, sd = std::sqrt(square[i] / trials - mean * mean);
        EXPECT_LT(std::abs(mean), 5 * sd / std::sqrt(trials) + 0x1.0p-16) << c << " " << shrink << " " << i;
        if (shrink == 1.0f) {
          EXPECT_LE(sd, 0.5 + 1e-9) << c << " " << one.x << " " << i;
        }
      }
    }
  }
}

// The update is each block's FixedStepBlock in turn, block b rounded with the stream's set
// b % 4, and leaves the stream where those draws end: under AVX-512 it holds the pairs' form
// (FixedStepPair, vpmovswb for an int8 model) to the blocks' bits, at every count of blocks a
// pair loop can end on, and the next row's dot product to the stored blocks.
template <typename T>
void BlocksStepsInTurn() {
  using D = std::int8_t;
  for (const std::size_t blocks : {1, 2, 3, 4, 5, 6, 7, 125}) {
    const std::size_t n = blocks * kBlock;
    const std::vector<D> x = Grid<D>(n, 21), next = Grid<D>(n, 22);
    for (const float c : {0.37f, -3.5f, 300.0f}) {
      Rng rng(blocks, 0);
      RoundingStream stream;
      stream.Seed(rng);
      RoundingStream expected_stream = stream;
      std::vector<std::uint64_t> model = Words(Grid<T>(n, 23)), expected = model;
      for (int step = 0; step < 2; ++step) {  // the second from where the first left the stream
        const U32x8 u = RoundingStream::Step(expected_stream.sets[1]);
        const std::optional<FixedStep> fixed = MakeFixedStep(c, 0.999f, u[0], u[1]);
        ASSERT_TRUE(fixed) << c;
        std::int64_t dot = 0;
        for (std::size_t b = 0; b < blocks; ++b) {
          I32x8 lo, hi;
          RoundingStream::Next(expected_stream.sets[b % 4], fixed->bits, lo, hi);
          std::uint64_t* words = expected.data() + b * kWordsPerBlock<T>;
          const Block<T> q = FixedStepBlock<T>(LoadBlock<false, T>(words), x.data() + b * kBlock, *fixed, lo, hi);
          StoreBlock<false, T>(words, q);
          for (std::size_t i = 0; i < kBlock; ++i) dot += std::int64_t{q[i]} * next[b * kBlock + i];
        }
        EXPECT_EQ((DenseUpdate<detail::kWideAsmAvailable, T>(model.data(), x.data(), blocks, c, 0.999f, &stream,
                                                              next.data(), next.data())),
                  dot)
            << blocks << " " << c;
        EXPECT_EQ(model, expected) << blocks << " " << c << " " << step;
        for (std::size_t k = 0; k < RoundingStream::kSets; ++k) {
          for (int i = 0; i < 8; ++i) EXPECT_EQ(stream.sets[k][i], expected_stream.sets[k][i]) << blocks << " " << k;
        }
      }
    }
  }
}

TEST(BuckwildFixedStep, UpdateIsTheBlocksStepsInTurn) {
  BlocksStepsInTurn<std::int16_t>();
  BlocksStepsInTurn<std::int8_t>();
}

// Two writers store whole vectors V of int16 A or B (blocks, or pairs under AVX-512) over the
// same coordinates while a reader loads them: every coordinate read is A or B, never a mix of
// their bytes.
template <bool kAsm, typename V>
void NeverTorn() {
  using T = std::int16_t;
  constexpr std::size_t kPerVector = sizeof(V) / sizeof(std::uint64_t), kWords = 4 * kPerVector;
  alignas(64) static std::uint64_t shared[kWords];
  const T a = 0x00ff, b = 0x7f00;  // both bytes differ
  const V all_a = V{} + a, all_b = V{} + b;
  for (std::size_t w = 0; w < kWords; w += kPerVector) StoreWords<false>(shared + w, all_a);
  std::atomic<bool> stop{false};
  auto writer = [&](T v) {
    const V block = v == a ? all_a : all_b;
    while (!stop.load(std::memory_order_relaxed)) {
      for (std::size_t w = 0; w < kWords; w += kPerVector) StoreWords<kAsm>(shared + w, block);
      std::this_thread::yield();  // 16 workers on 2 cores: no unbounded spinning
    }
  };
  std::thread ta(writer, a), tb(writer, b);
  std::size_t torn = 0;
  for (int round = 0; round < 200000; ++round) {
    // Vectors at word offsets 0 and kPerVector - 1: aligned, and across the alignment (a line
    // split too).
    for (std::size_t w = 0; w + kPerVector <= kWords; w += kPerVector - 1) {
      const V v = LoadWords<kAsm, V>(shared + w);
      for (std::size_t i = 0; i < sizeof(V) / sizeof(T); ++i) torn += (v[i] != a && v[i] != b) ? 1 : 0;
    }
    if (round % 64 == 0) std::this_thread::yield();
  }
  stop.store(true, std::memory_order_relaxed);
  ta.join();
  tb.join();
  EXPECT_EQ(torn, 0u);
}

TEST(BuckwildBlocks, ACoordinateIsNeverTornWordByWord) { NeverTorn<false, I16x16>(); }

TEST(BuckwildBlocks, ACoordinateIsNeverTornByTheVectorInstructions) {
  if constexpr (detail::kWideAsmAvailable) {
    NeverTorn<true, I16x16>();
  } else {
    GTEST_SKIP() << "no vector instructions on this target";
  }
}

TEST(BuckwildBlocks, ACoordinateIsNeverTornByThePairsInstructions) {
#if defined(__AVX512BW__)
  if constexpr (detail::kWideAsmAvailable) {
    NeverTorn<true, I16x32>();
  } else {
    GTEST_SKIP() << "no vector instructions on this target";
  }
#else
  GTEST_SKIP() << "no AVX-512 on this target";
#endif
}

}  // namespace
}  // namespace corral::internal::buckwild
