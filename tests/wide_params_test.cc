// The dense kernels' wide access to a shared model (models/src/wide_params.h): the asm variant
// and the lane-by-lane atomic one give the same bits (sanitizer builds run the second), both
// agree with a double-precision reference, and a wide store is never seen torn within a
// coordinate by a concurrent wide load.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "models/src/wide_params.h"

namespace corral::detail {
namespace {

std::vector<float> Values(std::size_t n, std::uint32_t seed) {
  std::vector<float> v(n);
  for (float& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<float>(seed >> 8) * 0x1.0p-23f - 1.0f;
  }
  return v;
}

std::uint32_t Bits(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// Every length around the vector and unrolled widths, so that each tail is taken.
TEST(WideParams, DotIsOneSumInEveryBuildAndCloseToExact) {
  for (std::size_t n = 0; n <= 6 * kWideLanes + 3; ++n) {
    std::vector<float> w = Values(n, 1), x = Values(n, 2);
    const Params p(w);
    const float lanes = WideDot<false>(p, x, x.data());
    if constexpr (kWideAsmAvailable) {
      EXPECT_EQ(Bits(WideDot<true>(p, x, x.data())), Bits(lanes)) << n;
    }
    double exact = 0, magnitude = 0;
    for (std::size_t u = 0; u < n; ++u) {
      exact += static_cast<double>(w[u]) * x[u];
      magnitude += std::abs(static_cast<double>(w[u]) * x[u]);
    }
    EXPECT_NEAR(lanes, exact, 1e-6 * (magnitude + 1)) << n;
  }
}

TEST(WideParams, UpdateIsTheProximalStepOfEachCoordinate) {
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, kWideLanes - 1, kWideLanes, 4 * kWideLanes + 1,
                              std::size_t{2000}}) {
    const std::vector<float> x = Values(n, 3), shrink = Values(n, 4), start = Values(n, 5);
    std::vector<float> lanes = start, wide = start;
    WideShrinkUpdate<false>(Params(lanes), x, 0.375f, shrink.data());
    if constexpr (kWideAsmAvailable) WideShrinkUpdate<true>(Params(wide), x, 0.375f, shrink.data());
    for (std::size_t u = 0; u < n; ++u) {
      const double expected = (static_cast<double>(start[u]) - 0.375 * x[u]) * shrink[u];
      EXPECT_NEAR(lanes[u], expected, 1e-6) << u;
      if constexpr (kWideAsmAvailable) {
        EXPECT_EQ(Bits(wide[u]), Bits(lanes[u])) << u;
      }
    }
  }
}

// The fused kernel (the hogwild worker's step on dense rows) is the update with one shrink
// factor followed by the dot with the next row, bit for bit: the model it stores and the sum it
// returns, in both variants, at every length around the vector and unrolled widths.
template <bool kAsm>
void FusedIsUpdateThenDot() {
  for (std::size_t n = 0; n <= 6 * kWideLanes + 3; ++n) {
    const std::vector<float> x = Values(n, 6), next = Values(n, 7), start = Values(n, 8);
    const std::vector<float> shrink(n, 0.96875f);
    std::vector<float> fused = start, apart = start;
    const float sum = WideShrinkUpdateDot<kAsm>(Params(fused), x, 0.375f, 0.96875f, next.data(), next.data());
    WideShrinkUpdate<kAsm>(Params(apart), x, 0.375f, shrink.data());
    EXPECT_EQ(Bits(sum), Bits(WideDot<kAsm>(Params(apart), next, next.data()))) << n;
    for (std::size_t u = 0; u < n; ++u) EXPECT_EQ(Bits(fused[u]), Bits(apart[u])) << n << " " << u;
  }
}

TEST(WideParams, FusedUpdateAndDotIsTheUpdateThenTheDotLaneByLane) { FusedIsUpdateThenDot<false>(); }

TEST(WideParams, FusedUpdateAndDotIsTheUpdateThenTheDotWithTheWideInstructions) {
  if constexpr (kWideAsmAvailable) {
    FusedIsUpdateThenDot<true>();
  } else {
    GTEST_SKIP() << "no wide instructions on this target";
  }
}

// Two writers store whole vectors of A or of B over the same coordinates while a reader loads
// them: every coordinate read is A or B, never a mix of their bytes (the contract of Params'
// relaxed accesses, which the wide ones keep).
template <bool kAsm>
void NeverTorn() {
  alignas(64) static float shared[4 * kWideLanes];
  const float a = 1.0f, b = -0x1.fffffep-100f;  // every byte differs
  std::ranges::fill(shared, a);
  std::atomic<bool> stop{false};
  auto writer = [&](float v) {
    WideFloats vec;
    for (std::size_t i = 0; i < kWideLanes; ++i) vec[i] = v;
    while (!stop.load(std::memory_order_relaxed)) {
      for (std::size_t u = 0; u < 4 * kWideLanes; u += kWideLanes) WideStore<kAsm>(shared + u, vec);
      std::this_thread::yield();  // 16 workers on 2 cores: no unbounded spinning
    }
  };
  std::thread ta(writer, a), tb(writer, b);
  std::size_t torn = 0;
  for (int round = 0; round < 200000; ++round) {
    // Offsets 0 and 1: aligned vectors and vectors across the alignment (a line split too).
    for (std::size_t u = 0; u + kWideLanes <= 4 * kWideLanes; u += kWideLanes - 1) {
      const WideFloats v = WideLoad<kAsm>(shared + u);
      for (std::size_t i = 0; i < kWideLanes; ++i) torn += (Bits(v[i]) != Bits(a) && Bits(v[i]) != Bits(b)) ? 1 : 0;
    }
    if (round % 64 == 0) std::this_thread::yield();
  }
  stop.store(true, std::memory_order_relaxed);
  ta.join();
  tb.join();
  EXPECT_EQ(torn, 0u);
}

TEST(WideParams, ACoordinateIsNeverTornLaneByLane) { NeverTorn<false>(); }

TEST(WideParams, ACoordinateIsNeverTornByTheWideInstructions) {
  if constexpr (kWideAsmAvailable) {
    NeverTorn<true>();
  } else {
    GTEST_SKIP() << "no wide instructions on this target";
  }
}

}  // namespace
}  // namespace corral::detail
