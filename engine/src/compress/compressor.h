// Compressor: what a replica mode sends instead of a full-precision vector (DESIGN.md §3).
//
// A codec maps a d-vector v to a message of a data-independent size, WireBytes(d), and back to
// Q(v). The codecs and their spellings (`--compress SPEC`):
//   none              fp32, exact (alias `fp32`)
//   fp16, bf16        deterministic round-to-nearest-even casts
//   qsgd:B[:K]        QSGD (Alistarh et al. 2017): 1 sign bit + B-1 bits of level (s = 2^(B-1)-1
//                     levels), one float norm per bucket of K coordinates (default 512; K = 0:
//                     one per message); stochastic, unbiased. B in 2..16.
//   quant:B           affine min/max quantisation to 2^B levels, same stochastic rounding. B in
//                     2..16.
//   randk:F           k = max(1, round(F d)) uniformly random coordinates scaled by d/k (unbiased)
//   randk:F:unscaled  the same k coordinates unscaled (biased; CHOCO's rand_k)
//   topk:F            the k largest-magnitude coordinates (biased)
//   sign              sign bits with the scale |v|_1 / d (biased; Karimireddy et al. 2019)
//   ef:<inner>        error feedback around any of the above (Seide et al. 2014; Stich et al.
//                     2018)
// F is in (0, 1]. Wire formats are little-endian (Corral targets little-endian hosts; a
// static_assert says so) and are described by each codec in engine/src/compress/codecs.h.
//
// Non-finite input never crashes: a vector with a NaN or inf decodes to NaN in every coordinate
// for the scaled codecs (quant, sign: the per-message scale becomes NaN; qsgd: per bucket), coordinatewise
// for the casts and sparse codecs (what was sent is what arrives; topk ranks NaN as largest),
// so divergence shows up at the receiver instead of being hidden. A zero vector decodes to zero.
#pragma once

#include <corral/rng.h>

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>

namespace corral::internal {

// Thread safety: owner-only (one instance per worker; stateful codecs such as ef: keep per-sender
// state). Decode and DecodeAdd are const and keep no state: a receiver may use its own instance
// of the same spec, or the sender's instance between the sender's Encode calls.
class Compressor {
 public:
  virtual ~Compressor() = default;
  virtual std::string_view spec() const = 0;  // canonical spec, e.g. "qsgd:8", "ef:topk:0.01"
  virtual bool unbiased() const = 0;          // E[Q(v)] = v
  // CHOCO's quality (Koloskova et al. 2019): E|Q(v)-v|^2 <= (1 - delta)|v|^2 for d-vectors.
  // 1 for `none`. For an unbiased codec with E|Q(v)-v|^2 <= omega |v|^2 this is the delta of the
  // rescaled operator Q/tau, tau = 1 + omega, i.e. delta = 1/tau (CHOCO paper, Section 3): a
  // CHOCO step that uses it must apply Q(v) * delta (DecodeAdd's scale). Biased codecs state
  // their own delta directly.
  virtual double Delta(std::size_t d) const = 0;
  // Exact bytes Encode writes for a d-vector (every codec has a data-independent size).
  virtual std::size_t WireBytes(std::size_t d) const = 0;
  // Encodes v into out (out.size() >= WireBytes(v.size())); returns the bytes written. No
  // allocation. \pre v.size() <= the `dim` given to MakeCompressor (== dim for ef:); a
  // violated precondition throws corral::Error(kBadConfig).
  virtual std::size_t Encode(std::span<const float> v, std::span<std::byte> out, Rng& rng) = 0;
  // out = Q(v) from a message of a d-vector, d = out.size().
  virtual void Decode(std::span<const std::byte> in, std::span<float> out) const = 0;
  // acc += scale * Q(v); sparse codecs touch only their k coordinates.
  virtual void DecodeAdd(std::span<const std::byte> in, float scale,
                         std::span<float> acc) const = 0;
  // The memory the codec carries from one message to the next (ef: its residual), which a
  // checkpoint saves and a resumed run writes back; empty for codecs that keep none.
  virtual std::span<float> State() { return {}; }
};

// Parses a --compress spec; `dim` is the vector length every message will have (scratch is sized
// once here, so Encode never allocates). Throws corral::Error(kBadConfig) naming the bad spec and
// the valid forms.
std::unique_ptr<Compressor> MakeCompressor(std::string_view spec, std::size_t dim);

}  // namespace corral::internal
