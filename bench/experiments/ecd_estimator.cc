// Experiment 1b: ECD-PSGD's estimator (Tang et al. 2018, Alg. 2) is unbiased and its variance
// decays like 1/t.
//
// A receiver tracks a sender's model x_t only through compressed extrapolations:
//   z_t = (1 - t/2) x_t + (t/2) x_{t+1},   yh_{t+1} = (1 - 2/t) yh_t + (2/t) Q(z_t),  yh_1 = x_1.
// For an unbiased Q, E[yh_t] = x_t for every t (induction: the extrapolation undoes the
// averaging's lag), and the error e_t = yh_t - x_t obeys
//   e_{t+1} = (1 - 2/t) e_t + (2/t) (Q(z_t) - z_t),
// so with bounded compression noise E|e_t|^2 ~ c/t. The sender's trajectory here converges like
// SGD's iterates (x_t = a + b/t, steps ~1/t^2) so |z_t| stays bounded. Over many independent
// trials this prints, per t (powers of two), the relative bias |mean(yh_t) - x_t| / |x_t|, the
// standard error that bias should be within, the variance E|e_t|^2 / d and t times it.
//
//   corral_ecd_estimator [--compress qsgd:4] [--dim 256] [--trials 1000] [--rounds 1024] > out.csv
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <corral/error.h>
#include <corral/rng.h>

#include "engine/src/compress/compressor.h"

namespace {

struct Options {
  std::string compress = "qsgd:4";
  std::size_t dim = 256;
  int trials = 1000;
  int rounds = 1024;
};

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--compress") {
      o.compress = value;
    } else if (flag == "--dim") {
      o.dim = std::stoul(value);
    } else if (flag == "--trials") {
      o.trials = std::stoi(value);
    } else if (flag == "--rounds") {
      o.rounds = std::stoi(value);
    } else {
      std::fprintf(stderr, "unknown flag %s (expected --compress, --dim, --trials, --rounds)\n",
                   flag.c_str());
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = Parse(argc, argv);
  const std::size_t d = o.dim;
  auto codec = corral::internal::MakeCompressor(o.compress, d);
  if (!codec->unbiased()) {
    std::fprintf(stderr, "%s is biased: ECD's estimator needs an unbiased compressor\n",
                 o.compress.c_str());
    return 2;
  }
  // The sender's trajectory x_t = a + b / t.
  std::vector<float> a(d), b(d);
  corral::Rng init(7);
  for (std::size_t u = 0; u < d; ++u) {
    a[u] = static_cast<float>(static_cast<double>(init() >> 11) * 0x1.0p-53 * 2 - 1);
    b[u] = static_cast<float>(static_cast<double>(init() >> 11) * 0x1.0p-53 * 4 - 2);
  }
  const auto x = [&](int t, std::size_t u) { return a[u] + b[u] / static_cast<float>(t); };

  const auto rounds = static_cast<std::size_t>(o.rounds);
  std::vector<double> sum_err(rounds * d, 0.0);  // per (t, u): sum over trials of e_t
  std::vector<double> sum_sq(rounds + 1, 0.0);           // per t: sum over trials of |e_t|^2
  std::vector<float> yh(d), z(d), q(d);
  std::vector<std::byte> wire(codec->WireBytes(d));
  for (int trial = 0; trial < o.trials; ++trial) {
    corral::Rng rng(11, static_cast<std::uint64_t>(trial));
    for (std::size_t u = 0; u < d; ++u) yh[u] = x(1, u);
    for (int t = 1; t < o.rounds; ++t) {
      const float ft = static_cast<float>(t);
      for (std::size_t u = 0; u < d; ++u) z[u] = (1 - ft / 2) * x(t, u) + (ft / 2) * x(t + 1, u);
      codec->Encode(z, wire, rng);
      codec->Decode(wire, q);
      double sq = 0;
      for (std::size_t u = 0; u < d; ++u) {
        yh[u] = (1 - 2 / ft) * yh[u] + (2 / ft) * q[u];
        const double e = static_cast<double>(yh[u]) - x(t + 1, u);
        sum_err[static_cast<std::size_t>(t) * d + u] += e;
        sq += e * e;
      }
      sum_sq[static_cast<std::size_t>(t)] += sq;
    }
  }
  std::printf("t,relative_bias,bias_standard_error,variance_per_coordinate,t_times_variance\n");
  const double n = o.trials;
  for (int t = 2; t < o.rounds; t *= 2) {
    double bias2 = 0, norm2 = 0;
    for (std::size_t u = 0; u < d; ++u) {
      const double mean = sum_err[static_cast<std::size_t>(t - 1) * d + u] / n;
      bias2 += mean * mean;
      norm2 += static_cast<double>(x(t, u)) * x(t, u);
    }
    const double variance = sum_sq[static_cast<std::size_t>(t - 1)] / n;  // E|e_t|^2
    // For an unbiased estimator |mean error|^2 is about E|e|^2 / trials.
    std::printf("%d,%.6g,%.6g,%.6g,%.6g\n", t, std::sqrt(bias2 / norm2),
                std::sqrt(variance / n / norm2), variance / static_cast<double>(d),
                t * variance / static_cast<double>(d));
  }
  return 0;
} catch (const corral::Error& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 2;
}
