// randk:F[:unscaled] and topk:F: send k = KeptCount(F, d) coordinates as (uint32 index, float32
// value) pairs, indices first. Decode zero-fills and scatters; DecodeAdd touches only the k
// coordinates.
//
// rand_k (Stich et al. 2018; CHOCO's Koloskova et al. 2019, Sec. 3): k uniformly random distinct
// coordinates. Scaled by d/k it is unbiased with E|Q(v)-v|^2 = (d/k - 1)|v|^2, so tau = d/k and
// the rescaled operator's delta = k/d; unscaled it is biased with E|Q(v)-v|^2 = (1 - k/d)|v|^2,
// delta = k/d. top_k keeps the k largest |v_k|: |Q(v)-v|^2 <= (1 - k/d)|v|^2, delta = k/d.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include <corral/error.h>

#include "engine/src/compress/codecs.h"
#include "engine/src/compress/kernels.h"

namespace corral::internal::compress {
namespace {

// The shared message layout and decoding of the two sparse codecs.
class SparseCompressor : public Compressor {
 public:
  SparseCompressor(double fraction, std::size_t dim, std::string spec)
      : fraction_(fraction), dim_(dim), spec_(std::move(spec)) {}

  std::string_view spec() const override { return spec_; }
  double Delta(std::size_t d) const override {
    return d == 0 ? 1.0 : static_cast<double>(KeptCount(fraction_, d)) / static_cast<double>(d);
  }
  std::size_t WireBytes(std::size_t d) const override { return 8 * KeptCount(fraction_, d); }

  void Decode(std::span<const std::byte> in, std::span<float> out) const override {
    std::fill(out.begin(), out.end(), 0.0f);
    DecodeAdd(in, 1.0f, out);
  }
  // A corrupt index (>= d) throws kBadInput rather than writing out of bounds.
  void DecodeAdd(std::span<const std::byte> in, float scale, std::span<float> acc) const override {
    const std::size_t d = acc.size();
    const std::size_t k = KeptCount(fraction_, d);
    const std::byte* indices = in.data();
    const std::byte* values = in.data() + 4 * k;
    for (std::size_t j = 0; j < k; ++j) {
      std::uint32_t i;
      std::memcpy(&i, indices + 4 * j, 4);
      if (i >= d) {
        throw Error(ErrorCode::kBadInput, spec_ + ": message index " + std::to_string(i) +
                                              " out of range for a vector of length " +
                                              std::to_string(d));
      }
      acc[i] += scale * LoadF32(values + 4 * j);
    }
  }

 protected:
  // Checks Encode's preconditions and returns k.
  std::size_t Begin(std::size_t d, std::size_t out_bytes) const {
    CheckEncode(spec_, d, dim_, out_bytes, WireBytes(d));
    return KeptCount(fraction_, d);
  }
  static void Put(std::span<std::byte> out, std::size_t k, std::size_t slot, std::uint32_t index,
                  float value) {
    std::memcpy(out.data() + 4 * slot, &index, 4);
    StoreF32(out.data() + 4 * k + 4 * slot, value);
  }

  double fraction_;
  std::size_t dim_;
  std::string spec_;
};

// Partial Fisher-Yates: k swaps over a permutation of 0..d-1 kept between calls. Starting from
// any permutation, the first k entries afterwards are a uniformly random k-subset, so the array
// never needs resetting (O(k) per message).
class RandKCompressor final : public SparseCompressor {
 public:
  RandKCompressor(double fraction, bool scaled, std::size_t dim)
      : SparseCompressor(fraction, dim,
                         "randk:" + FormatFraction(fraction) + (scaled ? "" : ":unscaled")),
        scaled_(scaled),
        permutation_(dim) {}

  bool unbiased() const override { return scaled_; }

  std::size_t Encode(std::span<const float> v, std::span<std::byte> out, Rng& rng) override {
    const std::size_t d = v.size();
    const std::size_t k = Begin(d, out.size());
    if (d != permutation_d_) {  // a new length: restart from the identity (no allocation)
      std::iota(permutation_.begin(), permutation_.begin() + static_cast<std::ptrdiff_t>(d), 0u);
      permutation_d_ = d;
    }
    const float gain = scaled_ ? static_cast<float>(static_cast<double>(d) / static_cast<double>(k))
                               : 1.0f;
    for (std::size_t j = 0; j < k; ++j) {
      std::swap(permutation_[j], permutation_[j + rng.Below(d - j)]);
      const std::uint32_t i = permutation_[j];
      Put(out, k, j, i, v[i] * gain);
    }
    return 8 * k;
  }

 private:
  bool scaled_;
  std::vector<std::uint32_t> permutation_;  // a permutation of 0..permutation_d_-1 in [0, d)
  std::size_t permutation_d_ = 0;
};

// Selection by std::nth_element over a scratch copy of the magnitudes (no indirection), then
// one pass that emits the coordinates above the k-th largest magnitude t and, in index order,
// as many equal to t as needed. NaN ranks as +inf, so it is sent and shows at the receiver.
class TopKCompressor final : public SparseCompressor {
 public:
  TopKCompressor(double fraction, std::size_t dim)
      : SparseCompressor(fraction, dim, "topk:" + FormatFraction(fraction)), magnitude_(dim) {}

  bool unbiased() const override { return false; }

  std::size_t Encode(std::span<const float> v, std::span<std::byte> out, Rng&) override {
    const std::size_t d = v.size();
    const std::size_t k = Begin(d, out.size());
    if (k == 0) return 0;
    float* m = magnitude_.data();
    for (std::size_t i = 0; i < d; ++i) m[i] = Key(v[i]);
    std::nth_element(m, m + (d - k), m + d);
    const float t = m[d - k];  // the k-th largest key
    std::size_t above = 0;
    for (std::size_t i = 0; i < d; ++i) above += Key(v[i]) > t ? 1 : 0;
    std::size_t ties = k - above;  // keys equal to t still to send
    std::size_t slot = 0;
    for (std::size_t i = 0; i < d && slot < k; ++i) {
      const float key = Key(v[i]);
      if (key > t || (key == t && ties > 0)) {
        if (key == t) --ties;
        Put(out, k, slot++, static_cast<std::uint32_t>(i), v[i]);
      }
    }
    return 8 * k;
  }

 private:
  static float Key(float x) {
    const float a = std::fabs(x);
    return a != a ? std::numeric_limits<float>::infinity() : a;
  }

  std::vector<float> magnitude_;  // scratch of dim keys
};

}  // namespace

std::unique_ptr<Compressor> MakeRandK(double fraction, bool scaled, std::size_t dim) {
  return std::make_unique<RandKCompressor>(fraction, scaled, dim);
}
std::unique_ptr<Compressor> MakeTopK(double fraction, std::size_t dim) {
  return std::make_unique<TopKCompressor>(fraction, dim);
}

}  // namespace corral::internal::compress
