#include "train_options.h"

#include "commands.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <map>
#include <string>

#include <corral/algorithms.h>
#include <corral/limits.h>
#include <corral/load.h>

namespace corral::cli {
namespace {

// W: the SIGINT handler; R: the training thread's callbacks. A lock-free atomic is safe to
// store from a signal handler; relaxed: the flag carries no other data.
std::atomic<bool> interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void OnInterrupt(int /*signal*/) { interrupted.store(true, std::memory_order_relaxed); }

// With no --data: the built-in synthetic sparse set, so a fresh install does something real.
SyntheticSplit DefaultData() {
  return MakeSyntheticClassification(SyntheticSpec{}, /*test_rows=*/20'000);
}

}  // namespace

void InstallInterruptHandler() {
  struct sigaction action {};
  action.sa_handler = OnInterrupt;
  action.sa_flags = SA_RESETHAND;  // a second Ctrl-C kills as usual
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
}

bool Interrupted() { return interrupted.load(std::memory_order_relaxed); }

CLI::Option* AddFormatOption(CLI::App* cmd, std::string& format, const std::string& help) {
  std::string names;
  // Every format from the first to the last of the enum (kCache), spelled by the library.
  for (int f = static_cast<int>(DataFormat::kAuto); f <= static_cast<int>(DataFormat::kCache); ++f) {
    names += (names.empty() ? "" : ", ") + std::string(DataFormatName(static_cast<DataFormat>(f)));
  }

  const CLI::Validator known(
      [](std::string& value) {
        try {
          ParseDataFormat(value);
          return std::string();
        } catch (const Error& e) {
          return std::string(e.what());
        }
      },
      "FORMAT");
  return cmd->add_option("--format", format, "Data format: " + names + help)->check(known)->capture_default_str();
}

void AddTrainOptions(CLI::App* cmd, TrainOptions& o) {
  TrainConfig& c = o.config;
  cmd->add_option("--data", o.data, "Training data file (LIBSVM)");
  cmd->add_option("--test", o.test, "Test data file, evaluated at every epoch end");
  cmd->add_option("--weights", o.weights,
                  "Sample weights: a file with one number >= 0 per training row, in --data's order "
                  "(blank and '#' lines skipped, a first line that is no number is a header); each "
                  "sample's loss and gradient are scaled by its weight, and so is the objective");
  cmd->add_option("--weight-column", o.weight_column,
                  "CSV data: the column (header name, or 0-based number, -1 the last) that holds "
                  "each row's weight (as --weights) instead of a feature; --test is read alike");
  AddFormatOption(cmd, o.format, " (auto: by magic number, extension and content)");
  cmd->add_option("--features", o.features,
                  "Feature dimension (default: the largest index in the training file)");
  cmd->add_option("--model", o.model, "Model: logistic, hinge, squared, softmax, mf, mlp")->capture_default_str();
  cmd->add_option("--l2", o.l2,
                  "L2 strength: objective = mean loss + (l2/2)|w|^2 (default 1/rows, "
                  "LIBLINEAR's C=1)");
  cmd->add_option("--algo", o.algo, "Algorithm:" + AlgorithmHelp())
      ->capture_default_str();
  cmd->add_option("--threads", c.threads, "Worker threads (0 = all hardware threads)")
      ->capture_default_str();
  cmd->add_option("--epochs", c.epochs, "Passes over the training data (the total, when resuming)")
      ->capture_default_str();
  cmd->add_option("--batch", c.batch, "Samples per gradient step (per worker for sync, qsgd)")
      ->capture_default_str();
  cmd->add_option("--hidden", c.hidden, "Hidden layer widths of mlp, e.g. 256,128")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--rank", c.rank, "Factor rank of mf")->capture_default_str();
  cmd->add_flag_callback(
      "--no-bias", [&c] { c.bias = false; },
      "Keep softmax's per-class and mf's per-user/item biases at 0 (LIBLINEAR's default)");
  cmd->add_option("--class-weight", o.class_weight,
                  "logistic, hinge, softmax: each class's factor on its samples' loss and "
                  "gradient: none, balanced (n / (classes * rows of the class), scikit-learn's) or "
                  "LABEL:W,... (e.g. 1:5; unlisted classes 1; binary: a label > 0 is the positive "
                  "class). The objective and every loss reported are weighted alike")
      ->capture_default_str();
  cmd->add_option("--lr", c.lr, "Initial step size (0 = search on a sample)")
      ->capture_default_str();
  cmd->add_option("--optimizer", o.optimizer,
                  "sgd, or adagrad: per-coordinate steps lr / (sqrt(G_u) + 1e-8), G_u the "
                  "coordinate's sum of squared gradients (hogwild, logistic/hinge/squared, batch 1; "
                  "--lr 0 means 0.5 there), or momentum: heavy ball v <- mu v + g, w <- w - lr v, "
                  "a velocity per worker or replica (mlp; hogwild, locked, dpsgd, local)")
      ->capture_default_str();
  cmd->add_option("--momentum", c.momentum, "--optimizer momentum: the velocity's factor mu, in [0, 1)")
      ->capture_default_str();
  cmd->add_option("--lr-decay", c.lr_decay, "Step size multiplier after each epoch (--lr-schedule exp)")
      ->capture_default_str();
  cmd->add_option("--lr-schedule", o.lr_schedule,
                  "Step size of epoch e (0-based, constant within the epoch): exp (lr * "
                  "lr-decay^e), inv-sqrt (lr / sqrt(1 + e)) or cosine (lr * (1 + cos(pi e / "
                  "epochs)) / 2); every mode")
      ->capture_default_str();
  cmd->add_option("--warmup", c.warmup,
                  "Linear warm-up: epoch e < W runs at (e + 1) / (W + 1) of the scheduled step; "
                  "W in epochs when >= 1, a fraction of --epochs below 1 (0: none)")
      ->capture_default_str();
  cmd->add_option("--seed", c.seed, "Random seed")->capture_default_str();
  cmd->add_option("--pin", o.pin, "Thread placement: compact, scatter, none")
      ->capture_default_str();
  cmd->add_option("--hardware", c.hardware,
                  "Plan placement and groups for another machine, not bound: synthetic:\"pack:2 "
                  "numa:4 l3:2 core:8 pu:2\" (hwloc's synthetic topology) or xml:FILE (from "
                  "`lstopo FILE.xml`); see `corral topology --hardware`");
  cmd->add_option("--memory-budget", o.memory_budget,
                  "Bytes the copies of the data training makes may take, e.g. 512M or 4G (K, M, G, T: "
                  "powers of 1024): --shuffle epoch's copy, then per-node shard copies; what does not "
                  "fit is read in place (hogwild(++)'s linear models: epoch's copy a window at a time, "
                  "in half the budget; else index shuffling), and the summary says so. A binary cache "
                  "(corral data convert) is read through a file mapping and not counted (default: the "
                  "machine's memory)");
  cmd->add_option("--shuffle", o.shuffle,
                  "Visiting order: auto (index when a worker's shard fits a quarter of its share of the "
                  "largest cache or rows take 4 KiB or more, else epoch), epoch (shuffled each epoch, rows copied into that "
                  "order and streamed; index when memory is short), index (the same order, rows "
                  "read in place), off (storage order)")
      ->capture_default_str();
  cmd->add_option("--target-loss", c.target_loss,
                  "Stop once the objective at an epoch end is at or below this");
  cmd->add_option("--validation", c.validation,
                  "Held-out data scored at every epoch end: a file (read like --test) or a "
                  "fraction in (0, 1) of the training rows, drawn by --seed and not trained on");
  cmd->add_option("--early-stop", c.early_stop,
                  "Stop after N epochs without improvement of the validation --metric and keep "
                  "the best epoch's model (0 = off; needs --validation)")
      ->capture_default_str();
  cmd->add_option("--metric", o.metric,
                  "What --early-stop watches: loss, acc (classification), auc (logistic, hinge), "
                  "rmse (squared, mf)")
      ->capture_default_str();
  cmd->add_option("--time-limit", c.time_limit_s,
                  "Stop after this many seconds of training (0 = none)")
      ->capture_default_str();
  cmd->add_option("--bits", c.bits, "buckwild: bits per dataset value, 8 or 16")
      ->capture_default_str();
  cmd->add_option("--model-bits", c.model_bits, "buckwild: bits per model value, 8 or 16")
      ->capture_default_str();
  cmd->add_option("--rounding", o.rounding, "buckwild: stochastic or nearest")
      ->capture_default_str();
  cmd->add_option("--compress", c.compress,
                  "qsgd: gradient compressor, qsgd:B[:K]; dcd, ecd, choco, adpsgd: gossip message "
                  "compressor: none, fp16, bf16, qsgd:B[:K] (K coordinates per norm, default 512, "
                  "0 = one per message), quant:B, randk:F[:unscaled], topk:F, sign, ef:<codec> "
                  "(dcd, ecd need an unbiased one). Default: qsgd:8 (adpsgd: none)");
  cmd->add_option("--gamma", o.gamma,
                  "choco, compressed adpsgd: consensus step in (0, 1], or (choco) 'theory' for the "
                  "theorem's (tiny) value "
                  "(default: min(1, c delta), delta the compressor's quality, c = 4 for topk "
                  "and sign, 1 for random codecs)");
  cmd->add_flag("--strict", c.strict,
                "Refuse a --topology whose W is not stochastic or whose graph is disconnected; "
                "dcd, ecd: also a biased compressor or a W that is not symmetric doubly "
                "stochastic (default: train and warn)");
  cmd->add_option("--topology", c.topology,
                  "dpsgd, dcd, ecd, choco, adpsgd: gossip graph: ring, torus[:RxC], complete, star, hypercube, exponential, "
                  "one-peer-exponential, random-regular:d, hierarchical[:G], file:PATH (local: "
                  "always complete; sync with --link: star)")
      ->capture_default_str();
  cmd->add_option("--link", c.link,
                  "replica modes (dpsgd, local, dcd, ecd, choco), sync/qsgd on --topology star: emulated links, e.g. "
                  "latency=5ms,bandwidth=10Mbit[,nic=1Gbit] (default: none)");
  cmd->add_option("--link-mode", c.link_mode,
                  "What --link does: virtual (only virtual time moves) or realtime (messages are "
                  "held until due)")
      ->capture_default_str();
  cmd->add_option("--gossip-every", c.gossip_every,
                  "dpsgd, dcd, ecd, choco: local steps between gossip rounds; local: steps between "
                  "exact averages; adpsgd: steps between pairwise averages; hogwild++: steps a group "
                  "holds the token. auto: hogwild++ from the model's size; the others so that rounds "
                  "take about 5% of the time, the period adapting between epochs (dcd, ecd: at "
                  "most 8; 1: the papers' algorithms, every step)")
      ->transform(CLI::Transformer(std::map<std::string, int>{{"auto", corral::kGossipEveryAuto}}))
      ->default_str("auto");
  cmd->add_option("--mix-order", o.mix_order,
                  "dpsgd: mix-then-step (x_i <- sum_j W_ij x_j - eta g_i, as in Lian et al. 2017) "
                  "or step-then-mix")
      ->capture_default_str();
  cmd->add_option("--allreduce", o.allreduce,
                  "sync, qsgd across ranks (mpirun): gather (every rank gathers every worker's "
                  "gradient) or ring (dense models: one running sum passes round the ranks in "
                  "chunks; sparse models gather). Both give one process's bits")
      ->capture_default_str();
  cmd->add_option("--group-size", c.group_size,
                  "hogwild++: threads per replica (0 = auto: the threads of a cache domain, an L3 "
                  "cache within a NUMA node; 1 when unpinned; one per rank under mpirun)")
      ->capture_default_str();
  cmd->add_option("--hot-coords", c.hot_coords,
                  "hogwild, hogwild++, sparse linear models: keep a private copy per worker of this "
                  "many of the most frequent coordinates (auto: up to 1024, those in >= 1/512 of "
                  "the rows; off: plain HOGWILD!)")
      ->transform(CLI::Transformer(std::map<std::string, int>{{"auto", -1}, {"off", 0}}))
      ->default_str("auto");
  cmd->add_option("--hot-sync", c.hot_sync,
                  "hogwild, hogwild++: a worker adds its changes of a hot coordinate into the shared "
                  "model after about this many of its updates to it (0: automatic, 32 x the hot entries of "
                  "a row, a power of 2: about one sync per 32 samples)")
      ->capture_default_str();
  cmd->add_option("--schedule", o.schedule,
                  "hogwild, buckwild: free (threads run freely) or seeded:TAU: the workers' steps interleaved "
                  "by --seed on one thread, each update applied 0..TAU steps late (the bounded-"
                  "delay model), bit for bit reproducible; seeded:0 is serial SGD over that order")
      ->capture_default_str();
  cmd->add_option("--metrics", c.metrics_path, "Write JSON lines metrics to this file");
  cmd->add_option("--eval-every", o.eval_every,
                  "Evaluate the objective (and --test, --validation) every N epochs and after the "
                  "last; auto: every epoch when watched (per-epoch output, --test, --validation, "
                  "--target-loss, --metrics), else after the last only (results are the same)")
      ->capture_default_str();
  cmd->add_flag("--quiet", o.quiet, "Print only errors");
}

void ResolveConfig(TrainOptions& o) {
  TrainConfig& config = o.config;
  config.algorithm = ParseAlgorithm(o.algo);
  config.model = ParseModel(o.model);
  config.pin = ParsePin(o.pin);
  config.shuffle = ParseShuffle(o.shuffle);
  config.rounding = ParseRounding(o.rounding);
  config.mix_order = ParseMixOrder(o.mix_order);
  config.allreduce = ParseAllReduce(o.allreduce);
  config.l2 = o.l2;
  if (!o.gamma.empty()) config.gamma = ParseGamma(o.gamma);
  config.seeded_tau = ParseSchedule(o.schedule);
  if (!o.memory_budget.empty()) config.memory_budget = ParseMemoryBudget(o.memory_budget);
  config.metric = ParseMetric(o.metric);
  config.eval_every = ParseEvalEvery(o.eval_every);
  config.class_weight = ParseClassWeight(o.class_weight);
  config.optimizer = ParseOptimizer(o.optimizer);
  config.lr_schedule = ParseLrSchedule(o.lr_schedule);
  config.Validate();
}

LoadOptions DataLoadOptions(const TrainOptions& o) {
  CheckFeatureCount(o.features, ErrorCode::kBadConfig, "--features");
  LoadOptions load{.format = ParseDataFormat(o.format), .num_features = o.features};
  if (!o.weight_column.empty()) {
    if (!o.weights.empty()) {
      throw Error(ErrorCode::kBadConfig, "--weights and --weight-column both give the weights, expected one of them");
    }
    const DataFormat format = load.format == DataFormat::kAuto ? DetectFormat(o.data) : load.format;
    if (format != DataFormat::kCsv) {
      throw Error(ErrorCode::kBadConfig, "--weight-column " + o.weight_column + ": " + o.data + " is " +
                                             std::string(DataFormatName(format)) +
                                             ", expected CSV data (--weights FILE gives any format weights)");
    }
    load.csv_weight_column = o.weight_column;
  }
  return load;
}

Dataset WithWeightsFile(const TrainOptions& o, const Dataset& train, std::size_t first, std::size_t total) {
  if (o.weights.empty()) return train;
  if (total == 0) total = train.rows();
  return train.WithWeights(LoadWeights(o.weights, total, first, train.rows()), o.weights);
}

TrainData LoadTrainData(const TrainOptions& o) {
  TrainData d;
  if (!o.weights.empty() && o.data.empty()) {
    throw Error(ErrorCode::kBadConfig, "--weights " + o.weights + " weighs --data's rows, expected --data too");
  }
  if (!o.weight_column.empty() && o.data.empty()) {
    throw Error(ErrorCode::kBadConfig, "--weight-column " + o.weight_column + " reads --data's column, expected --data too");
  }
  if (o.data.empty()) {
    if (!o.quiet) std::fprintf(stderr, "no --data: training on the built-in synthetic set\n");
    SyntheticSplit split = DefaultData();
    d.train = std::move(split.train);
    d.test = std::move(split.test);
  } else {
    // Parsing uses every core (threads = 0): it ends before training starts.
    const LoadOptions load = DataLoadOptions(o);
    d.train = WithWeightsFile(o, LoadDataset(o.data, load), 0, 0);
    if (!o.test.empty()) {
      LoadOptions test_load = load;
      // A ratings test set keeps the train set's ids; a test file may never reach the train
      // file's highest index, so it takes the train set's dimension.
      test_load.ratings_mapping = d.train.ratings_shared();
      if (d.train.ratings() == nullptr) test_load.num_features = d.train.num_features();
      d.test = LoadDataset(o.test, test_load);
    }
  }
  if (!o.quiet) {
    std::fprintf(stderr, "data: %s: %zu rows, %zu features, %zu non-zeros", d.train.name().c_str(),
                 d.train.rows(), d.train.num_features(), d.train.nnz());
    if (d.train.weighted()) std::fprintf(stderr, ", weighted");
    if (d.test) std::fprintf(stderr, "; test %s: %zu rows", d.test->name().c_str(), d.test->rows());
    std::fprintf(stderr, "\n");
  }
  return d;
}

}  // namespace corral::cli
