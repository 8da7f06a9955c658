// The checks and constants of the compressed replica modes (dcd, ecd, choco), decided once
// before the workers start: which topologies and compressors the papers' guarantees cover,
// and CHOCO's consensus step size gamma.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <corral/error.h>
#include <corral/topology.h>
#include <corral/train.h>

#include "engine/src/compress/compressor.h"

namespace corral::internal {

inline bool IsCompressedGossip(Algorithm a) {
  return a == Algorithm::kDcd || a == Algorithm::kEcd || a == Algorithm::kChoco;
}

// CHOCO-Gossip's consensus step (Koloskova et al. 2019, Theorem 2 / Lemma 16):
//   gamma* = gap^2 omega / (16 gap + gap^2 + 4 beta^2 + 2 gap beta^2 - 8 gap omega)
// for a symmetric doubly stochastic W with spectral gap `gap` and beta = |I - W|_2, and a
// compressor of quality omega (E|Q(v)-v|^2 <= (1 - omega)|v|^2; Compressor::Delta). It
// guarantees linear consensus for any such W and Q, and is very conservative: ~1e-3 for top-10%
// on a ring of 4, ~1e-5 for top-1% on a ring of 8.
inline double ChocoTheoryGamma(double gap, double beta, double omega) {
  const double denominator =
      16 * gap + gap * gap + 4 * beta * beta + 2 * gap * beta * beta - 8 * gap * omega;
  return gap * gap * omega / denominator;
}

// CHOCO's default step when --gamma is not given: the theory's value is safe but far too
// small to mix in a few epochs (see ChocoTheoryGamma), so, like the paper's experiments that
// tune gamma per compressor, the default takes a practical value that scales with how much of
// a difference a message carries: gamma = min(1, c * delta), never below the theory's value.
// c depends on how close the codec's error comes to its bound (1 - delta)|v|^2, measured on a9a
// (ring of 8, 10 epochs; bench/experiments/compression_sweep.py) and sector:
//  - random codecs (rand-k, qsgd, quant) reach the bound: c = 1. At c = 4, rand-10%, rand-1%
//    and 2-bit qsgd diverged; at c = 1 all end within 0.01% of dpsgd. (The CHOCO paper's tuned
//    gamma for rand-1% is 0.011, about delta.)
//  - deterministic ones (top-k, sign, casts) keep the large coordinates, so their error on real
//    differences is far below the worst case: c = 4 (top-1% on sector reaches dpsgd's objective
//    within 0.2% at 0.04; larger values oscillate).
inline constexpr double kChocoGammaPerDeltaRandom = 1.0;
inline constexpr double kChocoGammaPerDeltaDeterministic = 4.0;
inline bool DeterministicCodec(std::string_view spec) {
  if (spec.starts_with("ef:")) spec.remove_prefix(3);
  return !(spec.starts_with("randk") || spec.starts_with("qsgd") || spec.starts_with("quant"));
}
inline double ChocoPracticalGamma(double theory, double delta, bool deterministic) {
  const double c = deterministic ? kChocoGammaPerDeltaDeterministic : kChocoGammaPerDeltaRandom;
  return std::max(theory, std::min(1.0, c * delta));
}

// What the compressed modes settled before the run: the gamma CHOCO uses (0 for dcd, ecd) and
// warnings for settings the algorithm's guarantee does not cover.
struct CompressedGossipPlan {
  double gamma = 0;
  std::vector<std::string> warnings;
};

// Checks a compressed mode's topology and compressor for `dim`-vectors and resolves gamma.
// dcd, ecd need an unbiased compressor and a symmetric doubly stochastic W (Tang et al. 2018):
// otherwise a warning, or kBadConfig with config.strict. All three need a static topology
// (their memories are per neighbour). --gamma and --gossip-every were checked by
// TrainConfig::Validate.
inline CompressedGossipPlan PlanCompressedGossip(const TrainConfig& config, const Topology& topology,
                                                 const Compressor& codec, std::size_t dim) {
  const std::string algo(ToString(config.algorithm));
  const auto bad = [](const std::string& message) { throw Error(ErrorCode::kBadConfig, message); };
  if (topology.time_varying()) {
    bad(algo + " keeps a memory per neighbour and needs a static topology, not the time-varying '" +
        topology.spec() + "'");
  }
  CompressedGossipPlan plan;
  const TopologyReport report = Analyze(topology);
  std::vector<std::string> problems;
  if (config.algorithm != Algorithm::kChoco && !codec.unbiased()) {
    problems.push_back(algo + " needs an unbiased compressor (Tang et al. 2018), but '" +
                       std::string(codec.spec()) +
                       "' is biased: the replicas drift; use qsgd:B, quant:B, randk:F or none, or "
                       "choco for biased compressors");
  }
  if (!report.symmetric || !report.doubly_stochastic) {
    problems.push_back(algo + " assumes a symmetric doubly stochastic W, but topology '" +
                       topology.spec() + "' is " + (report.symmetric ? "" : "not symmetric") +
                       (!report.symmetric && !report.doubly_stochastic ? " and " : "") +
                       (report.doubly_stochastic ? "" : "not doubly stochastic") +
                       ": the replicas' mean is not preserved");
  }
  for (std::string& p : problems) {
    if (config.strict) bad(p + " (--strict)");
    plan.warnings.push_back(std::move(p));
  }
  if (config.algorithm == Algorithm::kChoco) {
    const double omega = codec.Delta(dim);
    const double theory = ChocoTheoryGamma(report.gap, report.beta, omega);
    if (config.gamma == kGammaTheory) {
      plan.gamma = theory;
    } else {
      plan.gamma = config.gamma > 0 ? config.gamma : ChocoPracticalGamma(theory, omega, DeterministicCodec(codec.spec()));
    }
  }
  return plan;
}

}  // namespace corral::internal
