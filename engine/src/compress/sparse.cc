// randk:F[:unscaled] and topk:F: send k = KeptCount(F, d) coordinates as (uint32 index, float32
// value) pairs, indices first. Decode zero-fills and scatters; DecodeAdd touches only the k
// coordinates.
//
// rand_k (Stich et al. 2018; CHOCO's Koloskova et al. 2019, Sec. 3): k uniformly random distinct
// coordinates. Scaled by d/k it is unbiased with E|Q(v)-v|^2 = (d/k - 1)|v|^2, so tau = d/k and
// the rescaled operator's delta = k/d; unscaled it is biased with E|Q(v)-v|^2 = (1 - k/d)|v|^2,
// delta = k/d. top_k keeps the k largest |v_k|: |Q(v)-v|^2 <= (1 - k/d)|v|^2, delta = k/d.
#include <corral/error.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

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
    const float gain =
        scaled_ ? static_cast<float>(static_cast<double>(d) / static_cast<double>(k)) : 1.0f;
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

// Top-k selection in O(d) with small constants, exact:
//  1. when k/d is small, a strided sample of kSample keys (std::nth_element on the sample)
//     gives a threshold t_low that lies below the true k-th largest key with high probability;
//  2. one branch-free pass compacts the candidates (key >= t_low, in index order);
//     if fewer than k survive (a badly placed sample), the pass is redone with t_low = -1;
//  3. std::nth_element over the candidates' keys gives the exact k-th largest key t;
//  4. emit the candidates above t and, in index order, as many equal to t as needed.
// Keys are |v_i| with NaN ranked as +inf, so NaN is sent and shows at the receiver. Scratch:
// dim floats and dim uint32, allocated once.
class TopKCompressor final : public SparseCompressor {
 public:
  TopKCompressor(double fraction, std::size_t dim)
      : SparseCompressor(fraction, dim, "topk:" + FormatFraction(fraction)),
        keys_(dim),
        candidates_(dim) {}

  bool unbiased() const override { return false; }

  std::size_t Encode(std::span<const float> v, std::span<std::byte> out, Rng&) override {
    const std::size_t d = v.size();
    const std::size_t k = Begin(d, out.size());
    if (k == 0) return 0;
    std::size_t c = Candidates(v, SampledThreshold(v, k));
    if (c < k) c = Candidates(v, -1.0f);
    float* keys = keys_.data();
    std::nth_element(keys, keys + (c - k), keys + c);
    const float t = keys[c - k];  // the k-th largest key
    std::size_t above = 0;
    for (std::size_t j = 0; j < c; ++j) above += Key(v[candidates_[j]]) > t ? 1 : 0;
    std::size_t ties = k - above;  // keys equal to t still to send
    std::size_t slot = 0;
    for (std::size_t j = 0; j < c && slot < k; ++j) {
      const std::uint32_t i = candidates_[j];
      const float key = Key(v[i]);
      if (key > t || (key == t && ties > 0)) {
        if (key == t) --ties;
        Put(out, k, slot++, i, v[i]);
      }
    }
    return 8 * k;
  }

 private:
  static constexpr std::size_t kSample = 4096;

  static float Key(float x) {
    const float a = std::fabs(x);
    return a != a ? std::numeric_limits<float>::infinity() : a;
  }

  // A key below the k-th largest with high probability, or -1 (keep all) when sampling does not
  // pay. With q = k/d and m = kSample, the sample holds about q m keys above the true threshold
  // (binomial, standard deviation <= sqrt(q m)); its (q m + 4 sqrt(q m) + 4)-th largest key is
  // lower w.h.p., and about d/m times that rank, a small multiple of k, candidates survive.
  float SampledThreshold(std::span<const float> v, std::size_t k) {
    const std::size_t d = v.size();
    if (d < 4 * kSample || 8 * k > d) return -1.0f;
    const std::size_t stride = d / kSample;
    float* sample = keys_.data();
    for (std::size_t j = 0; j < kSample; ++j) sample[j] = Key(v[j * stride]);
    const double expected = static_cast<double>(k) * kSample / static_cast<double>(d);
    const auto rank = std::min(
        kSample, static_cast<std::size_t>(expected + 4 * std::sqrt(expected) + 4));  // 1-based
    std::nth_element(sample, sample + (kSample - rank), sample + kSample);
    return sample[kSample - rank];
  }

  // Compacts indices (in order) and keys of the coordinates with key >= threshold; returns
  // their count. Branch-free: every slot is written, the count advances on a match.
  std::size_t Candidates(std::span<const float> v, float threshold) {
    float* keys = keys_.data();
    std::uint32_t* indices = candidates_.data();
    std::size_t c = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const float key = Key(v[i]);
      keys[c] = key;
      indices[c] = static_cast<std::uint32_t>(i);
      c += key >= threshold ? 1 : 0;
    }
    return c;
  }

  std::vector<float> keys_;                // scratch: the sample, then the candidates' keys
  std::vector<std::uint32_t> candidates_;  // scratch: the candidates' indices, ascending
};

}  // namespace

std::unique_ptr<Compressor> MakeRandK(double fraction, bool scaled, std::size_t dim) {
  return std::make_unique<RandKCompressor>(fraction, scaled, dim);
}
std::unique_ptr<Compressor> MakeTopK(double fraction, std::size_t dim) {
  return std::make_unique<TopKCompressor>(fraction, dim);
}

}  // namespace corral::internal::compress
