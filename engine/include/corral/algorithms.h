// The training algorithms as the CLI lists them, the list itself (for tools and tests that
// run every algorithm), and what --algo auto runs.
#pragma once

#include <string>
#include <vector>

#include <corral/dataset.h>
#include <corral/kinds.h>
#include <corral/train.h>

namespace corral {

// One line per algorithm, "  name  what it does; the flags it reads", for --algo's help.
std::string AlgorithmHelp();

// Every algorithm, in the order of the help text (modes only: not kAuto).
std::vector<Algorithm> Algorithms();

// The algorithm a run uses, and for --algo auto why.
struct AlgorithmChoice {
  Algorithm algorithm = Algorithm::kHogwild;  // never kAuto
  int group_size = 0;  // TrainConfig::group_size to run with (hogwild++: 1 for a dense model)
  // --algo auto: the reason, e.g. "dense model mlp at 2 threads, groups of 1"; empty when the
  // algorithm was given.
  std::string reason;
};

// config.algorithm, or for Algorithm::kAuto the mode for config.model on `train` with `threads`
// workers on each of `ranks` processes (docs/algorithms.md, "Choosing the algorithm"):
//   - an option only hogwild runs (--optimizer adagrad or momentum, --schedule seeded:TAU):
//     hogwild; --group-size C > 0 (hogwild++'s alone): hogwild++; both: kBadConfig;
//   - across ranks: hogwild++ (hogwild does not run across ranks);
//   - 1 thread: hogwild;
//   - a dense-gradient model (mlp) at 2 or more threads: hogwild++ with groups of 1 thread
//     (every step writes every parameter, so a model shared by two cores moves its cache
//     lines on every step);
//   - else (linear, softmax and mf models, whose steps write the coordinates of their rows):
//     hogwild, with the hot head on sparse data.
// With config.resume_path (read here) a choice other than the saved run's algorithm gives way
// to the saved one: a resumed run continues what it continues. Throws corral::Error
// (kBadConfig) for contradicting options, (kBadInput/kIo) for an unreadable resume file.
AlgorithmChoice ResolveAlgorithm(const TrainConfig& config, const Dataset& train, int threads,
                                 int ranks = 1);

}  // namespace corral
