// Helpers of the compressor tests: random vectors and one-call encode/decode.
#pragma once

#include <corral/rng.h>

#include <cstddef>
#include <random>
#include <span>
#include <string_view>
#include <vector>

#include "engine/src/compress/compressor.h"

namespace corral::testing {

// Normally distributed coordinates (no exact zeros, all magnitudes distinct almost surely).
inline std::vector<float> Gaussian(std::size_t d, std::uint64_t seed, float sigma = 1.0f) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> v(d);
  for (float& x : v) x = normal(gen);
  return v;
}

inline double Norm2(std::span<const float> v) {
  double s = 0;
  for (float x : v) s += static_cast<double>(x) * x;
  return s;
}

inline double Dist2(std::span<const float> a, std::span<const float> b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double e = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    s += e * e;
  }
  return s;
}

// Encodes v (the message is exactly WireBytes long) and returns the message.
inline std::vector<std::byte> Encode(internal::Compressor& c, std::span<const float> v, Rng& rng) {
  std::vector<std::byte> message(c.WireBytes(v.size()));
  const std::size_t written = c.Encode(v, message, rng);
  message.resize(written);
  return message;
}

// Q(v) through one encode and decode.
inline std::vector<float> RoundTrip(internal::Compressor& c, std::span<const float> v, Rng& rng) {
  const std::vector<std::byte> message = Encode(c, v, rng);
  std::vector<float> out(v.size());
  c.Decode(message, out);
  return out;
}

}  // namespace corral::testing
