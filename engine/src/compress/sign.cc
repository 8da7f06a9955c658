// sign: one bit per coordinate and one scale, Q(v) = (|v|_1 / d) sgn(v) (scaled sign,
// Karimireddy et al. 2019, "Error Feedback Fixes SignSGD"). Biased. With s = |v|_1/d,
// |Q(v)-v|^2 = |v|^2 - |v|_1^2/d and |v|_1 >= |v|_2, so delta = |v|_1^2/(d|v|^2) >= 1/d: the
// data-independent delta is 1/d. A zero coordinate decodes to +s. A zero vector sends s = 0
// (decodes to zeros); inf/NaN makes s inf/NaN.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>

#include "engine/src/compress/codecs.h"
#include "engine/src/compress/kernels.h"

namespace corral::internal::compress {
namespace {

class SignCompressor final : public DenseCompressor {
 public:
  std::string_view spec() const override { return "sign"; }
  bool unbiased() const override { return false; }
  double Delta(std::size_t d) const override { return d == 0 ? 1.0 : 1.0 / static_cast<double>(d); }
  std::size_t WireBytes(std::size_t d) const override { return 4 + (d + 7) / 8; }

  std::size_t Encode(std::span<const float> v, std::span<std::byte> out, Rng&) override {
    const std::size_t d = v.size();
    const std::size_t bytes = WireBytes(d);
    CheckEncode(spec(), d, std::numeric_limits<std::size_t>::max(), out.size(), bytes);
    const float scale = d == 0 ? 0.0f : static_cast<float>(SumAbs(v) / static_cast<double>(d));
    StoreF32(out.data(), scale);
    std::byte* bits = out.data() + 4;
    std::size_t i = 0;
    for (; i + 64 <= d; i += 64) {  // 64 signs into one word: a vectorisable reduction
      std::uint64_t word = 0;
      for (std::size_t j = 0; j < 64; ++j) {
        word |= static_cast<std::uint64_t>(v[i + j] < 0 ? 1 : 0) << j;
      }
      std::memcpy(bits + i / 8, &word, 8);
    }
    for (; i < d; i += 8) {
      unsigned byte = 0;
      for (std::size_t j = 0; j < 8 && i + j < d; ++j) byte |= (v[i + j] < 0 ? 1u : 0u) << j;
      bits[i / 8] = static_cast<std::byte>(byte);
    }
    return bytes;
  }

 protected:
  void DecodeChunk(std::span<const std::byte> in, std::size_t, std::size_t begin,
                   std::span<float> out) const override {
    // Flip the scale's sign bit with the message bit: a branch-free, vectorisable select.
    const std::uint32_t scale = std::bit_cast<std::uint32_t>(LoadF32(in.data()));
    const std::byte* bits = in.data() + 4 + begin / 8;
    std::size_t j = 0;
    for (; j + 64 <= out.size(); j += 64) {
      std::uint64_t word;
      std::memcpy(&word, bits + j / 8, 8);
      float* o = out.data() + j;
      for (std::size_t b = 0; b < 64; ++b) {
        o[b] = std::bit_cast<float>(scale ^ (static_cast<std::uint32_t>(word >> b) << 31));
      }
    }
    for (; j < out.size(); ++j) {
      const auto bit = static_cast<std::uint32_t>(bits[j / 8]) >> (j % 8);
      out[j] = std::bit_cast<float>(scale ^ (bit << 31));
    }
  }
};

}  // namespace

std::unique_ptr<Compressor> MakeSign() { return std::make_unique<SignCompressor>(); }

}  // namespace corral::internal::compress
