// Experiment 1a: DCD-PSGD's replicas are exact (Tang et al. 2018, Alg. 1).
//
// Every worker keeps copies xh_j of its neighbours' models, updated only by decoding the
// compressed differences they send; the algorithm needs them bit-identical to the owners'
// models. This trains L2 logistic regression with `--algo dcd` on a ring, one round per epoch
// (a batch is a whole shard), and after every round compares each copy with its owner bit for
// bit. Prints CSV: round, mismatched_coordinates (over all copies), max_abs_difference.
//
//   corral_dcd_exactness --data a9a [--compress qsgd:8] [--workers 8] [--rounds 30]
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <corral/corral.h>

#include "engine/src/modes/compressed_gossip.h"

namespace corral {
namespace {

struct Options {
  std::string data, compress = "qsgd:8";
  int workers = 8, rounds = 30;
};

// The DCD mode with a check between epochs (workers parked: every memory is quiescent).
class CheckedDcd : public internal::CompressedGossipMode<LogisticModel> {
 public:
  using CompressedGossipMode::CompressedGossipMode;
  void EndEpoch() {
    std::uint64_t mismatched = 0;
    double largest = 0;
    for (int w = 0; w < topology().workers(); ++w) {
      const std::span<const Neighbour> in = topology().Neighbours(w);
      for (std::size_t k = 0; k < in.size(); ++k) {
        const std::span<const float> copy = NeighbourMemory(w, k);
        const std::span<const float> owner = Replica(in[k].worker);
        for (std::size_t u = 0; u < copy.size(); ++u) {
          if (std::bit_cast<std::uint32_t>(copy[u]) != std::bit_cast<std::uint32_t>(owner[u])) {
            ++mismatched;
            largest = std::max(largest, std::fabs(static_cast<double>(copy[u]) - owner[u]));
          }
        }
      }
    }
    std::printf("%llu,%llu,%.9g\n", static_cast<unsigned long long>(RoundsDone()),
                static_cast<unsigned long long>(mismatched), largest);
  }
};

int Run(const Options& o) {
  const Dataset train = LoadDataset(o.data);
  const float l2 = 1.0f / static_cast<float>(train.rows());
  const LogisticModel model(train, l2);
  const auto shard = static_cast<int>((train.rows() + static_cast<std::size_t>(o.workers) - 1) /
                                      static_cast<std::size_t>(o.workers));
  const TrainConfig config{.algorithm = Algorithm::kDcd, .threads = o.workers, .epochs = o.rounds,
                           .batch = shard, .compress = o.compress, .topology = "ring",
                           .gossip_every = 1};
  config.Validate();
  bool searched = false;
  internal::RunPlan plan = internal::PlanRun(model, train, config, o.workers,
                                             static_cast<std::size_t>(shard), searched);
  std::printf("round,mismatched_coordinates,max_abs_difference\n");
  internal::Coordinate<LogisticModel, CheckedDcd>(model, nullptr, std::move(plan), searched, l2, {});
  return 0;
}

}  // namespace
}  // namespace corral

int main(int argc, char** argv) try {
  corral::Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--data") {
      o.data = value;
    } else if (flag == "--compress") {
      o.compress = value;
    } else if (flag == "--workers") {
      o.workers = std::stoi(value);
    } else if (flag == "--rounds") {
      o.rounds = std::stoi(value);
    } else {
      std::fprintf(stderr, "unknown flag %s (expected --data, --compress, --workers, --rounds)\n",
                   flag.c_str());
      return 2;
    }
  }
  if (o.data.empty()) {
    std::fprintf(stderr, "--data PATH is required\n");
    return 2;
  }
  return corral::Run(o);
} catch (const corral::Error& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 2;
}
