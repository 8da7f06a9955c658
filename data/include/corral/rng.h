// corral::Rng: a small, fast, seedable generator (xoshiro256**, Blackman & Vigna 2018).
//
// Thread safety: thread-compatible; every worker owns its own engine, seeded from the run's
// seed and the worker's index, so results depend only on the seed and the thread count.
#pragma once

#include <cstdint>
#include <span>
#include <utility>

namespace corral {

class Rng {
 public:
  using result_type = std::uint64_t;

  explicit Rng(std::uint64_t seed = 1, std::uint64_t stream = 0) {
    // SplitMix64 expands (seed, stream) into the 256-bit state; it never yields all zeros.
    std::uint64_t x = seed ^ (0x9E3779B97F4A7C15ULL * (stream + 1));
    for (auto& word : s_) word = SplitMix(x);
  }

  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return ~result_type{0}; }

  result_type operator()() {
    const std::uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, bound) without modulo bias (Lemire 2019).
  std::uint64_t Below(std::uint64_t bound) {
    __extension__ using Wide = unsigned __int128;  // GCC/Clang builtin; __extension__: not ISO
    Wide m = static_cast<Wide>((*this)()) * bound;
    auto low = static_cast<std::uint64_t>(m);
    if (low < bound) {
      const std::uint64_t threshold = -bound % bound;
      while (low < threshold) {
        m = static_cast<Wide>((*this)()) * bound;
        low = static_cast<std::uint64_t>(m);
      }
    }
    return static_cast<std::uint64_t>(m >> 64);
  }

  // Uniform in [0, 1) with 24 random bits.
  float UniformFloat() { return static_cast<float>((*this)() >> 40) * 0x1.0p-24f; }

  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>((*this)() >> 11) * 0x1.0p-53; }

  // Fisher-Yates shuffle in place.
  template <typename T>
  void Shuffle(std::span<T> items) {
    for (std::size_t i = items.size(); i > 1; --i) {
      std::swap(items[i - 1], items[Below(i)]);
    }
  }

  // The generator's position, its whole 256-bit state: a checkpoint saves it and a resumed
  // run writes it back and continues the same stream, every later draw repeated.
  std::span<std::uint64_t, 4> State() { return std::span<std::uint64_t, 4>(s_); }

 private:
  static std::uint64_t Rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static std::uint64_t SplitMix(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  std::uint64_t s_[4];
};

}  // namespace corral
