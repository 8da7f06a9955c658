// What each codec promises (DESIGN.md §3): exact or correctly rounded casts, QSGD's levels,
// unbiasedness and variance bound, top-k's selection, the sign scale, rand-k's scaling, and
// error feedback losing nothing.
#include <corral/error.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "compress_test_util.h"
#include "engine/src/compress/codecs.h"

namespace corral {
namespace {

using internal::MakeCompressor;
using testing::Gaussian;

std::uint16_t Half(std::span<const std::byte> message, std::size_t i) {
  std::uint16_t h;
  std::memcpy(&h, message.data() + 2 * i, 2);
  return h;
}

TEST(Fp32, RoundTripIsExact) {
  std::vector<float> v = Gaussian(1001, 1, 1e30f);
  v[0] = std::numeric_limits<float>::denorm_min();
  v[1] = -std::numeric_limits<float>::infinity();
  auto c = MakeCompressor("none", v.size());
  Rng rng(1);
  EXPECT_EQ(testing::RoundTrip(*c, v, rng), v);
}

// The compiler's _Float16 conversion (IEEE round to nearest even) is the oracle.
TEST(Fp16, EncodeMatchesTheCompilersRoundToNearestEven) {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          65504.0f,
                          65519.99f,
                          65520.0f,
                          -1e6f,
                          0x1.0p-24f,
                          0x1.0p-25f,
                          0x1.8p-25f,
                          0x1.0p-26f,
                          1e-8f,
                          1.0f + 0x1.0p-11f,
                          1.0f + 0x1.8p-11f,
                          6.1e-5f,
                          std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()};
  std::mt19937 gen(1);
  for (int i = 0; i < 100'000; ++i)
    v.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(gen())));
  for (int i = 0; i < 100'000; ++i) {  // and values in half's range, where rounding matters
    v.push_back(
        std::ldexp(static_cast<float>(gen()) * 0x1.0p-32f, static_cast<int>(gen() % 46) - 30));
  }
  auto c = MakeCompressor("fp16", v.size());
  Rng rng(1);
  const std::vector<std::byte> message = testing::Encode(*c, v, rng);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto expect = std::bit_cast<std::uint16_t>(static_cast<_Float16>(v[i]));
    if (std::isnan(v[i])) {
      EXPECT_EQ(Half(message, i) & 0x7c00u, 0x7c00u);
      EXPECT_NE(Half(message, i) & 0x03ffu, 0u);
    } else {
      ASSERT_EQ(Half(message, i), expect) << std::hexfloat << v[i];
    }
  }
}

TEST(Fp16, DecodeIsExactForEveryHalf) {
  std::vector<std::byte> message(2 * 65536);
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    std::memcpy(message.data() + 2 * h, &bits, 2);
  }
  std::vector<float> out(65536);
  MakeCompressor("fp16", out.size())->Decode(message, out);
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float expect = static_cast<float>(std::bit_cast<_Float16>(static_cast<std::uint16_t>(h)));
    if (std::isnan(expect)) {
      EXPECT_TRUE(std::isnan(out[h])) << h;
    } else {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(out[h]), std::bit_cast<std::uint32_t>(expect)) << h;
    }
  }
}

// Oracle: the nearer of the two bfloat16 neighbours, ties to the even one.
TEST(Bf16, RoundsToNearestEven) {
  std::vector<float> v = Gaussian(50'000, 3, 1e3f);
  v.push_back(1.0f + 0x1.0p-8f);               // tie: down to 1 (even)
  v.push_back(1.0f + 0x1.8p-7f);               // tie: up to 1 + 2^-6 (even)
  v.push_back(1.0f + 0x1.0p-8f + 0x1.0p-20f);  // just above the tie: up
  auto c = MakeCompressor("bf16", v.size());
  Rng rng(1);
  const std::vector<std::byte> message = testing::Encode(*c, v, rng);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(v[i]);
    const std::uint32_t down = u >> 16, up = down + 1;
    const double below = std::fabs(std::bit_cast<float>(down << 16) - static_cast<double>(v[i]));
    const double above = std::fabs(std::bit_cast<float>(up << 16) - static_cast<double>(v[i]));
    const std::uint32_t expect = below < above   ? down
                                 : above < below ? up
                                                 : (down % 2 == 0 ? down : up);
    ASSERT_EQ(Half(message, i), expect) << std::hexfloat << v[i];
  }
  std::vector<float> out(v.size());
  c->Decode(message, out);
  for (std::size_t i = 0; i < v.size(); ++i)
    EXPECT_LE(std::fabs(out[i] - v[i]), std::fabs(v[i]) * 0x1.0p-8f);
}

TEST(Bf16, OverflowAndNaN) {
  const std::vector<float> v = {std::numeric_limits<float>::max(),
                                -std::numeric_limits<float>::max(),
                                std::numeric_limits<float>::quiet_NaN(),
                                std::bit_cast<float>(0x7fffffffu)};  // NaN that would round to inf
  auto c = MakeCompressor("bf16", v.size());
  Rng rng(1);
  const std::vector<float> q = testing::RoundTrip(*c, v, rng);
  EXPECT_EQ(q[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(q[1], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(q[2]));
  EXPECT_TRUE(std::isnan(q[3]));
}

// Every decoded coordinate is sgn(v_k) (|v_b|/s) xi_k with xi_k = floor or ceil of s|v_k|/|v_b|,
// v_b the bucket of K coordinates holding k (the whole vector for K = 0). K = 100 and 300 put
// bucket edges inside the codec's 256-coordinate chunks.
TEST(Qsgd, DecodesToAdjacentLevelsWithTheSign) {
  for (std::size_t bucket : {std::size_t{0}, std::size_t{100}, std::size_t{300}, std::size_t{512}}) {
    for (int bits : {2, 3, 4, 7, 8, 9, 12, 16}) {
      const std::size_t d = 1000;
      const std::vector<float> v = Gaussian(d, static_cast<std::uint64_t>(bits));
      auto c = MakeCompressor("qsgd:" + std::to_string(bits) + ":" + std::to_string(bucket), d);
      Rng rng(2);
      const std::vector<float> q = testing::RoundTrip(*c, v, rng);
      const double s = (1 << (bits - 1)) - 1;
      const std::size_t length = bucket == 0 ? d : bucket;
      for (std::size_t k = 0; k < d; ++k) {
        const std::size_t first = k / length * length;
        const std::size_t last = std::min(d, first + length);
        double norm2 = 0;
        for (std::size_t i = first; i < last; ++i) norm2 += static_cast<double>(v[i]) * v[i];
        const double norm = std::sqrt(norm2);
        const double level = std::fabs(q[k]) * s / norm;
        const double exact = std::fabs(v[k]) * s / norm;
        ASSERT_NEAR(level, std::round(level), 1e-3) << "bits=" << bits << " K=" << bucket << " k=" << k;
        ASSERT_GE(std::round(level), std::floor(exact) - 1e-9) << "bits=" << bits << " K=" << bucket;
        ASSERT_LE(std::round(level), std::ceil(exact) + 1e-9) << "bits=" << bits << " K=" << bucket;
        if (q[k] != 0) {
          ASSERT_EQ(std::signbit(q[k]), std::signbit(v[k]));
        }
      }
    }
  }
}

// QSGD Lemma 3.1: E|Q(v)-v|^2 <= min(n/s^2, sqrt(n)/s)|v|^2 with n the coordinates per norm
// (per bucket the bound holds for |v_b|^2; summed, for |v|^2). Constant magnitudes are the worst
// case (s = 1: E|Q-v|^2 = (sqrt(n) - 1)|v|^2), so the bound is nearly tight and can fail.
TEST(Qsgd, VarianceWithinTheQsgdBound) {
  for (int bits : {2, 3, 4, 8}) {
    for (std::size_t d : {16, 256, 1024}) {
      for (std::size_t bucket : {std::size_t{0}, std::size_t{64}, std::size_t{512}}) {
        for (bool flat : {false, true}) {
          std::vector<float> v = Gaussian(d, d * 3 + static_cast<std::size_t>(bits));
          if (flat) {
            for (float& x : v) x = std::copysign(1.0f, x);
          }
          auto c = MakeCompressor("qsgd:" + std::to_string(bits) + ":" + std::to_string(bucket), d);
          Rng rng(4);
          constexpr int kTrials = 300;
          double sum = 0, sum_sq = 0;
          for (int t = 0; t < kTrials; ++t) {
            const double e = testing::Dist2(testing::RoundTrip(*c, v, rng), v);
            sum += e;
            sum_sq += e * e;
          }
          const double mean = sum / kTrials;
          const double stderr_mean =
              std::sqrt(std::max(0.0, sum_sq / kTrials - mean * mean) / kTrials);
          const double s = (1 << (bits - 1)) - 1;
          const double n = static_cast<double>(bucket == 0 ? d : std::min(d, bucket));
          const double bound = std::min(n / (s * s), std::sqrt(n) / s) * testing::Norm2(v);
          EXPECT_LE(mean, bound + 4 * stderr_mean)
              << "bits=" << bits << " d=" << d << " K=" << bucket << (flat ? " flat" : " gaussian");
        }
      }
    }
  }
}

// Buckets are why qsgd:8 carries a large sparse-ish vector: one norm per message spends the
// levels on the few large coordinates and rounds the rest to 0 or one level (error far above
// the bucketed one). A vector of 64 large and 65,472 small coordinates: in expectation the
// whole-message error is about 41, the bucketed one 2.6 (half the buckets hold no large one).
TEST(Qsgd, BucketsCutTheErrorOfASkewedVector) {
  const std::size_t d = 1 << 16;
  std::vector<float> v = Gaussian(d, 21, 1e-3f);
  for (std::size_t k = 0; k < d; k += 1024) v[k] = 10.0f;
  Rng rng(3);
  const double whole = testing::Dist2(testing::RoundTrip(*MakeCompressor("qsgd:8:0", d), v, rng), v);
  const double bucketed = testing::Dist2(testing::RoundTrip(*MakeCompressor("qsgd:8", d), v, rng), v);
  EXPECT_LT(bucketed, 0.2 * whole) << "whole-message " << whole << ", bucketed " << bucketed;
}

// Largest z-score |mean_k - v_k| / stderr_k over coordinates of `trials` decodes (a coordinate
// with no spread and a mean off by more than round-off counts as infinite).
double WorstZScore(const std::string& spec, const std::vector<float>& v, int trials) {
  auto c = MakeCompressor(spec, v.size());
  Rng rng(12);
  std::vector<double> sum(v.size()), sum_sq(v.size());
  for (int t = 0; t < trials; ++t) {
    const std::vector<float> q = testing::RoundTrip(*c, v, rng);
    for (std::size_t k = 0; k < v.size(); ++k) {
      sum[k] += q[k];
      sum_sq[k] += static_cast<double>(q[k]) * q[k];
    }
  }
  double worst = 0;
  const double scale = std::sqrt(testing::Norm2(v));
  for (std::size_t k = 0; k < v.size(); ++k) {
    const double mean = sum[k] / trials;
    const double var = std::max(0.0, sum_sq[k] / trials - mean * mean);
    const double stderr_k = std::sqrt(var / (trials - 1));
    const double off = std::fabs(mean - v[k]);
    const double roundoff = 1e-6 * scale;
    if (off <= roundoff) continue;
    worst = std::max(worst, stderr_k > 0 ? (off - roundoff) / stderr_k
                                         : std::numeric_limits<double>::infinity());
  }
  return worst;
}

TEST(Unbiased, MeanOfManyEncodesIsTheInput) {
  std::vector<float> v = Gaussian(64, 21);
  v[5] = 0.0f;
  v[6] = 3.0f;  // the largest coordinate
  for (const char* spec : {"none", "qsgd:2", "qsgd:3", "qsgd:4", "qsgd:8", "qsgd:16", "quant:2",
                           "quant:5", "quant:8", "randk:0.25", "randk:0.02"}) {
    ASSERT_TRUE(MakeCompressor(spec, v.size())->unbiased()) << spec;
    // 64 coordinates at 5 standard errors: a false alarm has probability ~4e-5 per codec.
    EXPECT_LT(WorstZScore(spec, v, 4000), 5.0) << spec;
  }
}

// The same test catches biased codecs: it has the power to fail.
TEST(Unbiased, TheTestRejectsBiasedCodecs) {
  const std::vector<float> v = Gaussian(64, 21);
  for (const char* spec : {"randk:0.25:unscaled", "sign", "topk:0.5", "bf16"}) {
    ASSERT_FALSE(MakeCompressor(spec, v.size())->unbiased()) << spec;
    EXPECT_GT(WorstZScore(spec, v, 4000), 5.0) << spec;
  }
}

// Affine quantisation: every value within one step of v_k, inside [min, max].
TEST(Quant, WithinOneStepAndInsideTheRange) {
  for (int bits : {2, 3, 8, 16}) {
    std::vector<float> v = Gaussian(999, static_cast<std::uint64_t>(bits), 10.0f);
    for (float& x : v) x += 100.0f;  // an offset range: levels must be affine, not symmetric
    auto c = MakeCompressor("quant:" + std::to_string(bits), v.size());
    Rng rng(3);
    const std::vector<float> q = testing::RoundTrip(*c, v, rng);
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    const double step = (static_cast<double>(*hi) - *lo) / ((1 << bits) - 1);
    for (std::size_t k = 0; k < v.size(); ++k) {
      ASSERT_LE(std::fabs(q[k] - v[k]), step * (1 + 1e-4) + 1e-4) << "bits=" << bits;
      ASSERT_GE(q[k], *lo - 1e-4);
      ASSERT_LE(q[k], *hi + 1e-4);
    }
  }
}

TEST(Quant, ConstantVectorIsExact) {
  const std::vector<float> v(100, -2.5f);
  auto c = MakeCompressor("quant:4", v.size());
  Rng rng(1);
  EXPECT_EQ(testing::RoundTrip(*c, v, rng), v);
}

// A subnormal scale must not overflow 1/scale into inf (and 0 * inf into NaN); the decoded
// value may flush to zero, an error of at most the smallest subnormal.
TEST(Quant, TinyRangeDoesNotOverflow) {
  std::vector<float> v(50, 0.0f);
  v[7] = std::numeric_limits<float>::denorm_min();
  for (const char* spec : {"quant:16", "qsgd:16", "quant:2", "qsgd:2"}) {
    auto c = MakeCompressor(spec, v.size());
    Rng rng(1);
    const std::vector<float> q = testing::RoundTrip(*c, v, rng);
    for (std::size_t k = 0; k < v.size(); ++k) {
      EXPECT_LE(std::fabs(q[k] - v[k]), std::numeric_limits<float>::denorm_min())
          << spec << " k=" << k;
    }
  }
}

TEST(TopK, KeepsTheLargestMagnitudesExactly) {
  const std::size_t d = 1000;
  std::vector<float> v(d);
  for (std::size_t i = 0; i < d; ++i)
    v[i] = static_cast<float>(i + 1) * (i % 3 == 0 ? -1.0f : 1.0f);
  std::mt19937 gen(5);
  std::shuffle(v.begin(), v.end(), gen);
  auto c = MakeCompressor("topk:0.05", d);  // k = 50: magnitudes 951..1000
  Rng rng(1);
  const std::vector<float> q = testing::RoundTrip(*c, v, rng);
  std::size_t kept = 0;
  for (std::size_t i = 0; i < d; ++i) {
    if (std::fabs(v[i]) > 950) {
      EXPECT_EQ(q[i], v[i]);
      ++kept;
    } else {
      EXPECT_EQ(q[i], 0.0f);
    }
  }
  EXPECT_EQ(kept, 50u);
}

TEST(TopK, TiesGoToTheLowestIndices) {
  const std::vector<float> v(20, 1.5f);
  auto c = MakeCompressor("topk:0.25", v.size());
  Rng rng(1);
  const std::vector<float> q = testing::RoundTrip(*c, v, rng);
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_EQ(q[i], i < 5 ? 1.5f : 0.0f) << i;
}

// Large inputs take the sampled-threshold path; the result must equal a sort's: the k largest
// magnitudes, ties to the lowest indices. The strided input puts every sampled coordinate above
// all others, so too few candidates survive and the full pass must take over.
TEST(TopK, MatchesASortOnLargeInputs) {
  const std::size_t d = 100'000;
  std::vector<std::pair<const char*, std::vector<float>>> cases;
  cases.emplace_back("gaussian", Gaussian(d, 31));
  std::vector<float> ties(d);
  std::mt19937 gen(2);
  for (float& x : ties) x = static_cast<float>(static_cast<int>(gen() % 9) - 4);  // many ties
  cases.emplace_back("ties", ties);
  std::vector<float> strided = Gaussian(d, 32, 0.1f);
  for (std::size_t i = 0; i < d; i += d / 4096) strided[i] = 10.0f + static_cast<float>(i % 7);
  cases.emplace_back("strided", strided);
  for (const char* spec : {"topk:0.01", "topk:0.1", "topk:0.003"}) {
    for (const auto& [name, v] : cases) {
      auto c = MakeCompressor(spec, d);
      const std::size_t k = internal::compress::KeptCount(std::stod(spec + 5), d);
      std::vector<std::uint32_t> order(d);
      std::iota(order.begin(), order.end(), 0u);
      std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
        return std::fabs(v[a]) > std::fabs(v[b]);
      });
      std::vector<float> expect(d, 0.0f);
      for (std::size_t j = 0; j < k; ++j) expect[order[j]] = v[order[j]];
      Rng rng(1);
      EXPECT_EQ(testing::RoundTrip(*c, v, rng), expect) << spec << " " << name;
    }
  }
}

TEST(RandK, SendsKDistinctCoordinatesScaledOrNot) {
  const std::size_t d = 1000;
  const std::vector<float> v = Gaussian(d, 8);
  for (bool scaled : {true, false}) {
    auto c = MakeCompressor(scaled ? "randk:0.013" : "randk:0.013:unscaled", d);  // k = 13
    Rng rng(9);
    std::vector<float> first;
    for (int round = 0; round < 3; ++round) {
      const std::vector<float> q = testing::RoundTrip(*c, v, rng);
      std::size_t nonzero = 0;
      for (std::size_t i = 0; i < d; ++i) {
        if (q[i] == 0) continue;
        ++nonzero;
        EXPECT_FLOAT_EQ(q[i], scaled ? v[i] * (1000.0f / 13.0f) : v[i]);
      }
      EXPECT_EQ(nonzero, 13u);
      if (round == 0) first = q;
      if (round == 2) {
        EXPECT_NE(q, first) << "the subset must be redrawn per message";
      }
    }
  }
}

TEST(Sparse, DecodeAddTouchesOnlyTheKeptCoordinates) {
  const std::size_t d = 500;
  for (const char* spec : {"randk:0.02", "topk:0.02"}) {
    auto c = MakeCompressor(spec, d);
    Rng rng(1);
    const std::vector<std::byte> message = testing::Encode(*c, Gaussian(d, 4), rng);
    std::vector<float> acc(d, 12345.0f);
    c->DecodeAdd(message, 2.0f, acc);
    EXPECT_EQ(std::count_if(acc.begin(), acc.end(), [](float x) { return x != 12345.0f; }), 10)
        << spec;
  }
}

TEST(Sign, ScaleIsTheMeanMagnitude) {
  for (std::size_t d : {1, 7, 64, 129, 1000}) {
    std::vector<float> v = Gaussian(d, d);
    v[0] = 0.0f;  // zero counts as positive
    const double scale = std::accumulate(v.begin(), v.end(), 0.0,
                                         [](double s, float x) { return s + std::fabs(x); }) /
                         static_cast<double>(d);
    auto c = MakeCompressor("sign", d);
    Rng rng(1);
    const std::vector<float> q = testing::RoundTrip(*c, v, rng);
    for (std::size_t i = 0; i < d; ++i) {
      EXPECT_NEAR(q[i], v[i] < 0 ? -scale : scale, 1e-6 * scale) << "d=" << d << " i=" << i;
    }
  }
}

// Error feedback delays what compression drops but loses nothing:
// sum_t Q_t + e_T = sum_t v_t (Stich et al. 2018), up to float round-off, which is bounded by a
// few ulps of everything that went through the residual.
TEST(ErrorFeedback, DecodedMessagesPlusResidualSumToTheInputs) {
  const std::size_t d = 300;
  for (const char* spec :
       {"ef:topk:0.01", "ef:qsgd:8", "ef:quant:4", "ef:sign", "ef:randk:0.1:unscaled", "ef:bf16"}) {
    auto c = MakeCompressor(spec, d);
    Rng rng(2);
    std::vector<double> inputs(d), decoded(d), magnitude(d);
    std::vector<float> q(d);
    for (int t = 0; t < 60; ++t) {
      const std::vector<float> v = Gaussian(d, static_cast<std::uint64_t>(t) + 100);
      c->Decode(testing::Encode(*c, v, rng), q);
      const std::span<const float> e = internal::compress::Residual(*c);
      for (std::size_t i = 0; i < d; ++i) {
        inputs[i] += v[i];
        decoded[i] += q[i];
        magnitude[i] += std::fabs(v[i]) + std::fabs(q[i]) + std::fabs(e[i]);
      }
    }
    const std::span<const float> residual = internal::compress::Residual(*c);
    ASSERT_EQ(residual.size(), d);
    double residual_norm = 0;
    for (std::size_t i = 0; i < d; ++i) {
      EXPECT_NEAR(decoded[i] + residual[i], inputs[i], 4 * 0x1.0p-24 * magnitude[i])
          << spec << " i=" << i;
      residual_norm += static_cast<double>(residual[i]) * residual[i];
    }
    if (std::string(spec) == "ef:topk:0.01") {
      EXPECT_GT(residual_norm, 1.0) << "topk must hold back";
    }
  }
  EXPECT_TRUE(internal::compress::Residual(*MakeCompressor("topk:0.1", d)).empty());
}

TEST(ErrorFeedback, WrongLengthThrowsAndKeepsTheResidual) {
  auto c = MakeCompressor("ef:sign", 10);
  Rng rng(1);
  const std::vector<float> v = Gaussian(10, 1);
  testing::Encode(*c, v, rng);
  const std::vector<float> before(internal::compress::Residual(*c).begin(),
                                  internal::compress::Residual(*c).end());
  std::vector<std::byte> out(64);
  EXPECT_THROW(c->Encode(Gaussian(9, 1), out, rng), Error);
  EXPECT_THROW(c->Encode(v, std::span(out).first(3), rng), Error);
  const std::span<const float> after = internal::compress::Residual(*c);
  EXPECT_TRUE(std::equal(before.begin(), before.end(), after.begin()));
}

TEST(Stochastic, EachMessageDrawsFreshRandomness) {
  const std::vector<float> v = Gaussian(256, 3);
  for (const char* spec : {"qsgd:2", "quant:2"}) {
    auto c = MakeCompressor(spec, v.size());
    Rng rng(1);
    EXPECT_NE(testing::Encode(*c, v, rng), testing::Encode(*c, v, rng)) << spec;
  }
}

}  // namespace
}  // namespace corral
