// none (fp32), fp16, bf16: deterministic per-coordinate casts, round to nearest even.
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "engine/src/compress/codecs.h"
#include "engine/src/compress/kernels.h"

namespace corral::internal::compress {
namespace {

class CastCompressor final : public DenseCompressor {
 public:
  explicit CastCompressor(Cast cast) : cast_(cast) {}

  std::string_view spec() const override {
    switch (cast_) {
      case Cast::kFp32:
        return "none";
      case Cast::kFp16:
        return "fp16";
      case Cast::kBf16:
        return "bf16";
    }
    return "none";
  }
  // Nearest rounding is deterministic, hence biased by up to half an ulp; only fp32 is exact.
  bool unbiased() const override { return cast_ == Cast::kFp32; }
  // Relative error per coordinate <= 2^-(p+1) with p mantissa bits (10 for fp16, 7 for bf16),
  // so |Q(v)-v|^2 <= 2^-2(p+1) |v|^2 (fp16: for |v_k| in its normal range, 2^-14..65504).
  double Delta(std::size_t) const override {
    switch (cast_) {
      case Cast::kFp32:
        return 1.0;
      case Cast::kFp16:
        return 1.0 - 0x1.0p-22;
      case Cast::kBf16:
        return 1.0 - 0x1.0p-16;
    }
    return 1.0;
  }
  std::size_t WireBytes(std::size_t d) const override { return d * Width(); }

  std::size_t Encode(std::span<const float> v, std::span<std::byte> out, Rng&) override {
    const std::size_t d = v.size();
    CheckEncode(spec(), d, std::numeric_limits<std::size_t>::max(), out.size(), WireBytes(d));
    std::byte* o = out.data();
    switch (cast_) {
      case Cast::kFp32:
        if (d > 0) std::memcpy(o, v.data(), d * sizeof(float));
        break;
      case Cast::kFp16:
        for (std::size_t i = 0; i < d; ++i) {
          const std::uint16_t h = FloatToHalfBits(v[i]);
          std::memcpy(o + 2 * i, &h, 2);
        }
        break;
      case Cast::kBf16:
        for (std::size_t i = 0; i < d; ++i) {
          const std::uint16_t b = FloatToBf16Bits(v[i]);
          std::memcpy(o + 2 * i, &b, 2);
        }
        break;
    }
    return WireBytes(d);
  }

 protected:
  void DecodeChunk(std::span<const std::byte> in, std::size_t, std::size_t begin,
                   std::span<float> out) const override {
    const std::byte* p = in.data() + begin * Width();
    switch (cast_) {
      case Cast::kFp32:
        std::memcpy(out.data(), p, out.size() * sizeof(float));
        break;
      case Cast::kFp16:
        for (std::size_t j = 0; j < out.size(); ++j) {
          std::uint16_t h;
          std::memcpy(&h, p + 2 * j, 2);
          out[j] = HalfBitsToFloat(h);
        }
        break;
      case Cast::kBf16:
        for (std::size_t j = 0; j < out.size(); ++j) {
          std::uint16_t b;
          std::memcpy(&b, p + 2 * j, 2);
          out[j] = Bf16BitsToFloat(b);
        }
        break;
    }
  }

 private:
  std::size_t Width() const { return cast_ == Cast::kFp32 ? 4 : 2; }

  Cast cast_;
};

}  // namespace

std::unique_ptr<Compressor> MakeCast(Cast cast) { return std::make_unique<CastCompressor>(cast); }

}  // namespace corral::internal::compress
