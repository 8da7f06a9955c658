// qsgd:B[:K] and quant:B: stochastic quantisation with per-bucket and per-message scales.
//
// QSGD (Alistarh et al. 2017, Sec. 3.1): Q(v)_k = |v| sgn(v_k) xi_k / s, where with
// r = s |v_k| / |v| the level xi_k is floor(r) + 1 with probability r - floor(r), else floor(r).
// E[xi_k] = r, so E[Q(v)] = v, and E|Q(v)-v|^2 <= min(d/s^2, sqrt(d)/s) |v|^2 (their Lemma 3.1).
// Like the paper's experiments (Sec. 5, "bucket size"), the norm is taken per bucket of K
// consecutive coordinates (default kQsgdDefaultBucket = 512; K = 0 is one norm per message), so
// d in the bound becomes K: with one norm for a 5.8M-coordinate message, 8-bit QSGD's bound is
// 19 |v|^2 and DCD-PSGD diverges on sector; with K = 512 it is 0.18 |v|^2, for 4 bytes per 512
// coordinates (qsgd:8 = 1.0078 bytes per coordinate).
// quant:B is the affine variant: levels min + l (max - min) / L, l in 0..L = 2^B - 1, with the
// same rounding; unbiased, and each coordinate's variance is at most (step/2)^2, so
// E|Q(v)-v|^2 <= d (max - min)^2 / (4 L^2) <= d / (2 L^2) |v|^2 since (max - min)^2 <= 2|v|^2.
//
// Both encode in two passes: a vectorised reduction for the scale, then chunks of kChunk
// coordinates quantised into a stack buffer of codes (vectorised: the random stream is a
// counter-based hash, kernels.h) and bit-packed.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "engine/src/compress/codecs.h"
#include "engine/src/compress/kernels.h"

namespace corral::internal::compress {
namespace {

constexpr std::size_t kUnlimited = std::numeric_limits<std::size_t>::max();

// Factors with (y * pre) * to_level == y * top / scale for 0 <= y <= scale, finite: a plain
// top / scale overflows float when scale is tiny (a subnormal norm), and 0 * inf would be NaN.
struct LevelScale {
  float pre;
  float to_level;
};
inline LevelScale MakeLevelScale(double top, double scale) {
  const double to_level = top / scale;
  if (to_level <= std::numeric_limits<float>::max()) return {1.0f, static_cast<float>(to_level)};
  return {0x1.0p64f, static_cast<float>(to_level * 0x1.0p-64)};
}

// Rounds r >= 0 (already clamped to <= top) up with probability frac(r); never exceeds top.
inline std::uint32_t StochasticLevel(float r, float u, std::uint32_t top) {
  const auto floor = static_cast<std::int32_t>(r);  // r >= 0: truncation is floor
  const float frac = r - static_cast<float>(floor);
  const auto level = static_cast<std::uint32_t>(floor) + (u < frac ? 1u : 0u);
  return level < top ? level : top;
}

class QsgdCompressor final : public DenseCompressor {
 public:
  QsgdCompressor(int bits, std::size_t bucket)
      : bits_(bits), levels_((1u << (bits - 1)) - 1), bucket_(bucket), spec_(QsgdSpec(bits, bucket)) {}

  std::string_view spec() const override { return spec_; }
  bool unbiased() const override { return true; }
  // delta = 1/tau, tau = 1 + min(n/s^2, sqrt(n)/s) (Koloskova et al. 2019, qsgd_s), n the
  // bucket length: the bound holds per bucket, so it holds for their sum.
  double Delta(std::size_t d) const override {
    const double s = levels_;
    const double n = static_cast<double>(bucket_ == 0 ? d : std::min(d, bucket_));
    return 1.0 / (1.0 + std::min(n / (s * s), std::sqrt(n) / s));
  }
  std::size_t WireBytes(std::size_t d) const override {
    return 4 * Buckets(d) + PackedBytes(d, bits_);
  }

  // A zero bucket sends norm 0 (decodes to zeros); a bucket with inf/NaN, or whose norm
  // overflows float, sends norm NaN and level 0 (decodes to NaN in that bucket).
  std::size_t Encode(std::span<const float> v, std::span<std::byte> out, Rng& rng) override {
    const std::size_t d = v.size();
    const std::size_t bytes = WireBytes(d);
    CheckEncode(spec_, d, kUnlimited, out.size(), bytes);
    const std::size_t buckets = Buckets(d);
    const std::size_t length = BucketLength(d);
    for (std::size_t b = 0; b < buckets; ++b) {
      const std::size_t begin = std::min(d, b * length);
      float norm = static_cast<float>(
          std::sqrt(SumSquares(v.subspan(begin, std::min(length, d - begin)))));
      if (!std::isfinite(norm)) norm = std::numeric_limits<float>::quiet_NaN();
      StoreF32(out.data() + 4 * b, norm);
    }
    std::byte* const packed = out.data() + 4 * buckets;
    const UniformStream uniform(rng());
    const std::uint32_t sign_bit = 1u << (bits_ - 1);
    alignas(64) std::uint32_t codes[kChunk];
    for (std::size_t begin = 0; begin < d; begin += kChunk) {
      const std::size_t count = std::min(kChunk, d - begin);
      // The chunk in runs that share a bucket, and so a scale.
      for (std::size_t j = 0; j < count;) {
        const std::size_t b = (begin + j) / length;
        const std::size_t run_end = std::min(count, (b + 1) * length - begin);
        const float norm = LoadF32(out.data() + 4 * b);
        if (!(norm > 0)) {  // zero or NaN: every level is 0
          std::fill(codes + j, codes + run_end, 0u);
          j = run_end;
          continue;
        }
        const LevelScale scale = MakeLevelScale(levels_, norm);
        const float* x = v.data() + begin;
        for (; j < run_end; ++j) {
          // Clamp before the integer conversion: |v_k| s / |v| may exceed s by round-off.
          const float r =
              std::min(std::fabs(x[j]) * scale.pre * scale.to_level, static_cast<float>(levels_));
          const std::uint32_t level =
              StochasticLevel(r, uniform(static_cast<std::uint32_t>(begin + j)), levels_);
          codes[j] = level | (x[j] < 0 ? sign_bit : 0u);
        }
      }
      PackCodes(codes, count, bits_, packed + PackedBytes(begin, bits_));
    }
    return bytes;
  }

 protected:
  void DecodeChunk(std::span<const std::byte> in, std::size_t d, std::size_t begin,
                   std::span<float> out) const override {
    const std::size_t length = BucketLength(d);
    alignas(64) std::uint32_t codes[kChunk];
    UnpackCodes(in.data() + 4 * Buckets(d) + PackedBytes(begin, bits_), out.size(), bits_, codes);
    const std::uint32_t sign_bit = 1u << (bits_ - 1);
    for (std::size_t j = 0; j < out.size();) {
      const std::size_t b = (begin + j) / length;
      const std::size_t run_end = std::min(out.size(), (b + 1) * length - begin);
      const float unit = LoadF32(in.data() + 4 * b) / static_cast<float>(levels_);
      for (; j < run_end; ++j) {
        const float magnitude = static_cast<float>(codes[j] & (sign_bit - 1)) * unit;
        out[j] = (codes[j] & sign_bit) != 0 ? -magnitude : magnitude;
      }
    }
  }

 private:
  static std::string QsgdSpec(int bits, std::size_t bucket) {
    std::string spec = "qsgd:";  // appended, not "qsgd:" + ...: g++ 12's false -Wrestrict there
    spec += std::to_string(bits);
    if (bucket != kQsgdDefaultBucket) spec += ':' + std::to_string(bucket);
    return spec;
  }
  // Coordinates per norm: the bucket, or the whole message for bucket 0 (at least 1, so that
  // b * length never divides by zero).
  std::size_t BucketLength(std::size_t d) const {
    return std::max<std::size_t>(1, bucket_ == 0 ? d : bucket_);
  }
  // Norms on the wire: one per bucket, and one for an empty message (norm 0).
  std::size_t Buckets(std::size_t d) const {
    const std::size_t length = BucketLength(d);
    return std::max<std::size_t>(1, (d + length - 1) / length);
  }

  int bits_;
  std::uint32_t levels_;  // s = 2^(B-1) - 1
  std::size_t bucket_;    // coordinates per norm; 0 = the whole message
  std::string spec_;
};

class AffineQuantCompressor final : public DenseCompressor {
 public:
  explicit AffineQuantCompressor(int bits)
      : bits_(bits), top_((1u << bits) - 1), spec_("quant:" + std::to_string(bits)) {}

  std::string_view spec() const override { return spec_; }
  bool unbiased() const override { return true; }
  // delta = 1/tau, tau = 1 + d / (2 L^2) (the bound in the file comment).
  double Delta(std::size_t d) const override {
    const double top = top_;
    return 1.0 / (1.0 + static_cast<double>(d) / (2.0 * top * top));
  }
  std::size_t WireBytes(std::size_t d) const override { return 8 + PackedBytes(d, bits_); }

  // A constant vector (zero included) sends min == max and decodes exactly. A vector with
  // inf/NaN sends min = max = NaN and decodes to NaN everywhere. A range wider than FLT_MAX
  // saturates at the top level (biased, but finite).
  std::size_t Encode(std::span<const float> v, std::span<std::byte> out, Rng& rng) override {
    const std::size_t d = v.size();
    const std::size_t bytes = WireBytes(d);
    CheckEncode(spec_, d, kUnlimited, out.size(), bytes);
    Range range = MinMax(v);
    if (!range.finite) range.lo = range.hi = std::numeric_limits<float>::quiet_NaN();
    if (d == 0) range.lo = range.hi = 0.0f;
    StoreF32(out.data(), range.lo);
    StoreF32(out.data() + 4, range.hi);
    const double width = static_cast<double>(range.hi) - static_cast<double>(range.lo);
    if (!(width > 0)) {  // constant, empty or NaN: every level is 0
      std::memset(out.data() + 8, 0, bytes - 8);
      return bytes;
    }
    const LevelScale scale = MakeLevelScale(top_, width);
    const float lo = range.lo;
    const UniformStream uniform(rng());
    alignas(64) std::uint32_t codes[kChunk];
    for (std::size_t begin = 0; begin < d; begin += kChunk) {
      const std::size_t count = std::min(kChunk, d - begin);
      const float* x = v.data() + begin;
      for (std::size_t j = 0; j < count; ++j) {
        const float r =
            std::min((x[j] - lo) * scale.pre * scale.to_level, static_cast<float>(top_));
        codes[j] = StochasticLevel(r, uniform(static_cast<std::uint32_t>(begin + j)), top_);
      }
      PackCodes(codes, count, bits_, out.data() + 8 + PackedBytes(begin, bits_));
    }
    return bytes;
  }

 protected:
  void DecodeChunk(std::span<const std::byte> in, std::size_t, std::size_t begin,
                   std::span<float> out) const override {
    const float lo = LoadF32(in.data());
    const float hi = LoadF32(in.data() + 4);
    const auto step = static_cast<float>((static_cast<double>(hi) - static_cast<double>(lo)) /
                                         static_cast<double>(top_));
    alignas(64) std::uint32_t codes[kChunk];
    UnpackCodes(in.data() + 8 + PackedBytes(begin, bits_), out.size(), bits_, codes);
    for (std::size_t j = 0; j < out.size(); ++j) {
      out[j] = lo + static_cast<float>(codes[j]) * step;
    }
  }

 private:
  int bits_;
  std::uint32_t top_;  // L = 2^B - 1
  std::string spec_;
};

}  // namespace

std::unique_ptr<Compressor> MakeQsgd(int bits, std::size_t bucket) {
  return std::make_unique<QsgdCompressor>(bits, bucket);
}
std::unique_ptr<Compressor> MakeAffineQuant(int bits) {
  return std::make_unique<AffineQuantCompressor>(bits);
}

}  // namespace corral::internal::compress
