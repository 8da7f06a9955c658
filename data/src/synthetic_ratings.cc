// Synthetic low-rank ratings (see <corral/synthetic.h>).
//
// Random streams: stream 0 draws the factors, stream 1 the (user, item) pairs, then each
// rating's noise and its train/test draw. Pairs are distinct: drawn by rejection while at
// most half of all pairs are wanted, else by a partial shuffle of every pair.
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <unordered_set>
#include <vector>

#include <corral/error.h>
#include <corral/limits.h>
#include <corral/rng.h>
#include <corral/synthetic.h>

#include "data/src/formats.h"

namespace corral {
namespace {

[[noreturn]] void Bad(const std::string& what) {
  throw Error(ErrorCode::kBadConfig, "synthetic ratings: " + what);
}

double Normal(Rng& rng) {
  const double radius = std::sqrt(-2.0 * std::log(1.0 - rng.Uniform()));
  return radius * std::cos(2.0 * std::numbers::pi * rng.Uniform());
}

void Validate(const RatingsSpec& s) {
  if (s.users == 0 || s.items == 0) Bad("users and items must be at least 1");
  if (s.users > (std::size_t{1} << 31) || s.items > (std::size_t{1} << 31)) {
    Bad("users and items must each be at most 2^31 (columns are 32-bit)");
  }
  if (s.rank == 0) Bad("rank is 0, expected at least 1");
  if (s.ratings == 0) Bad("ratings is 0, expected at least 1");
  // The planted factors, then per rating its pair code, ids, rating and (in the rejection
  // draw) a hash-set slot: all before the first allocation.
  CheckMemory({static_cast<double>(s.users) + static_cast<double>(s.items),
               static_cast<double>(s.rank), sizeof(float)},
              ErrorCode::kBadConfig, "synthetic ratings: rank " + std::to_string(s.rank),
              "the planted factors of " + std::to_string(s.users) + " users and " +
                  std::to_string(s.items) + " items");
  CheckMemory({static_cast<double>(s.ratings), 64}, ErrorCode::kBadConfig,
              "synthetic ratings: ratings " + std::to_string(s.ratings), "the generated ratings");
  const double pairs = static_cast<double>(s.users) * static_cast<double>(s.items);
  if (static_cast<double>(s.ratings) > pairs) {
    Bad("ratings " + std::to_string(s.ratings) + " exceeds users x items = " +
        std::to_string(s.users * s.items) + ", expected at most one rating per pair");
  }
  if (!(s.noise >= 0) || !std::isfinite(s.noise)) {
    Bad("noise must be a finite standard deviation >= 0");
  }
  if (!(s.test_fraction >= 0 && s.test_fraction < 1)) {
    Bad("test_fraction must be in [0, 1)");
  }
}

// `count` distinct pair codes user * items + item, in draw order.
std::vector<std::uint64_t> DistinctPairs(const RatingsSpec& s, Rng& rng) {
  const std::uint64_t total = std::uint64_t{s.users} * s.items;
  std::vector<std::uint64_t> out;
  out.reserve(s.ratings);
  if (s.ratings <= total / 2) {
    std::unordered_set<std::uint64_t> seen;
    seen.reserve(s.ratings * 2);
    while (out.size() < s.ratings) {
      const std::uint64_t code = rng.Below(total);
      if (seen.insert(code).second) out.push_back(code);
    }
  } else {
    std::vector<std::uint64_t> all(total);
    for (std::uint64_t c = 0; c < total; ++c) all[c] = c;
    for (std::size_t i = 0; i < s.ratings; ++i) {
      std::swap(all[i], all[i + rng.Below(total - i)]);
      out.push_back(all[i]);
    }
  }
  return out;
}

}  // namespace

SyntheticRatings MakeSyntheticRatings(const RatingsSpec& s) {
  Validate(s);
  SyntheticRatings out;
  Rng model_rng(s.seed, 0);
  // Entries N(0, rank^-1/2): <u, v> then has variance rank * (rank^-1/2)^2 = 1.
  const double scale = std::pow(static_cast<double>(s.rank), -0.25);
  out.user_factors.resize(s.users * s.rank);
  out.item_factors.resize(s.items * s.rank);
  for (float& f : out.user_factors) f = static_cast<float>(scale * Normal(model_rng));
  for (float& f : out.item_factors) f = static_cast<float>(scale * Normal(model_rng));

  Rng rng(s.seed, 1);
  const std::vector<std::uint64_t> pairs = DistinctPairs(s, rng);
  std::vector<std::uint64_t> users[2], items[2];
  std::vector<float> ratings[2];
  for (std::uint64_t code : pairs) {
    const std::uint64_t u = code / s.items;
    const std::uint64_t i = code % s.items;
    double dot = 0;
    for (std::size_t k = 0; k < s.rank; ++k) {
      dot += static_cast<double>(out.user_factors[u * s.rank + k]) *
             static_cast<double>(out.item_factors[i * s.rank + k]);
    }
    const auto rating = static_cast<float>(out.mean + dot + s.noise * Normal(rng));
    const int part = rng.Uniform() < s.test_fraction ? 1 : 0;
    users[part].push_back(u + 1);  // ids in files are 1-based, as in MovieLens
    items[part].push_back(i + 1);
    ratings[part].push_back(rating);
  }
  if (users[0].empty()) Bad("every rating went to the test set, expected a smaller test_fraction");
  out.train = detail::BuildRatings(users[0], items[0], ratings[0], nullptr, "synthetic-ratings");
  if (!users[1].empty()) {
    out.test = detail::BuildRatings(users[1], items[1], ratings[1], out.train.ratings(),
                                    "synthetic-ratings-test");
  }
  return out;
}

}  // namespace corral
