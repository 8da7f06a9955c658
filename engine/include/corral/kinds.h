// The named axes of a run: algorithm, model, placement, shuffling. Each has the spelling the CLI takes.
#pragma once

#include <string_view>

namespace corral {

enum class Algorithm {
  kHogwild,   // lock-free shared model, relaxed atomic reads and writes (Niu et al. 2011)
  kBuckwild,  // hogwild on an 8- or 16-bit fixed-point model and dataset (De Sa et al. 2015)
  kLocked,    // the same loop with one lock around each update (HOGWILD!'s baseline)
  kSync,      // synchronous mini-batch SGD over all workers (C-PSGD)
  kQsgd,      // sync with QSGD-quantized gradients (Alistarh et al. 2017)
  kDpsgd,     // decentralized: per-worker replicas gossiping with neighbours (Lian et al. 2017)
  kLocal,     // local SGD: H local steps between exact averages of the replicas
  kDcd,       // D-PSGD sending compressed differences; exact replicas (Tang et al. 2018, Alg. 1)
  kEcd,       // D-PSGD sending compressed extrapolations (Tang et al. 2018, Alg. 2)
  kChoco,     // CHOCO-SGD: compressed gossip with memories, any compressor (Koloskova et al. 2019)
  kAdpsgd,    // asynchronous pairwise gossip with a random neighbour (AD-PSGD, Lian et al. 2018)
  kHogwildPP,  // hogwild inside groups of threads, groups synced on a token ring (HOGWILD++)
  // Not a mode: Train runs the one ResolveAlgorithm (<corral/algorithms.h>) picks for the
  // model, the data and the threads (docs/algorithms.md, "Choosing the algorithm").
  kAuto,
};

// D-PSGD's order of the two halves of a round (DESIGN.md §2).
enum class MixOrder {
  kMixThenStep,  // x_i <- sum_j W_ij x_j - eta g_i(x_i), as written by Lian et al. 2017
  kStepThenMix,  // x_i <- sum_j W_ij (x_j - eta g_j(x_j)): neighbours see the stepped model
};

// How buckwild rounds a value onto its fixed-point grid.
enum class Rounding {
  kStochastic,  // unbiased: up with probability equal to the fraction (Buckwild!)
  kNearest,     // biased: steps below half a quantum are lost
};

enum class ModelKind {
  kLogistic,  // binary logistic regression
  kHinge,     // linear SVM (hinge loss)
  kSquared,   // least squares regression
  kSoftmax,   // multinomial logistic regression
  kMf,        // matrix factorisation of ratings
  kMlp,       // multilayer perceptron (ReLU hidden layers, softmax output)
};

enum class Pin {
  kCompact,  // worker i on the i-th hardware thread, filling cores then packages
  kScatter,  // workers spread across packages and cores first
  kNone,     // leave placement to the OS
};

// The order a worker visits its shard in, epoch by epoch (README, "Shuffling"). kEpoch and
// kIndex visit the same samples in the same order; they differ only in how rows are read.
enum class Shuffle {
  kEpoch,  // a fresh permutation each epoch, the rows copied into it and read as a stream
  kIndex,  // the same permutation, the rows read through it where they are stored
  kOff,    // storage order every epoch (no shuffling; for measuring what shuffling costs)
  kAuto,   // index where a worker's shard fits its share of the cache, else epoch (resolved
           // before the run; TrainResult::shuffle holds the resolution)
};

// How sync and qsgd reduce the gradients across ranks (--allreduce; docs/algorithms.md, "sync
// across ranks"). Both give the bits of one process with as many workers.
enum class AllReduce {
  kGather,  // every rank gathers every worker's gradient and folds them all
  kRing,    // dense gradients: a pipelined ring carries one running sum round the ranks
};

// What early stopping watches on the validation set (--metric); loss and rmse improve
// downwards, acc and auc upwards.
enum class Metric {
  kLoss,      // mean data loss (no regulariser), every model
  kAccuracy,  // fraction classified right: logistic, hinge, softmax, mlp
  kAuc,       // area under the ROC curve of the margin: logistic, hinge
  kRmse,      // root mean squared error: squared, mf
};

// How a step turns a gradient into an update (--optimizer).
enum class Optimizer {
  kSgd,      // w_u <- prox(w_u - eta g_u): one step size for every coordinate
  kAdaGrad,  // G_u += g_u^2, step eta / (sqrt(G_u) + eps) per coordinate (Duchi et al. 2011)
  kMomentum,  // heavy ball: v <- mu v + g, w <- prox(w - eta v), v per worker (Polyak 1964)
};

// How the step size changes from epoch to epoch (--lr-schedule; EpochStepSize in train.h).
enum class LrSchedule {
  kExp,      // lr * lr_decay^e (HOGWILD!'s schedule)
  kInvSqrt,  // lr / sqrt(1 + e)
  kCosine,   // lr * (1 + cos(pi e / epochs)) / 2: from lr towards 0 over the run
};

// Names as the CLI spells them; Parse* throw corral::Error (kBadConfig) listing valid values.
std::string_view ToString(Algorithm a);
std::string_view ToString(ModelKind m);
std::string_view ToString(Pin p);
std::string_view ToString(Rounding r);
std::string_view ToString(MixOrder m);
std::string_view ToString(Shuffle s);
std::string_view ToString(Metric m);
std::string_view ToString(Optimizer o);
std::string_view ToString(LrSchedule s);
std::string_view ToString(AllReduce a);
Algorithm ParseAlgorithm(std::string_view name);
ModelKind ParseModel(std::string_view name);
Pin ParsePin(std::string_view name);
Rounding ParseRounding(std::string_view name);
MixOrder ParseMixOrder(std::string_view name);
Shuffle ParseShuffle(std::string_view name);
Metric ParseMetric(std::string_view name);
Optimizer ParseOptimizer(std::string_view name);
LrSchedule ParseLrSchedule(std::string_view name);
AllReduce ParseAllReduce(std::string_view name);

}  // namespace corral
