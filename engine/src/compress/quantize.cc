// qsgd:B and quant:B: stochastic quantisation with one per-message scale.
//
// QSGD (Alistarh et al. 2017, Sec. 3.1): Q(v)_k = |v| sgn(v_k) xi_k / s, where with
// r = s |v_k| / |v| the level xi_k is floor(r) + 1 with probability r - floor(r), else floor(r).
// E[xi_k] = r, so E[Q(v)] = v, and E|Q(v)-v|^2 <= min(d/s^2, sqrt(d)/s) |v|^2 (their Lemma 3.1).
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
  explicit QsgdCompressor(int bits)
      : bits_(bits), levels_((1u << (bits - 1)) - 1), spec_("qsgd:" + std::to_string(bits)) {}

  std::string_view spec() const override { return spec_; }
  bool unbiased() const override { return true; }
  // delta = 1/tau, tau = 1 + min(d/s^2, sqrt(d)/s) (Koloskova et al. 2019, qsgd_s).
  double Delta(std::size_t d) const override {
    const double s = levels_;
    const double dd = static_cast<double>(d);
    return 1.0 / (1.0 + std::min(dd / (s * s), std::sqrt(dd) / s));
  }
  std::size_t WireBytes(std::size_t d) const override { return 4 + PackedBytes(d, bits_); }

  // A zero vector sends norm 0 (decodes to zeros); a vector with inf/NaN, or whose norm
  // overflows float, sends norm NaN and level 0 everywhere (decodes to NaN everywhere).
  std::size_t Encode(std::span<const float> v, std::span<std::byte> out, Rng& rng) override {
    const std::size_t d = v.size();
    const std::size_t bytes = WireBytes(d);
    CheckEncode(spec_, d, kUnlimited, out.size(), bytes);
    float norm = static_cast<float>(std::sqrt(SumSquares(v)));
    if (!std::isfinite(norm)) norm = std::numeric_limits<float>::quiet_NaN();
    StoreF32(out.data(), norm);
    if (!(norm > 0)) {  // zero or NaN: every level is 0
      std::memset(out.data() + 4, 0, bytes - 4);
      return bytes;
    }
    const LevelScale scale = MakeLevelScale(levels_, norm);
    const UniformStream uniform(rng());
    const std::uint32_t sign_bit = 1u << (bits_ - 1);
    alignas(64) std::uint32_t codes[kChunk];
    for (std::size_t begin = 0; begin < d; begin += kChunk) {
      const std::size_t count = std::min(kChunk, d - begin);
      const float* x = v.data() + begin;
      for (std::size_t j = 0; j < count; ++j) {
        // Clamp before the integer conversion: |v_k| s / |v| may exceed s by round-off.
        const float r =
            std::min(std::fabs(x[j]) * scale.pre * scale.to_level, static_cast<float>(levels_));
        const std::uint32_t level =
            StochasticLevel(r, uniform(static_cast<std::uint32_t>(begin + j)), levels_);
        codes[j] = level | (x[j] < 0 ? sign_bit : 0u);
      }
      PackCodes(codes, count, bits_, out.data() + 4 + PackedBytes(begin, bits_));
    }
    return bytes;
  }

 protected:
  void DecodeChunk(std::span<const std::byte> in, std::size_t, std::size_t begin,
                   std::span<float> out) const override {
    const float unit = LoadF32(in.data()) / static_cast<float>(levels_);
    alignas(64) std::uint32_t codes[kChunk];
    UnpackCodes(in.data() + 4 + PackedBytes(begin, bits_), out.size(), bits_, codes);
    const std::uint32_t sign_bit = 1u << (bits_ - 1);
    for (std::size_t j = 0; j < out.size(); ++j) {
      const float magnitude = static_cast<float>(codes[j] & (sign_bit - 1)) * unit;
      out[j] = (codes[j] & sign_bit) != 0 ? -magnitude : magnitude;
    }
  }

 private:
  int bits_;
  std::uint32_t levels_;  // s = 2^(B-1) - 1
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

std::unique_ptr<Compressor> MakeQsgd(int bits) { return std::make_unique<QsgdCompressor>(bits); }
std::unique_ptr<Compressor> MakeAffineQuant(int bits) {
  return std::make_unique<AffineQuantCompressor>(bits);
}

}  // namespace corral::internal::compress
