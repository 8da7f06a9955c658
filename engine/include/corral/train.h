// Training: one configuration aggregate, one entry point, results and observer callbacks.
//
//   corral::TrainConfig cfg{.algorithm = corral::Algorithm::kHogwild, .threads = 8, .epochs = 20};
//   corral::TrainResult r = corral::Train(train, &test, cfg);
//
// The library never prints and never exits: progress reaches the caller through TrainObserver,
// failures through corral::Error (bad config or input, divergence, a worker's exception).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <corral/dataset.h>
#include <corral/kinds.h>
#include <corral/live_model.h>
#include <corral/model_file.h>
#include <corral/placement.h>

namespace corral {

// Everything a run needs besides its data. Each field's comment is its --help text.
// TrainConfig::gossip_every: the replica modes choose the period from measured costs.
inline constexpr int kGossipEveryAuto = 0;

// TrainConfig::class_weight: each class's factor on its samples' loss (--class-weight).
struct ClassWeight {
  // n / (classes * rows of the class), from the training rows (scikit-learn's "balanced").
  bool balanced = false;
  // (label, weight) pairs; a class not listed weighs 1. Binary models: a label > 0 names the
  // positive class, any other the negative one.
  std::vector<std::pair<float, float>> weights;

  bool none() const { return !balanced && weights.empty(); }
};

struct TrainConfig {
  // Training algorithm; auto picks one from the model, the data and the threads (ResolveAlgorithm
  // in corral/algorithms.h; the CLI's and Python's default). The library's default stays hogwild,
  // the mode a caller of Train knows it gets.
  Algorithm algorithm = Algorithm::kHogwild;
  // Model to train.
  ModelKind model = ModelKind::kLogistic;
  // L2 strength in objective = mean loss + (l2/2)|w|^2; unset means 1/rows (LIBLINEAR's C=1).
  std::optional<float> l2;
  // Worker threads; 0 means one per hardware thread.
  int threads = 0;
  // Passes over the training data.
  int epochs = 10;
  // Samples per gradient step.
  int batch = 1;
  // Hidden layer widths of the mlp model.
  std::vector<int> hidden = {256, 128};
  // Factor rank of the mf model.
  int rank = 10;
  // Learn softmax's per-class and mf's per-user and per-item biases; false keeps them at 0
  // (the other models have none to learn, or always learn theirs: mlp).
  bool bias = true;
  // Initial step size; 0 picks one by trying a few on a sample of the data (Bottou's SGD).
  float lr = 0;
  // sgd, or adagrad: per-coordinate steps lr / (sqrt(G_u) + eps), G_u the coordinate's sum of
  // squared gradients, kept beside the model and raced like it (hogwild with a linear model at
  // batch 1 only; the other modes and models refuse it). --lr 0 under adagrad: 0.5.
  // momentum: heavy ball, v <- momentum v + g, w <- prox(w - eta v), each worker (hogwild,
  // locked) or replica (dpsgd, local) with its own v; mlp only, the others refuse it.
  Optimizer optimizer = Optimizer::kSgd;
  // --optimizer momentum: the velocity's factor mu, in [0, 1).
  float momentum = 0.9f;
  // Step size multiplier applied after every epoch (HOGWILD! uses 0.9); --lr-schedule exp only.
  float lr_decay = 0.9f;
  // How the step changes from epoch to epoch: exp (lr * lr_decay^e), inv-sqrt (lr / sqrt(1 + e))
  // or cosine (lr * (1 + cos(pi e / epochs)) / 2), e the epochs done; constant within an epoch
  // (EpochStepSize).
  LrSchedule lr_schedule = LrSchedule::kExp;
  // Linear warm-up of the step: epoch e < W runs at (e + 1) / (W + 1) of the schedule's step.
  // W is this value in epochs when >= 1, a fraction of --epochs when in (0, 1); 0: none.
  double warmup = 0;
  // Seed of every random choice (shuffles, step-size search); with 1 thread a seed fixes the
  // result bit for bit.
  std::uint64_t seed = 1;
  // Thread placement: compact, scatter or none.
  Pin pin = Pin::kCompact;
  // The machine to plan placement and groups for: empty for this one, or a description of
  // another, synthetic:"pack:2 numa:4 l3:2 core:8 pu:2" (hwloc's synthetic topology) or
  // xml:FILE (from `lstopo FILE.xml`); threads are then not bound, and the summary says so.
  std::string hardware;
  // Visiting order: auto (index when a worker's shard takes at most a quarter of its share of the
  // largest cache or a row 4 KiB or more, else epoch), epoch (a fresh random order every epoch, each worker's rows
  // copied into it and read as a stream: one extra copy of the data set, falling back to index
  // when that does not fit in memory), index (the same order, rows read where they lie) or off
  // (storage order). epoch and index visit the same samples in the same order: results are
  // identical.
  Shuffle shuffle = Shuffle::kAuto;
  // Write one JSON line per evaluation point and a summary line to this file (none if empty).
  std::string metrics_path;
  // Evaluate the objective (and the test and validation sets) after every this many epochs and
  // after the run's last; kEvalAuto: after every epoch when something watches the epoch ends
  // (a test or validation set, --target-loss, --metrics, a TrainObserver::on_eval), else after
  // the last only. Each evaluation is one history point; the parameters do not depend on it.
  // The library's default is every epoch (the history a caller reads); the CLI's is auto.
  int eval_every = 1;
  // Classification (logistic, hinge, softmax): multiply each sample's loss and gradient by its
  // class's weight; the objective becomes (1/n) sum_i c_{y_i} loss_i + (l2/2)|w|^2, and every
  // loss reported (train, test, validation) is weighted alike. Unset (none): every class 1.
  ClassWeight class_weight;
  // Stop once the objective at an evaluation point is at or below this value.
  std::optional<double> target_loss;
  // Held-out data scored at every epoch end (EvalPoint::validation_*): a file, read like a
  // test set (format by detection, the training set's dimension and ids), or a fraction in
  // (0, 1) of the training rows, held out by a split drawn from --seed and then not trained
  // on. Empty: none. (A text that reads as a number is a fraction, anything else a path.)
  std::string validation;
  // Stop after this many epochs in a row without improvement of the validation --metric, and
  // return (and save) the model of the best epoch; 0: train all --epochs, last epoch's model.
  // Needs --validation.
  int early_stop = 0;
  // What --early-stop watches on the validation set: loss (mean data loss), acc (accuracy;
  // classification), auc (area under the ROC curve; logistic, hinge), rmse (squared, mf).
  Metric metric = Metric::kLoss;
  // Stop after this many seconds of training (0: no limit); the epoch running is cut short.
  double time_limit_s = 0;
  // Continue the run saved in this model file (written by --save), from where it stopped.
  std::string resume_path;
  // Start from the parameters of this model file (any file corral train --save wrote, its
  // training state ignored): a model of the same kind and size, trained afresh from epoch 1
  // with this run's settings, e.g. on new data.
  std::string init_path;
  // Write the model and its training state to this file while training (atomically: the
  // previous checkpoint stays until the new one is complete), every `checkpoint_every` epochs
  // and/or at the first epoch end `checkpoint_every_s` seconds after the last checkpoint.
  std::string checkpoint_path;
  int checkpoint_every = 0;         // epochs; 0: not by epochs
  double checkpoint_every_s = 0;    // seconds; 0: not by time
  // buckwild: bits per value of the dataset (8 or 16): a dense problem's memory traffic.
  int bits = 8;
  // buckwild: bits per value of the shared model (8 or 16). 16 by default: with 8 bits the
  // unbiased rounding noise of dense updates piles up (a 1.2-1.4x objective on a dense set).
  int model_bits = 16;
  // buckwild: rounding onto the fixed-point grid, stochastic (unbiased) or nearest.
  Rounding rounding = Rounding::kStochastic;
  // qsgd: the gradient compressor (qsgd:B[:K], B bits per coordinate, one norm per K
  // coordinates, default 512, 0 = one per message); dcd, ecd, choco, adpsgd: what each gossip
  // message is compressed with: none, fp16, bf16, qsgd:B[:K], quant:B, randk:F[:unscaled],
  // topk:F, sign, or ef: followed by any of these. Empty: the algorithm's default, qsgd:8 for
  // qsgd, dcd, ecd and choco, none (full precision) for adpsgd (ResolvedCompress).
  std::string compress;
  // dpsgd, dcd, ecd, choco, adpsgd: the gossip graph: ring, torus[:RxC], complete, star, hypercube, exponential,
  // one-peer-exponential, random-regular:d, hierarchical[:G], file:PATH (see `corral topology`).
  // local always averages over the complete graph; sync with --link needs star.
  std::string topology = "ring";
  // replica modes (dpsgd, local, dcd, ecd, choco), and sync/qsgd on --topology star (costed as a parameter server): emulated
  // network per directed link, e.g. latency=5ms,bandwidth=10Mbit[,nic=1Gbit]; empty: none
  // (communication is free, virtual time = compute time).
  std::string link;
  // replica modes: what --link does: virtual (moves only the virtual clocks) or realtime (also
  // holds each message until it is due).
  std::string link_mode = "virtual";
  // dpsgd, dcd, ecd, choco: local steps between gossip exchanges (1: every step, the papers'
  // setting; dcd's and ecd's auto start at 8 and grow while the replicas' drift stays small);
  // local: steps between exact averages (H); hogwild++: steps a group holds the token (auto:
  // from the model's size, see README). kGossipEveryAuto (the default): the replica modes
  // choose the period so that rounds take about 5% of the wall time, and adapt it between
  // epochs (dcd, ecd and adpsgd within epochs too; docs/algorithms.md); the result then
  // depends on timing, so runs that must repeat bit for bit set a number.
  int gossip_every = kGossipEveryAuto;
  // dpsgd: mix-then-step (x_i <- sum_j W_ij x_j - eta g_i(x_i), Lian et al. 2017) or
  // step-then-mix (x_i <- sum_j W_ij (x_j - eta g_j(x_j))).
  MixOrder mix_order = MixOrder::kMixThenStep;
  // sync, qsgd across ranks: gather (every rank gathers every worker's gradient) or ring (dense
  // gradients pass round the ranks as one running sum, in chunks; a sparse model falls back to
  // gather, and the summary says so). Both give one process's bits; one process ignores it.
  AllReduce allreduce = AllReduce::kGather;
  // choco, and adpsgd with a compressor: consensus step size in (0, 1]; 0 picks
  // min(1, c delta) for the compressor's quality delta (c = 4 for top-k and sign, 1 for random
  // codecs), kGammaTheory (choco only) the tiny, safe value of Koloskova et al. 2019's theorem.
  double gamma = 0;
  // Every mode with a --topology: refuse (kBadConfig) a W that is not stochastic or a
  // disconnected graph; dcd, ecd also a biased compressor or a W that is not symmetric doubly
  // stochastic. Without it each is a warning and the run trains.
  bool strict = false;
  // hogwild++: threads per replica (group); 0 (auto): the threads of one cache domain (an L3
  // cache, within one NUMA node; ReplicaGroups in corral/placement.h), or 1 when the
  // placement is unknown (--pin none); across ranks (mpirun), one group per rank.
  int group_size = 0;
  // hogwild and hogwild++ (inside each group), with a linear model on sparse data and batch 1:
  // how many of the most frequent coordinates each worker keeps a private copy of, adding its
  // changes into the shared model after about `hot_sync` of its own updates to each coordinate
  // (HOGWILD! with a bounded delay on those coordinates: they are the cache lines every sample
  // writes, which otherwise move between cores on nearly every step). -1: automatic (up to 1024
  // coordinates, those in at least 1/512 of the rows); 0: off, the plain HOGWILD! loop.
  int hot_coords = -1;
  // Own updates of a hot coordinate between a worker's syncs of it; 0: automatic (32 x the
  // head's mean entries per row, rounded to a power of 2: about one sync per 32 samples).
  int hot_sync = 0;
  // hogwild, buckwild: how the workers' steps interleave (--schedule). Unset (free, the default): free-
  // running threads. TAU (seeded:TAU): the bounded-delay model of HOGWILD! run exactly, bit for
  // bit for a seed and --threads: the workers' steps, in an order drawn from --seed, run on one
  // thread, and the update of each step is applied 0..TAU steps later (a delay drawn from
  // --seed), so each read misses a seeded subset of the last TAU updates; 0 is serial SGD over
  // the same interleaved sample order. No hot head (docs/algorithms.md, "Determinism"). The
  // other modes refuse it (kBadConfig).
  std::optional<int> seeded_tau;
  // Bytes the copies of the training set that training makes may take (0: no budget beyond the
  // machine's memory): --shuffle epoch's re-laid-out rows and, when the workers span NUMA nodes,
  // each worker's shard copy. What does not fit is read where it lies (index shuffling, shards as
  // views), and the summary says so. The loaded set itself is not counted: a binary cache is a
  // file mapping the kernel pages in and out, text is parsed before training starts.
  std::uint64_t memory_budget = 0;

  // Throws corral::Error (kBadConfig) naming the first invalid field.
  void Validate() const;
};

// The compressor spec a run of `config` uses: config.compress, or when it is empty the
// algorithm's default (qsgd:8 for qsgd, dcd, ecd, choco; ecd with local steps, any
// gossip_every but 1: qsgd:16; none otherwise).
std::string ResolvedCompress(const TrainConfig& config);

// The step size every worker of every mode uses in epoch `epoch` (0-based, counted from the
// run's first epoch, resumed runs included) of a run of `config` that starts at step `lr`:
// config.lr_schedule's value at t = epoch times the warm-up factor. The one place a mode's
// step size comes from.
float EpochStepSize(const TrainConfig& config, float lr, int epoch);
// TrainConfig::warmup in epochs (a fraction scaled by config.epochs).
double WarmupEpochs(const TrainConfig& config);
// The schedule as the summary and the metrics file spell it: "exp, decay 0.9 per epoch",
// "cosine over 10 epochs, warm-up 2 epochs".
std::string LrScheduleSpec(const TrainConfig& config);

// TrainConfig::gamma: CHOCO's step from its theorem (--gamma theory).
inline constexpr double kGammaTheory = -1;

// --gamma as spelled: a number in (0, 1], or "theory" (kGammaTheory). Throws corral::Error
// (kBadConfig) naming --gamma otherwise.
double ParseGamma(std::string_view text);

// --checkpoint-every as spelled: N epochs (N >= 1) or Ns seconds, into config.checkpoint_every
// or config.checkpoint_every_s (empty: neither). Throws corral::Error (kBadConfig) naming the flag.
void ParseCheckpointEvery(std::string_view text, TrainConfig& config);

// TrainConfig::eval_every: evaluate every epoch when watched, else after the last only.
inline constexpr int kEvalAuto = 0;

// --eval-every as spelled: a number of epochs >= 1, or "auto" (kEvalAuto). Throws corral::Error
// (kBadConfig) naming the flag otherwise.
int ParseEvalEvery(std::string_view text);

// --memory-budget as spelled: a whole number of bytes, or a number with a binary suffix K, M, G
// or T (powers of 1024, optionally followed by B or iB: 512M, 1.5G, 4GiB), above 0. Throws
// corral::Error (kBadConfig) naming the flag otherwise.
std::uint64_t ParseMemoryBudget(std::string_view text);

// --class-weight as spelled: none, balanced, or LABEL:W,... (W a finite number >= 0, each
// label once). Throws corral::Error (kBadConfig) naming the flag otherwise.
ClassWeight ParseClassWeight(std::string_view text);
// The spelling of a ClassWeight, as ParseClassWeight reads it (the metrics summary's).
std::string ClassWeightSpec(const ClassWeight& weight);

// TrainConfig::seeded_tau: the largest TAU; the delay queue holds TAU + 1 gradients.
inline constexpr int kMaxSeededTau = 65536;

// --schedule as spelled: free (nullopt) or seeded:TAU with TAU a whole number in
// [0, kMaxSeededTau]. Throws corral::Error (kBadConfig) naming the flag otherwise.
std::optional<int> ParseSchedule(std::string_view text);
// The spelling of config.seeded_tau: "free" or "seeded:TAU" (the metrics summary's schedule).
std::string ScheduleSpec(const TrainConfig& config);

// The wall time of one gossip round by phase, in seconds (a mean over an epoch's rounds and
// the workers). compute + encode + wait + decode + mix is the time from one round to the next.
struct RoundSplit {
  double compute_s = 0;  // the steps since the previous round (gradients and local updates)
  double encode_s = 0;   // compressing the message (dcd, ecd, choco; the error measurement too)
  double wait_s = 0;     // sending it and waiting for the neighbours' messages of the round
  double decode_s = 0;   // adding the received messages into the memories (dcd, ecd, choco)
  double mix_s = 0;      // the rest of the round: mixing, differences, the consensus step
};

// Payload bytes one worker sent to another over a run (a directed edge of the topology).
struct EdgeBytes {
  int from = 0;
  int to = 0;
  std::uint64_t bytes = 0;
};

// Metrics at one evaluation point (an epoch end). Test fields are set when a test set is given.
struct EvalPoint {
  int epoch = 0;               // epochs completed
  std::uint64_t step = 0;      // samples processed by all workers so far
  double wall_s = 0;           // since training started, evaluation included
  double train_s = 0;          // time spent training, evaluation excluded
  double lr = 0;               // step size used in the last epoch
  double train_loss = 0;       // mean data loss, no regulariser
  double objective = 0;        // train_loss + regulariser
  std::optional<double> train_acc;   // classification
  std::optional<double> train_rmse;  // regression
  std::optional<double> test_loss;
  std::optional<double> test_acc;
  std::optional<double> test_rmse;
  std::optional<double> test_auc;    // binary models (logistic, hinge)
  // With TrainConfig::validation: the same measures on the validation set.
  std::optional<double> validation_loss;
  std::optional<double> validation_acc;
  std::optional<double> validation_rmse;
  std::optional<double> validation_auc;
  double samples_per_s = 0;    // in the last epoch
  std::uint64_t bytes_sent = 0;      // by all workers so far (modes that communicate)
  std::uint64_t bytes_sent_max = 0;  // by the busiest worker so far
  bool diverged = false;       // a loss is NaN or Inf, or the objective blew up (README, "Stopping")
  // Replica modes' modelled time: the busiest worker's compute time plus its modelled
  // communication (--link), as if every worker had a core of its own. Other modes (and
  // --link-mode realtime): train_s.
  double virtual_s = 0;
  // Synchronous replica modes: local steps between rounds in the last epoch (the chosen one
  // with --gossip-every auto) and the share of the workers' wall time spent in rounds.
  std::optional<std::uint64_t> gossip_every;
  std::optional<double> gossip_share;
  // Synchronous replica modes: where the wall time of a mean round went in the last epoch
  // (seconds per round, averaged over the workers' rounds; RoundSplit).
  std::optional<RoundSplit> round_split;
  // Replica modes: (1/n) sum_i |x_i - mean|^2 over the workers' replicas.
  std::optional<double> consensus;
  // dcd, ecd, choco: mean relative error |Q(z) - z| / |z| over a sample of the epoch's
  // messages (every 16th round and the epoch's first).
  std::optional<double> compress_rel_error;
};

// Progress inside an epoch, reported a few times per second.
struct Progress {
  int epoch = 0;               // the epoch running, 1-based
  int epochs = 0;
  double epoch_fraction = 0;   // of the running epoch, in [0, 1]
  std::uint64_t step = 0;
  double wall_s = 0;
  double samples_per_s = 0;    // since the epoch began
};

// A setting an algorithm ran with or chose (e.g. its topology, CHOCO's gamma), as the metrics
// summary writes it. Each algorithm describes its own.
struct ModeSetting {
  using Value = std::variant<std::int64_t, double, std::string>;
  std::string key;
  Value value;
};

// Why a run ended.
enum class StopReason {
  kEpochs,     // all --epochs ran
  kTarget,     // the objective reached --target-loss
  kTimeLimit,  // --time-limit ran out
  kCancelled,  // TrainObserver::stop was requested (Ctrl-C in the CLI)
  kObserver,   // on_eval returned false
  kEarlyStop,  // --early-stop epochs passed without improvement of the validation --metric
};
std::string_view ToString(StopReason r);

struct TrainResult {
  std::vector<float> params;   // the trained model
  ModelInfo model;             // what the parameters mean (for SaveModel)
  TrainingState state;         // where the run stopped (SaveModel writes it: a checkpoint)
  StopReason stop_reason = StopReason::kEpochs;
  // Statistical efficiency: the first evaluation point at or below --target-loss.
  std::optional<int> epochs_to_target;
  std::optional<double> train_s_to_target;
  std::vector<EvalPoint> history;
  // With --early-stop: the epoch whose model `params` holds (the best validation --metric).
  std::optional<int> best_epoch;
  // The algorithm that ran (never kAuto) and, where --algo auto chose it, why (e.g. "dense
  // model mlp at 2 threads, groups of 1"; empty when the algorithm was given).
  Algorithm algorithm = Algorithm::kHogwild;
  std::string algorithm_reason;
  int threads = 0;
  float l2 = 0;                // the L2 strength used
  float lr = 0;                // the initial step size used
  bool lr_searched = false;    // lr was picked by the step-size search
  std::uint64_t samples = 0;
  double wall_s = 0;
  double train_s = 0;
  double samples_per_s = 0;    // over the whole run, evaluation excluded
  double peak_rss_mb = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_sent_max = 0;
  // Synchronous replica modes: the bytes of every directed edge i -> j the run used, by
  // (from, to); empty for other modes.
  std::vector<EdgeBytes> edge_bytes;
  PlacementReport placement;
  double gamma = 0;            // choco: the consensus step size used
  int hot_coords = 0;          // hogwild, hogwild++: coordinates each worker kept a private copy of
  int hot_sync = 0;            // ... and updates of a coordinate between its syncs (0: no copy)
  // The visiting order used: TrainConfig::shuffle (auto resolved to index or epoch), or index
  // where epoch fell back (memory, or a mode that does not re-lay out its rows) ...
  Shuffle shuffle = Shuffle::kIndex;
  // ... and, for epoch, the memory its re-laid-out copies took (one shard copy per worker).
  std::uint64_t shuffle_copy_bytes = 0;
  // What the algorithm reports about itself: its settings (the metrics summary adds them) and
  // its lines of the run's summary as (label, text) (the CLI prints them after the common ones).
  std::vector<ModeSetting> settings;
  std::vector<std::pair<std::string, std::string>> summary;
  // Settings the algorithm's guarantees do not cover (e.g. dcd with a biased compressor);
  // the library never prints: callers show them (the CLI on stderr).
  std::vector<std::string> warnings;
};

// The evaluation point of the model `result.params` holds: with --early-stop the best
// epoch's, else the last one; nullptr when no epoch ran.
const EvalPoint* ResultPoint(const TrainResult& result);

// The trained model with its training state: SaveModel(path, ToSavedModel(result)) writes a
// file that `corral eval` reads and `TrainConfig::resume_path` continues.
SavedModel ToSavedModel(const TrainResult& result);

struct TrainObserver {
  // Called at every evaluation point; return false to stop training after it.
  std::function<bool(const EvalPoint&)> on_eval;
  // Called a few times per second while an epoch runs, from the thread that called Train().
  std::function<void(const Progress&)> on_progress;
  // Request a stop from any thread: the workers finish their current step within a tenth of a
  // second, the partial epoch is evaluated, and Train() returns normally (stop_reason kCancelled).
  std::stop_token stop;
  // Where other threads read the running model (see LiveModel); none if null. Must outlive
  // the Train call; one run at a time (a second concurrent run throws kBadConfig).
  LiveModel* live = nullptr;
};

// Trains on `train`, evaluating on `test` too when it is not null. Blocks until done.
// Throws corral::Error: kBadConfig/kBadInput before training starts, kDiverged when a loss
// becomes NaN/Inf (after writing that evaluation point to the metrics), kWorkerFailed when a
// worker threw (after all workers stopped). A stop through time limit, target or cancellation
// is a normal return; result.stop_reason says which.
TrainResult Train(const Dataset& train, const Dataset* test, const TrainConfig& config,
                  const TrainObserver& observer = {});

class Cluster;  // <corral/cluster.h>

// Trains across the processes of `cluster` (every rank calls it with the same config and data):
// each rank runs config.threads workers, ranks() x threads in all, and the run is the one a
// single process with that many threads makes (the same parameters, bit for bit, for the modes
// that run across ranks: sync, qsgd, dpsgd, local, dcd, ecd, choco; the others throw
// kBadConfig). Every rank returns the same parameters and history; rank 0 alone writes
// --metrics. `--threads` must be a number, and --resume, --checkpoint-every, --link with sync
// or qsgd, and a LiveModel are refused across ranks (kBadConfig). One rank: as Train above.
// Every rank holds the whole `train` and `test` here; each keeps its workers' rows (a view,
// RankPartOf) and evaluates its part of both, the sums added across ranks.
TrainResult Train(const Dataset& train, const Dataset* test, const TrainConfig& config,
                  const TrainObserver& observer, Cluster& cluster);

// The rows of a training set one rank of a run across ranks holds when it reads only its own:
// rows [first, first + count) of `total`.
struct RankPart {
  std::size_t first = 0;
  std::size_t count = 0;
  std::size_t total = 0;
};
// Rank `rank` of `ranks`'s part of `total` rows: its workers' shards, rows
// [total * rank / ranks, total * (rank + 1) / ranks) (whatever the threads per rank).
RankPart RankPartOf(std::size_t total, int rank, int ranks);

// Trains across the ranks of `cluster` on a set no rank holds whole: `mine` is this rank's
// part (RankPartOf(part.total, rank, ranks), e.g. read by LoadRankRows in the CLI), `test` this
// rank's part of the test set (any split: the parts together are the set). What one process
// derives from the whole set (the sparse L2 weights' feature counts, the classes, the rows)
// is added across ranks, and the step-size search gathers its sample's rows from the ranks that
// hold them, so the run is the one of Train above on the whole set (the same parameters, bit
// for bit). Throws kBadConfig when `part` is not this rank's part. One rank: `mine` is the set.
TrainResult Train(const Dataset& mine, const RankPart& part, const Dataset* test,
                  const TrainConfig& config, const TrainObserver& observer, Cluster& cluster);

}  // namespace corral
