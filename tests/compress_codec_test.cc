// Properties every --compress codec must have (DESIGN.md §3), parameterised over all of them:
// exact wire size, no write past it, DecodeAdd == Decode + axpy, canonical specs, zero and
// non-finite input, reproducibility, and the declared quality (Delta) holding empirically.
#include <corral/error.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "compress_test_util.h"

namespace corral {
namespace {

using internal::Compressor;
using internal::MakeCompressor;
using testing::Gaussian;

class EveryCodec : public ::testing::TestWithParam<const char*> {};

INSTANTIATE_TEST_SUITE_P(AllCodecs, EveryCodec,
                         ::testing::Values("none", "fp16", "bf16", "qsgd:2", "qsgd:3", "qsgd:4",
                                           "qsgd:5", "qsgd:8", "qsgd:11", "qsgd:16", "qsgd:8:0",
                                           "qsgd:4:7", "qsgd:8:256", "quant:2",
                                           "quant:3", "quant:8", "quant:13", "quant:16",
                                           "randk:0.1", "randk:0.3:unscaled", "topk:0.1", "topk:1",
                                           "sign", "ef:none", "ef:qsgd:4", "ef:topk:0.05",
                                           "ef:sign", "ef:randk:0.2"),
                         [](const auto& test) {
                           std::string name = test.param;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

TEST_P(EveryCodec, WireBytesIsWhatEncodeWritesAndNothingMore) {
  Rng rng(7);
  for (std::size_t d : {1, 2, 7, 8, 9, 63, 64, 65, 255, 256, 257, 1000, 1023, 4099}) {
    auto c = MakeCompressor(GetParam(), d);
    const std::vector<float> v = Gaussian(d, d);
    const std::size_t wire = c->WireBytes(d);
    constexpr std::size_t kGuard = 64;
    std::vector<std::byte> out(wire + kGuard, std::byte{0xA5});
    EXPECT_EQ(c->Encode(v, out, rng), wire) << "d=" << d;
    for (std::size_t i = wire; i < out.size(); ++i) {
      ASSERT_EQ(out[i], std::byte{0xA5}) << "wrote past WireBytes at byte " << i << ", d=" << d;
    }
  }
}

TEST_P(EveryCodec, SpecIsCanonicalAndReparses) {
  auto c = MakeCompressor(GetParam(), 10);
  EXPECT_EQ(c->spec(), GetParam());
  EXPECT_EQ(MakeCompressor(c->spec(), 10)->spec(), c->spec());
}

TEST_P(EveryCodec, DecodeAddIsDecodeThenAxpy) {
  constexpr std::size_t kD = 777;
  auto c = MakeCompressor(GetParam(), kD);
  Rng rng(3);
  const std::vector<std::byte> message = testing::Encode(*c, Gaussian(kD, 1), rng);
  std::vector<float> q(kD);
  c->Decode(message, q);
  const std::vector<float> start = Gaussian(kD, 2);
  for (float scale : {1.0f, -0.5f, 0.0f}) {
    std::vector<float> acc = start;
    c->DecodeAdd(message, scale, acc);
    for (std::size_t i = 0; i < kD; ++i) {
      const float expect = start[i] + scale * q[i];
      // Exact up to an FMA contraction's rounding.
      EXPECT_NEAR(acc[i], expect, 1e-6f * (std::fabs(start[i]) + std::fabs(scale * q[i])))
          << "i=" << i << " scale=" << scale;
    }
  }
}

TEST_P(EveryCodec, ZeroVectorDecodesToZero) {
  for (std::size_t d : {1, 5, 300}) {
    auto c = MakeCompressor(GetParam(), d);
    Rng rng(1);
    const std::vector<float> q = testing::RoundTrip(*c, std::vector<float>(d, 0.0f), rng);
    for (float x : q) EXPECT_EQ(x, 0.0f);
  }
}

// Documented in compressor.h: NaN/inf never crash; the scaled codecs turn the whole message (qsgd:
// the bucket) into NaN, the casts and sparse codecs pass each coordinate through.
TEST_P(EveryCodec, NonFiniteInputIsCarriedNotHidden) {
  constexpr std::size_t kD = 300;
  const std::string spec = GetParam();
  std::vector<float> v = Gaussian(kD, 5);
  v[3] = std::numeric_limits<float>::quiet_NaN();
  v[200] = -std::numeric_limits<float>::infinity();
  auto c = MakeCompressor(spec, kD);
  Rng rng(1);
  const std::vector<float> q = testing::RoundTrip(*c, v, rng);
  const bool scaled = spec.find("qsgd") != std::string::npos ||
                      spec.find("quant") != std::string::npos ||
                      spec.find("sign") != std::string::npos;
  if (spec == "qsgd:4:7" || spec == "qsgd:8:256") {  // only the buckets holding 3 and 200
    const std::size_t bucket = spec == "qsgd:4:7" ? 7 : 256;
    for (std::size_t k = 0; k < kD; ++k) {
      EXPECT_EQ(std::isnan(q[k]), k / bucket == 3 / bucket || k / bucket == 200 / bucket) << k;
    }
  } else if (scaled) {
    for (float x : q) EXPECT_TRUE(std::isnan(x));
  } else if (spec.find("randk") == std::string::npos) {  // casts, topk: both are sent
    EXPECT_TRUE(std::isnan(q[3]));
    EXPECT_EQ(q[200], -std::numeric_limits<float>::infinity());
  }
  // And the next (finite) message of a stateless codec is unaffected.
  if (!spec.starts_with("ef:")) {
    const std::vector<float> next = testing::RoundTrip(*c, Gaussian(kD, 6), rng);
    for (float x : next) EXPECT_TRUE(std::isfinite(x));
  }
}

TEST_P(EveryCodec, SameSeedSameMessage) {
  constexpr std::size_t kD = 513;
  const std::vector<float> v = Gaussian(kD, 9);
  auto a = MakeCompressor(GetParam(), kD);
  auto b = MakeCompressor(GetParam(), kD);
  Rng ra(11), rb(11);
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(testing::Encode(*a, v, ra), testing::Encode(*b, v, rb)) << "round " << round;
  }
}

TEST_P(EveryCodec, EncodePreconditionsThrowBadConfig) {
  auto c = MakeCompressor(GetParam(), 100);
  Rng rng(1);
  const std::vector<float> v = Gaussian(100, 1);
  std::vector<std::byte> small(c->WireBytes(100) - 1);
  try {
    c->Encode(v, small, rng);
    FAIL() << "a short buffer was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
    EXPECT_NE(std::string(e.what()).find(GetParam()), std::string::npos) << e.what();
  }
}

// The declared quality, measured: for unbiased codecs E|Q(v)-v|^2 <= (1/delta - 1)|v|^2 (delta
// is the rescaled operator's, compressor.h), for biased ones E|Q(v)-v|^2 <= (1 - delta)|v|^2.
// Constant-magnitude vectors are QSGD's worst case, so the bound is nearly tight there.
TEST_P(EveryCodec, DeclaredDeltaHoldsEmpirically) {
  const std::string spec = GetParam();
  // An ef: message depends on the history; a fresh instance's first message is the inner codec's.
  const bool fresh = spec.starts_with("ef:");
  for (std::size_t d : {16, 1000}) {
    for (bool flat : {false, true}) {
      std::vector<float> v = Gaussian(d, d + flat);
      if (flat) {
        for (float& x : v) x = std::copysign(0.25f, x);
      }
      auto c = MakeCompressor(spec, d);
      Rng rng(5);
      constexpr int kTrials = 200;
      double sum = 0, sum_sq = 0;
      for (int t = 0; t < kTrials; ++t) {
        if (fresh) c = MakeCompressor(spec, d);
        const double e = testing::Dist2(testing::RoundTrip(*c, v, rng), v);
        sum += e;
        sum_sq += e * e;
      }
      const double mean = sum / kTrials;
      const double stderr_mean =
          std::sqrt(std::max(0.0, sum_sq / kTrials - mean * mean) / (kTrials - 1));
      const double delta = c->Delta(d);
      ASSERT_GT(delta, 0.0);
      ASSERT_LE(delta, 1.0);
      // randk's bound is an equality in expectation: allow 4 standard errors of the mean.
      // ef: declares its inner codec's delta, in the inner codec's (un)biased form.
      const bool unbiased = MakeCompressor(fresh ? spec.substr(3) : spec, d)->unbiased();
      const double bound = (unbiased ? 1.0 / delta - 1.0 : 1.0 - delta) * testing::Norm2(v);
      EXPECT_LE(mean, 1.01 * bound + 4 * stderr_mean + 1e-12 * testing::Norm2(v))
          << "d=" << d << (flat ? " flat" : " gaussian");
    }
  }
}

// Bad specs: kBadConfig naming the spec and listing the valid forms.
TEST(CompressSpec, BadSpecsNameTheSpecAndTheValidForms) {
  for (const char* bad : {"qsgd:1", "qsgd:17", "qsgd:8.5", "qsgd", "qsgd:8:-1", "qsgd:8:x", "qsgd:8:1:1", "quant:0", "topk:0",
                          "topk:1.5", "topk:-0.1", "topk:nan", "randk:x", "randk:0.1:scaled", "foo",
                          "", "none:1", "ef:", "ef:ef:sign", "ef:foo", "sign:2"}) {
    try {
      MakeCompressor(bad, 10);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadConfig) << bad;
      const std::string message = e.what();
      EXPECT_NE(message.find("'" + std::string(bad) + "'"), std::string::npos) << message;
      EXPECT_NE(message.find("qsgd:B"), std::string::npos) << message;
    }
  }
}

TEST(CompressSpec, AliasesAndNumbersAreCanonicalised) {
  EXPECT_EQ(MakeCompressor("fp32", 4)->spec(), "none");
  EXPECT_EQ(MakeCompressor("randk:0.010", 4)->spec(), "randk:0.01");
  EXPECT_EQ(MakeCompressor("topk:1e-2", 4)->spec(), "topk:0.01");
  EXPECT_EQ(MakeCompressor("qsgd:08", 4)->spec(), "qsgd:8");
  EXPECT_EQ(MakeCompressor("qsgd:8:512", 4)->spec(), "qsgd:8");  // the default bucket
  EXPECT_EQ(MakeCompressor("qsgd:8:0064", 4)->spec(), "qsgd:8:64");
  EXPECT_EQ(MakeCompressor("ef:randk:0.5:unscaled", 4)->spec(), "ef:randk:0.5:unscaled");
}

TEST(CompressSpec, DeclaredProperties) {
  for (const char* spec : {"none", "qsgd:4", "quant:4", "randk:0.1"}) {
    EXPECT_TRUE(MakeCompressor(spec, 8)->unbiased()) << spec;
  }
  for (const char* spec : {"fp16", "bf16", "randk:0.1:unscaled", "topk:0.1", "sign", "ef:qsgd:4"}) {
    EXPECT_FALSE(MakeCompressor(spec, 8)->unbiased()) << spec;
  }
  // A quarter of fp32, + one norm per 512 coordinates (or one per message).
  EXPECT_EQ(MakeCompressor("qsgd:8", 8)->WireBytes(1000), 1008u);
  EXPECT_EQ(MakeCompressor("qsgd:8", 8)->WireBytes(1024), 1032u);
  EXPECT_EQ(MakeCompressor("qsgd:8:0", 8)->WireBytes(1000), 1004u);
  EXPECT_EQ(MakeCompressor("qsgd:8:0", 8)->WireBytes(0), 4u);
  EXPECT_EQ(MakeCompressor("none", 8)->Delta(1000), 1.0);
}

}  // namespace
}  // namespace corral
