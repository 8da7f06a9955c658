// The codecs behind MakeCompressor, and what they share. Wire formats (little-endian; d is the
// vector length, k = KeptCount(F, d)):
//   none        d float32
//   fp16, bf16  d uint16
//   qsgd:B:K    ceil(d/K) float32 bucket norms |v_b|_2 (one for d = 0 or K = 0), then d B-bit
//               codes packed LSB-first (PackCodes): the top bit is the sign (1 = negative), the
//               rest the level 0..s. qsgd:8 (K = 512) = d + 4 ceil(d/512) bytes.
//   quant:B     float32 min, float32 max, then d B-bit levels 0..2^B-1 packed LSB-first
//   randk, topk k uint32 indices, then k float32 values (randk:F already scaled by d/k)
//   sign        float32 scale |v|_1 / d, then ceil(d/8) bytes of sign bits (LSB-first, 1 =
//               negative)
//   ef:<inner>  the inner codec's message
//
// Thread safety: see Compressor (owner-only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "engine/src/compress/compressor.h"

namespace corral::internal::compress {

// Codecs whose message describes every coordinate. They decode kChunk coordinates at a time into
// a stack buffer, so DecodeAdd is one fused pass with no scratch and no allocation.
class DenseCompressor : public Compressor {
 public:
  void Decode(std::span<const std::byte> in, std::span<float> out) const final;
  void DecodeAdd(std::span<const std::byte> in, float scale, std::span<float> acc) const final;

 protected:
  // Writes Q(v)[begin, begin + out.size()) of a d-vector's message; begin % kChunk == 0 and
  // out.size() <= kChunk.
  virtual void DecodeChunk(std::span<const std::byte> in, std::size_t d, std::size_t begin,
                           std::span<float> out) const = 0;
};

// Throws corral::Error(kBadConfig) unless d <= max_d and out_bytes >= wire_bytes: the
// preconditions of Encode, checked once per message (the message is built only on failure).
void CheckEncode(std::string_view spec, std::size_t d, std::size_t max_d, std::size_t out_bytes,
                 std::size_t wire_bytes);

// Coordinates kept by randk:F / topk:F for a d-vector: max(1, round(F d)), at most d.
std::size_t KeptCount(double fraction, std::size_t d);

// Shortest decimal that reads back as f ("0.01"), for canonical specs.
std::string FormatFraction(double f);

enum class Cast { kFp32, kFp16, kBf16 };
std::unique_ptr<Compressor> MakeCast(Cast cast);
// qsgd:B's coordinates per norm when the spec names none (the QSGD paper's bucket size).
inline constexpr std::size_t kQsgdDefaultBucket = 512;
std::unique_ptr<Compressor> MakeQsgd(int bits, std::size_t bucket);
std::unique_ptr<Compressor> MakeAffineQuant(int bits);
std::unique_ptr<Compressor> MakeRandK(double fraction, bool scaled, std::size_t dim);
std::unique_ptr<Compressor> MakeTopK(double fraction, std::size_t dim);
std::unique_ptr<Compressor> MakeSign();
std::unique_ptr<Compressor> MakeErrorFeedback(std::unique_ptr<Compressor> inner, std::size_t dim);

// The residual e of an ef: compressor (what has not been sent yet; for diagnostics and tests),
// or an empty span for any other codec.
std::span<const float> Residual(const Compressor& compressor);

}  // namespace corral::internal::compress
