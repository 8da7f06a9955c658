// The algorithms, one row each: the name the CLI takes, the line `corral train --help` shows
// for it (AlgorithmHelp), the family that runs it and what of the run's settings it reads.
// ParseAlgorithm, ToString, the --algo help, TrainConfig::Validate and Train read this table;
// the mode itself lives in its own file under modes/ and reports its settings through its
// Describe (runtime/describe.h).
//
// Adding a mode: its file modes/<name>.cc (the mode and its ModeRunner constant, run_mode.h;
// modes/*.cc are compiled by a glob), the constant's declaration and a row here, and the name in
// the public Algorithm enum (<corral/kinds.h>).
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

// Each family's runner, defined in its modes/<family>.cc (run_mode.h).
struct ModeRunner;
extern const ModeRunner kHogwildFamily;  // hogwild, locked
extern const ModeRunner kBuckwildFamily;
extern const ModeRunner kSyncFamily;  // sync, qsgd
extern const ModeRunner kDpsgdFamily;  // dpsgd, local
extern const ModeRunner kCompressedGossipFamily;  // dcd, ecd, choco
extern const ModeRunner kAdpsgdFamily;
extern const ModeRunner kHogwildPPFamily;

struct ModeInfo {
  Algorithm algorithm;
  std::string_view name;
  std::string_view help;
  const ModeRunner* runner;
  bool topology = false;  // gossips over --topology (a bad spec fails before the data is read)
  LinkUse link = LinkUse::kNone;
  std::string_view compress = "none";  // the --compress it takes when none is given
  bool all_batches = false;  // one step averages every worker's --batch (the step search's batch)
  // Each worker steps its own replica, averaged with the others': a replica takes 1 / workers of
  // the run's steps (the step search's run length, PlanRun).
  bool replicas = false;
  // Its result is a function of the seed and --threads whatever the scheduling (the workers
  // step and take their rounds together): --schedule seeded has nothing to fix.
  bool round_based = false;
  // Runs --schedule seeded:TAU (seeded_schedule.h); the other asynchronous modes refuse it.
  bool seeded = false;
  // Runs across ranks (mpirun -np R corral train): its workers take global ids from the run
  // plan and it reaches the other ranks through the plan's Cluster; the others refuse.
  bool across_ranks = false;
};

inline constexpr auto kModes = std::to_array<ModeInfo>({
    {.algorithm = Algorithm::kHogwild, .name = "hogwild",
     .help = "one shared model updated without locks (HOGWILD!); --hot-coords, --hot-sync",
     .runner = &kHogwildFamily, .seeded = true},
    {.algorithm = Algorithm::kBuckwild, .name = "buckwild",
     .help = "hogwild on fixed point, linear models only; --bits, --model-bits, --rounding",
     .runner = &kBuckwildFamily, .seeded = true},
    {.algorithm = Algorithm::kLocked, .name = "locked",
     .help = "hogwild with one lock around each update (the baseline)", .runner = &kHogwildFamily},
    {.algorithm = Algorithm::kSync, .name = "sync",
     .help = "synchronous mini-batch SGD: all workers' --batch gradients averaged per step; "
             "--link on --topology star",
     .runner = &kSyncFamily, .link = LinkUse::kParameterServer, .all_batches = true, .round_based = true, .across_ranks = true},
    {.algorithm = Algorithm::kQsgd, .name = "qsgd",
     .help = "sync with QSGD-compressed gradients; --compress qsgd:B[:K], --link",
     .runner = &kSyncFamily, .link = LinkUse::kParameterServer, .compress = "qsgd:8",
     .all_batches = true, .round_based = true, .across_ranks = true},
    {.algorithm = Algorithm::kDpsgd, .name = "dpsgd",
     .help = "D-PSGD: replicas mixing over --topology every --gossip-every steps; --mix-order, "
             "--link",
     .runner = &kDpsgdFamily, .topology = true, .link = LinkUse::kRounds, .replicas = true, .round_based = true, .across_ranks = true},
    {.algorithm = Algorithm::kLocal, .name = "local",
     .help = "local SGD: exact averages (the complete graph) every --gossip-every steps, sending only the changed coordinates while few; --link",
     .runner = &kDpsgdFamily, .link = LinkUse::kRounds, .replicas = true, .round_based = true, .across_ranks = true},
    {.algorithm = Algorithm::kDcd, .name = "dcd",
     .help = "DCD-PSGD: compressed model changes over --topology every --gossip-every steps; "
             "--compress (unbiased), --link, --strict",
     .runner = &kCompressedGossipFamily, .topology = true, .link = LinkUse::kRounds,
     .compress = "qsgd:8", .replicas = true, .round_based = true, .across_ranks = true},
    {.algorithm = Algorithm::kEcd, .name = "ecd",
     .help = "ECD-PSGD: compressed extrapolations over --topology every --gossip-every steps; "
             "--compress (unbiased), --link, --strict",
     .runner = &kCompressedGossipFamily, .topology = true, .link = LinkUse::kRounds,
     .compress = "qsgd:8", .replicas = true, .round_based = true, .across_ranks = true},
    {.algorithm = Algorithm::kChoco, .name = "choco",
     .help = "CHOCO-SGD: compressed differences over --topology every --gossip-every steps; "
             "--compress (any), --gamma, --link",
     .runner = &kCompressedGossipFamily, .topology = true, .link = LinkUse::kRounds,
     .compress = "qsgd:8", .replicas = true, .round_based = true, .across_ranks = true},
    {.algorithm = Algorithm::kAdpsgd, .name = "adpsgd",
     .help = "AD-PSGD: asynchronous pairwise averages with a random --topology neighbour every "
             "--gossip-every steps; --compress, --gamma",
     .runner = &kAdpsgdFamily, .topology = true, .replicas = true},
    {.algorithm = Algorithm::kHogwildPP, .name = "hogwild++",
     .help = "hogwild inside groups of --group-size threads, groups mixed on a token ring, the "
             "token held --gossip-every steps (auto: from the model's size)",
     .runner = &kHogwildPPFamily, .across_ranks = true},
});

// The table's line for `a`. \pre a != kAuto (Train resolves it first: ResolveAlgorithm).
constexpr const ModeInfo& InfoOf(Algorithm a) {
  for (const ModeInfo& m : kModes) {
    if (m.algorithm == a) return m;
  }
  return kModes[0];  // unreachable: every Algorithm but kAuto has a line (checked below)
}

static_assert([] {
  for (std::size_t i = 0; i < kModes.size(); ++i) {
    if (static_cast<std::size_t>(kModes[i].algorithm) != i) return false;
  }
  return kModes.size() == static_cast<std::size_t>(Algorithm::kAuto);
}(), "kModes lists every Algorithm but kAuto once, in the enum's order");

}  // namespace corral::internal
