// MakeCompressor (the --compress parser) and what the codecs share.
#include "engine/src/compress/compressor.h"

#include <corral/error.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <system_error>
#include <vector>

#include "engine/src/compress/codecs.h"
#include "engine/src/compress/kernels.h"

namespace corral::internal {
namespace compress {

void DenseCompressor::Decode(std::span<const std::byte> in, std::span<float> out) const {
  const std::size_t d = out.size();
  for (std::size_t begin = 0; begin < d; begin += kChunk) {
    DecodeChunk(in, d, begin, out.subspan(begin, std::min(kChunk, d - begin)));
  }
}

void DenseCompressor::DecodeAdd(std::span<const std::byte> in, float scale,
                                std::span<float> acc) const {
  const std::size_t d = acc.size();
  alignas(64) float buffer[kChunk];
  for (std::size_t begin = 0; begin < d; begin += kChunk) {
    const std::size_t count = std::min(kChunk, d - begin);
    DecodeChunk(in, d, begin, std::span(buffer, count));
    float* a = acc.data() + begin;
    for (std::size_t j = 0; j < count; ++j) a[j] += scale * buffer[j];
  }
}

void CheckEncode(std::string_view spec, std::size_t d, std::size_t max_d, std::size_t out_bytes,
                 std::size_t wire_bytes) {
  if (d > max_d) {
    throw Error(ErrorCode::kBadConfig,
                "compressor '" + std::string(spec) + "' was made for vectors of length " +
                    std::to_string(max_d) + " but got one of length " + std::to_string(d));
  }
  if (out_bytes < wire_bytes) {
    throw Error(ErrorCode::kBadConfig,
                "compressor '" + std::string(spec) + "' needs " + std::to_string(wire_bytes) +
                    " bytes for a message but was given " + std::to_string(out_bytes));
  }
}

std::size_t KeptCount(double fraction, std::size_t d) {
  const auto k = static_cast<std::size_t>(std::llround(fraction * static_cast<double>(d)));
  return std::min(d, std::max<std::size_t>(1, k));
}

std::string FormatFraction(double f) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, f);
  return std::string(buffer, result.ptr);
}

}  // namespace compress

namespace {

constexpr std::string_view kValidForms =
    "valid forms: none, fp16, bf16, qsgd:B[:K] (K coordinates per norm, default 512, 0 = one "
    "per message), quant:B (B bits per coordinate, 2..16), randk:F, "
    "randk:F:unscaled, topk:F (F the fraction of coordinates kept, in (0, 1]), sign, "
    "ef:<any of these>";

[[noreturn]] void BadSpec(std::string_view spec, std::string_view why) {
  throw Error(ErrorCode::kBadConfig, "--compress: bad spec '" + std::string(spec) + "': " +
                                         std::string(why) + "; " + std::string(kValidForms));
}

std::vector<std::string_view> SplitColons(std::string_view s) {
  std::vector<std::string_view> parts;
  while (true) {
    const std::size_t colon = s.find(':');
    parts.push_back(s.substr(0, colon));
    if (colon == std::string_view::npos) return parts;
    s.remove_prefix(colon + 1);
  }
}

int ParseBits(std::string_view text, std::string_view spec) {
  int bits = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), bits);
  if (ec != std::errc() || end != text.data() + text.size() || bits < 2 || bits > 16) {
    BadSpec(spec, "B must be an integer in 2..16, not '" + std::string(text) + "'");
  }
  return bits;
}

std::size_t ParseBucket(std::string_view text, std::string_view spec) {
  std::size_t bucket = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), bucket);
  if (ec != std::errc() || end != text.data() + text.size() || bucket > (std::size_t{1} << 31)) {
    BadSpec(spec, "K must be an integer in 0..2^31 (coordinates per norm, 0 = one per message), "
                  "not '" + std::string(text) + "'");
  }
  return bucket;
}

double ParseFraction(std::string_view text, std::string_view spec) {
  double f = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), f);
  // !(f > 0 && f <= 1) also rejects NaN.
  if (ec != std::errc() || end != text.data() + text.size() || !(f > 0 && f <= 1)) {
    BadSpec(spec, "F must be a number in (0, 1], not '" + std::string(text) + "'");
  }
  return f;
}

// A codec other than ef:; `whole` is the full spec, for messages.
std::unique_ptr<Compressor> MakeBase(std::string_view spec, std::string_view whole,
                                     std::size_t dim) {
  const std::vector<std::string_view> parts = SplitColons(spec);
  const std::string_view name = parts[0];
  // Rejects a wrong number of ':'-separated arguments, naming the expected form.
  const auto expect = [&](std::size_t min_args, std::size_t max_args, std::string_view form) {
    const std::size_t args = parts.size() - 1;
    if (args < min_args || args > max_args) {
      std::string why = "expected the form ";
      why += form;
      BadSpec(whole, why);
    }
  };
  using namespace compress;
  if (name == "none" || name == "fp32") {
    expect(0, 0, "none");
    return MakeCast(Cast::kFp32);
  }
  if (name == "fp16") {
    expect(0, 0, "fp16");
    return MakeCast(Cast::kFp16);
  }
  if (name == "bf16") {
    expect(0, 0, "bf16");
    return MakeCast(Cast::kBf16);
  }
  if (name == "sign") {
    expect(0, 0, "sign");
    return MakeSign();
  }
  if (name == "qsgd") {
    expect(1, 2, "qsgd:B[:K]");
    const int bits = ParseBits(parts[1], whole);
    return MakeQsgd(bits, parts.size() == 3 ? ParseBucket(parts[2], whole) : kQsgdDefaultBucket);
  }
  if (name == "quant") {
    expect(1, 1, "quant:B");
    return MakeAffineQuant(ParseBits(parts[1], whole));
  }
  if (name == "topk") {
    expect(1, 1, "topk:F");
    return MakeTopK(ParseFraction(parts[1], whole), dim);
  }
  if (name == "randk") {
    expect(1, 2, "randk:F[:unscaled]");
    const double f = ParseFraction(parts[1], whole);
    if (parts.size() == 3 && parts[2] != "unscaled") {
      BadSpec(whole, "the only option of randk is 'unscaled', not '" + std::string(parts[2]) + "'");
    }
    return MakeRandK(f, /*scaled=*/parts.size() == 2, dim);
  }
  if (name == "ef") BadSpec(whole, "error feedback cannot be nested");
  BadSpec(whole, "unknown compressor '" + std::string(name) + "'");
}

}  // namespace

std::unique_ptr<Compressor> MakeCompressor(std::string_view spec, std::size_t dim) {
  constexpr std::string_view kEf = "ef:";
  if (spec.starts_with(kEf)) {
    return compress::MakeErrorFeedback(MakeBase(spec.substr(kEf.size()), spec, dim), dim);
  }
  return MakeBase(spec, spec, dim);
}

}  // namespace corral::internal
