// The algorithms, one line each: the name the CLI takes, the line `corral train --help` shows
// for it (AlgorithmHelp), and what of the run's settings it reads. ParseAlgorithm, ToString,
// the --algo help and TrainConfig::Validate read this table; the mode itself lives in its own
// file under modes/ and reports its settings through its Describe (runtime/describe.h).
#pragma once

#include <array>
#include <string_view>

#include <corral/kinds.h>

namespace corral::internal {

// What --link does for a mode.
enum class LinkUse {
  kNone,             // nothing: --link is refused
  kRounds,           // models every gossip message (replica modes with rounds)
  kParameterServer,  // costs each step as a parameter server would pay it (--topology star)
};

struct ModeInfo {
  Algorithm algorithm;
  std::string_view name;
  std::string_view help;
  bool topology = false;  // gossips over --topology (a bad spec fails before the data is read)
  LinkUse link = LinkUse::kNone;
};

inline constexpr std::array<ModeInfo, 12> kModes{{
    {Algorithm::kHogwild, "hogwild",
     "one shared model updated without locks (HOGWILD!); --hot-coords, --hot-sync"},
    {Algorithm::kBuckwild, "buckwild",
     "hogwild on fixed point, linear models only; --bits, --model-bits, --rounding"},
    {Algorithm::kLocked, "locked", "hogwild with one lock around each update (the baseline)"},
    {Algorithm::kSync, "sync",
     "synchronous mini-batch SGD: all workers' --batch gradients averaged per step; --link on "
     "--topology star",
     false, LinkUse::kParameterServer},
    {Algorithm::kQsgd, "qsgd", "sync with QSGD-compressed gradients; --compress qsgd:B[:K], --link",
     false, LinkUse::kParameterServer},
    {Algorithm::kDpsgd, "dpsgd",
     "D-PSGD: replicas mixing over --topology every --gossip-every steps; --mix-order, --link",
     true, LinkUse::kRounds},
    {Algorithm::kLocal, "local",
     "local SGD: exact averages (the complete graph) every --gossip-every steps; --link", false,
     LinkUse::kRounds},
    {Algorithm::kDcd, "dcd",
     "DCD-PSGD: compressed model changes over --topology every --gossip-every steps; --compress (unbiased), "
     "--link, --strict",
     true, LinkUse::kRounds},
    {Algorithm::kEcd, "ecd",
     "ECD-PSGD: compressed extrapolations over --topology every step; --compress (unbiased), "
     "--link, --strict",
     true, LinkUse::kRounds},
    {Algorithm::kChoco, "choco",
     "CHOCO-SGD: compressed differences over --topology every --gossip-every steps; --compress "
     "(any), --gamma, --link",
     true, LinkUse::kRounds},
    {Algorithm::kAdpsgd, "adpsgd",
     "AD-PSGD: asynchronous pairwise averages with a random --topology neighbour every "
     "--gossip-every steps; --compress, --gamma",
     true},
    {Algorithm::kHogwildPP, "hogwild++",
     "hogwild inside groups of --group-size threads, groups mixed on a token ring, the token "
     "held --gossip-every steps (1: automatic)"},
}};

// The table's line for `a`.
constexpr const ModeInfo& InfoOf(Algorithm a) {
  for (const ModeInfo& m : kModes) {
    if (m.algorithm == a) return m;
  }
  return kModes[0];  // unreachable: every Algorithm has a line (checked below)
}

static_assert([] {
  for (std::size_t i = 0; i < kModes.size(); ++i) {
    if (static_cast<std::size_t>(kModes[i].algorithm) != i) return false;
  }
  return true;
}(), "kModes lists every Algorithm once, in the enum's order");

}  // namespace corral::internal
