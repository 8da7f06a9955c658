#include <corral/train.h>

#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <corral/algorithms.h>
#include <corral/custom_model.h>
#include <corral/error.h>
#include <corral/limits.h>
#include <corral/load.h>
#include <corral/rng.h>
#include <corral/shards.h>
#include <corral/training_facts.h>

#include "engine/src/cluster/collectives.h"
#include "engine/src/compress/compressor.h"
#include "engine/src/gossip/replica_set.h"
#include "engine/src/modes/compressed_gossip_setup.h"
#include "engine/src/modes/linear_step.h"
#include "engine/src/modes/registry.h"
#include "engine/src/modes/run_mode.h"
#include "engine/src/runtime/describe.h"
#include "engine/src/runtime/erased_model.h"
#include "engine/src/runtime/hardware.h"
#include "engine/src/runtime/model_registry.h"

namespace corral {
namespace {

[[noreturn]] void BadConfig(const std::string& message) {
  throw Error(ErrorCode::kBadConfig, message);
}

// --validation as a fraction of the training rows, or nullopt when it names a file. Throws
// kBadConfig for a number outside (0, 1).
std::optional<double> ValidationFraction(std::string_view text) {
  double fraction = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, fraction);
  if (ptr != end || text.empty()) return std::nullopt;  // not a number: a path
  if (ec != std::errc() || !(fraction > 0 && fraction < 1)) {
    BadConfig("--validation " + std::string(text) +
              ": a fraction of the training rows must be in (0, 1) (e.g. 0.1), or give a file");
  }
  return fraction;
}

// The model kinds a --metric measures (kinds.h).
bool MetricApplies(Metric metric, ModelKind model) {
  const bool regression = model == ModelKind::kSquared || model == ModelKind::kMf;
  switch (metric) {
    case Metric::kLoss:
      return true;
    case Metric::kAccuracy:
      return !regression;
    case Metric::kAuc:
      return model == ModelKind::kLogistic || model == ModelKind::kHinge;
    case Metric::kRmse:
      return regression;
  }
  return false;
}

// The training rows and the validation set of a run: `train` itself and none, `train` and
// the --validation file, or `train` split by a seeded draw of round(fraction x rows) rows
// (at least one on each side; the rest keep their storage order).
struct Split {
  Dataset fit;
  std::optional<Dataset> validation;
};
Split SplitValidation(const Dataset& train, const TrainConfig& config) {
  Split split{.fit = train};
  if (config.validation.empty()) return split;
  const std::optional<double> fraction = ValidationFraction(config.validation);
  if (!fraction) {
    LoadOptions load;
    load.ratings_mapping = train.ratings_shared();
    if (train.ratings() == nullptr) load.num_features = train.num_features();
    split.validation = LoadDataset(config.validation, load);
  } else {
    const std::size_t rows = train.rows();
    const auto held = static_cast<std::size_t>(std::llround(*fraction * static_cast<double>(rows)));
    if (held < 1 || held >= rows) {
      throw Error(ErrorCode::kBadInput,
                  train.name() + ": --validation " + config.validation + " of " +
                      std::to_string(rows) + " rows holds out " + std::to_string(held) +
                      ", expected at least one row held out and one left to train on");
    }
    // A partial Fisher-Yates shuffle draws the held-out rows; a stream of its own (99) so the
    // training's own draws from --seed are the same with and without a split.
    std::vector<std::size_t> order(rows);
    std::iota(order.begin(), order.end(), std::size_t{0});
    Rng rng(config.seed, 99);
    for (std::size_t i = 0; i < held; ++i) {
      std::swap(order[i], order[i + rng.Below(rows - i)]);
    }
    std::sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(held));
    std::sort(order.begin() + static_cast<std::ptrdiff_t>(held), order.end());
    split.validation = train.Gather(std::span(order).first(held));
    split.fit = train.Gather(std::span(order).subspan(held));
  }
  if (config.metric == Metric::kAuc) {
    const std::span<const float> labels = split.validation->labels();
    const auto positives = std::count_if(labels.begin(), labels.end(), [](float y) { return y > 0; });
    if (positives == 0 || static_cast<std::size_t>(positives) == labels.size()) {
      throw Error(ErrorCode::kBadInput, split.validation->name() +
                                            ": --metric auc needs both classes in the validation "
                                            "set, it holds only one");
    }
  }
  return split;
}

}  // namespace

double WarmupEpochs(const TrainConfig& config) {
  return config.warmup < 1 ? config.warmup * config.epochs : config.warmup;
}

float EpochStepSize(const TrainConfig& config, float lr, int epoch) {
  const auto e = static_cast<float>(epoch);
  float eta = lr;
  switch (config.lr_schedule) {
    case LrSchedule::kExp:
      eta = lr * std::pow(config.lr_decay, e);  // in float, as before schedules: bit for bit
      break;
    case LrSchedule::kInvSqrt:
      eta = static_cast<float>(lr / std::sqrt(1.0 + epoch));
      break;
    case LrSchedule::kCosine:
      eta = static_cast<float>(lr * 0.5 * (1 + std::cos(std::numbers::pi * epoch / config.epochs)));
      break;
  }
  const double warmup = WarmupEpochs(config);
  if (epoch < warmup) eta = static_cast<float>(static_cast<double>(eta) * (epoch + 1) / (warmup + 1));
  return eta;
}

std::string LrScheduleSpec(const TrainConfig& config) {
  std::string spec(ToString(config.lr_schedule));
  if (config.lr_schedule == LrSchedule::kExp) spec += ", decay " + internal::Number(config.lr_decay) + " per epoch";
  if (config.lr_schedule == LrSchedule::kCosine) spec += " over " + std::to_string(config.epochs) + " epochs";
  if (config.warmup > 0) spec += ", warm-up " + internal::Number(WarmupEpochs(config)) + " epochs";
  return spec;
}

std::string AlgorithmHelp() {
  constexpr std::size_t kColumn = 11;  // the longest name, hogwild++, and a space
  std::string help = "\n  auto" + std::string(kColumn - 4, ' ') +
                     "hogwild++ with groups of 1 at 2+ threads when every step writes every weight "
                     "(mlp; linear models on dense rows), else hogwild; hogwild for options only it "
                     "runs (docs/algorithms.md)";
  for (const internal::ModeInfo& m : internal::kModes) {
    help += "\n  " + std::string(m.name) + std::string(kColumn - m.name.size(), ' ') +
            std::string(m.help);
  }
  return help;
}

std::vector<Algorithm> Algorithms() {
  std::vector<Algorithm> all;
  for (const internal::ModeInfo& m : internal::kModes) all.push_back(m.algorithm);
  return all;
}

double ParseGamma(std::string_view text) {
  if (text == "theory") return kGammaTheory;
  double gamma = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, gamma);
  if (ec != std::errc() || ptr != end || !(gamma > 0)) {
    BadConfig("--gamma must be a number in (0, 1] or 'theory', got '" + std::string(text) + "'");
  }
  return gamma;
}

int ParseEvalEvery(std::string_view text) {
  if (text == "auto") return kEvalAuto;
  int epochs = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), epochs);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || epochs < 1) {
    throw Error(ErrorCode::kBadConfig, "--eval-every '" + std::string(text) +
                                           "': expected a number of epochs >= 1 (e.g. 5) or auto");
  }
  return epochs;
}

void ParseCheckpointEvery(std::string_view text, TrainConfig& config) {
  if (text.empty()) return;
  const bool seconds = text.back() == 's';
  const std::string number(seconds ? text.substr(0, text.size() - 1) : text);
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const bool whole = value >= 1 && value <= 1e9 && value == std::floor(value);
  if (number.empty() || used != number.size() || !std::isfinite(value) || value <= 0 ||
      (!seconds && !whole)) {
    throw Error(ErrorCode::kBadConfig, "--checkpoint-every '" + std::string(text) +
                                           "': expected a number of epochs >= 1 (e.g. 5) or of "
                                           "seconds > 0 (e.g. 600s)");
  }
  if (seconds) {
    config.checkpoint_every_s = value;
  } else {
    config.checkpoint_every = static_cast<int>(value);
  }
}

std::uint64_t ParseMemoryBudget(std::string_view text) {
  const auto bad = [&] {
    return Error(ErrorCode::kBadConfig, "--memory-budget '" + std::string(text) +
                                            "': expected a size above 0, in bytes or with K, M, G or T "
                                            "(powers of 1024), e.g. 512M or 4G");
  };
  std::string_view number = text;
  for (const std::string_view unit : {"iB", "B"}) {
    if (number.size() > unit.size() && number.ends_with(unit) &&
        std::string_view("KMGT").find(number[number.size() - unit.size() - 1]) != std::string_view::npos) {
      number.remove_suffix(unit.size());
      break;
    }
  }
  double scale = 1;
  if (const auto unit = std::string_view("KMGT").find(number.empty() ? ' ' : number.back());
      unit != std::string_view::npos) {
    scale = std::ldexp(1.0, 10 * static_cast<int>(unit + 1));
    number.remove_suffix(1);
  }
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(std::string(number), &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const double bytes = value * scale;
  // Below 2^62: every sum of budgets and byte counts stays exact in 64 bits.
  if (number.empty() || used != number.size() || !std::isfinite(bytes) || bytes < 1 ||
      bytes >= std::ldexp(1.0, 62) || !std::isdigit(static_cast<unsigned char>(number.front()))) {
    throw bad();
  }
  return static_cast<std::uint64_t>(bytes);
}

std::optional<int> ParseSchedule(std::string_view text) {
  if (text == "free") return std::nullopt;
  constexpr std::string_view kSeeded = "seeded:";
  int tau = -1;
  if (text.starts_with(kSeeded)) {
    const std::string_view number = text.substr(kSeeded.size());
    const char* end = number.data() + number.size();
    const auto [ptr, ec] = std::from_chars(number.data(), end, tau);
    if (ec != std::errc() || ptr != end || number.empty()) tau = -1;
  }
  if (tau < 0 || tau > kMaxSeededTau) {
    BadConfig("--schedule '" + std::string(text) +
              "': expected free or seeded:TAU, TAU a whole number of updates in [0, " +
              std::to_string(kMaxSeededTau) + "] (e.g. seeded:8)");
  }
  return tau;
}

std::string ScheduleSpec(const TrainConfig& config) {
  return config.seeded_tau ? "seeded:" + std::to_string(*config.seeded_tau) : "free";
}

namespace {

// A number as --class-weight spells it: what from_chars reads, with an optional leading '+'
// ("+1", the positive class of LIBSVM files); nullopt if `text` is anything else.
std::optional<float> ClassWeightNumber(std::string_view text) {
  if (text.starts_with('+')) text.remove_prefix(1);
  float value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(value)) return std::nullopt;
  return value;
}

}  // namespace

ClassWeight ParseClassWeight(std::string_view text) {
  if (text == "none" || text.empty()) return {};
  if (text == "balanced") return {.balanced = true};
  const auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kBadConfig,
                 "--class-weight '" + std::string(text) + "': " + why +
                     "; expected none, balanced or LABEL:W,... (e.g. 1:5,-1:1), W a number >= 0");
  };
  ClassWeight parsed;
  for (std::size_t begin = 0; begin <= text.size();) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    const std::string_view pair = text.substr(begin, comma - begin);
    const std::size_t colon = pair.find(':');
    if (colon == std::string_view::npos) throw bad("'" + std::string(pair) + "' has no ':'");
    const std::optional<float> label = ClassWeightNumber(pair.substr(0, colon));
    const std::optional<float> weight = ClassWeightNumber(pair.substr(colon + 1));
    if (!label) throw bad("'" + std::string(pair.substr(0, colon)) + "' is not a label (a number)");
    if (!weight || *weight < 0) {
      throw bad("'" + std::string(pair.substr(colon + 1)) + "' is not a weight (a number >= 0)");
    }
    for (const auto& [seen, w] : parsed.weights) {
      if (seen == *label) throw bad("label " + internal::Number(*label) + " is given twice");
    }
    parsed.weights.emplace_back(*label, *weight);
    begin = comma + 1;
  }
  return parsed;
}

std::string ClassWeightSpec(const ClassWeight& weight) {
  if (weight.balanced) return "balanced";
  if (weight.weights.empty()) return "none";
  std::string spec;
  for (const auto& [label, w] : weight.weights) {
    spec += (spec.empty() ? "" : ",") + internal::Number(label) + ":" + internal::Number(w);
  }
  return spec;
}

void TrainConfig::Validate() const {
  // auto is checked as hogwild: ResolveAlgorithm picks hogwild++ only when no option hogwild++
  // refuses is set, and hogwild++ refuses nothing else hogwild takes (Train checks the chosen
  // configuration again).
  const Algorithm mode_checked = algorithm == Algorithm::kAuto ? Algorithm::kHogwild : algorithm;
  if (l2 && (!std::isfinite(*l2) || *l2 < 0)) BadConfig("--l2 must be a finite number >= 0");
  if (threads < 0) BadConfig("--threads must be >= 0 (0 means all hardware threads)");
  if (epochs < 1) BadConfig("--epochs must be >= 1");
  if (batch < 1) BadConfig("--batch must be >= 1");
  if (rank < 1) BadConfig("--rank must be >= 1");
  for (const int width : hidden) {
    if (width < 1) BadConfig("--hidden widths must be >= 1");
  }
  if (!std::isfinite(lr) || lr < 0) BadConfig("--lr must be a finite number >= 0 (0 picks one)");
  if (!std::isfinite(lr_decay) || lr_decay <= 0 || lr_decay > 1) {
    BadConfig("--lr-decay must be in (0, 1]");
  }
  if (lr_schedule != LrSchedule::kExp && lr_decay != TrainConfig{}.lr_decay) {
    BadConfig("--lr-decay applies to --lr-schedule exp only, not --lr-schedule " +
              std::string(ToString(lr_schedule)));
  }
  if (!std::isfinite(warmup) || warmup < 0) {
    BadConfig("--warmup must be a number >= 0 (epochs when >= 1, a fraction of --epochs below 1)");
  }
  if (WarmupEpochs(*this) >= epochs) {
    BadConfig("--warmup of " + internal::Number(WarmupEpochs(*this)) +
              " epochs leaves no epoch at the full step of --epochs " + std::to_string(epochs));
  }
  if (target_loss && !std::isfinite(*target_loss)) BadConfig("--target-loss must be a finite number");
  if (optimizer == Optimizer::kAdaGrad) {
    // Where AdaGrad's accumulators live beside the shared model and race like it
    // (adagrad_steps.h); elsewhere they would need their own replicas, delays or codecs.
    const std::string where = "--optimizer adagrad runs under --algo hogwild with a linear model "
                              "(logistic, hinge, squared) at --batch 1";
    const bool linear = model == ModelKind::kLogistic || model == ModelKind::kHinge ||
                        model == ModelKind::kSquared;
    if (mode_checked != Algorithm::kHogwild) BadConfig(where + ", not --algo " + std::string(ToString(algorithm)));
    if (!linear) BadConfig(where + ", not --model " + std::string(ToString(model)));
    if (batch != 1) BadConfig(where + ", not --batch " + std::to_string(batch));
    if (seeded_tau) BadConfig(where + " and --schedule free, not --schedule " + ScheduleSpec(*this));
  }
  if (!std::isfinite(momentum) || momentum < 0 || momentum >= 1) {
    BadConfig("--momentum must be in [0, 1)");
  }
  if (optimizer == Optimizer::kMomentum) {
    // Where each worker or replica owns its gradient step (ShardWorker::ApplyGradient): the
    // other modes sum, quantise, delay or compress the steps, and the sparse models' lazy
    // updates have no dense velocity to decay.
    const std::string where = "--optimizer momentum runs under --algo hogwild, locked, dpsgd or "
                              "local with --model mlp";
    const bool mode = mode_checked == Algorithm::kHogwild || algorithm == Algorithm::kLocked ||
                      algorithm == Algorithm::kDpsgd || algorithm == Algorithm::kLocal;
    if (!mode) BadConfig(where + ", not --algo " + std::string(ToString(algorithm)));
    if (model != ModelKind::kMlp) BadConfig(where + ", not --model " + std::string(ToString(model)));
    if (seeded_tau) BadConfig(where + " and --schedule free, not --schedule " + ScheduleSpec(*this));
  }
  if (!class_weight.none() && !internal::TakesClassWeight(model)) {
    const bool regression = model == ModelKind::kSquared || model == ModelKind::kMf;
    BadConfig("--class-weight " + ClassWeightSpec(class_weight) +
              " applies to logistic, hinge and softmax, not the " + std::string(ToString(model)) +
              " model" + (regression ? " (it has no classes to weigh)" : " (not implemented yet)"));
  }
  if (!validation.empty()) ValidationFraction(validation);  // a bad fraction fails here
  if (early_stop < 0) BadConfig("--early-stop must be >= 0 epochs (0: off), got " + std::to_string(early_stop));
  if (early_stop > 0 && validation.empty()) {
    BadConfig("--early-stop watches a validation set: give --validation FILE or a fraction (e.g. 0.1)");
  }
  if (!MetricApplies(metric, model)) {
    BadConfig("--metric " + std::string(ToString(metric)) + " does not apply to the " +
              std::string(ToString(model)) +
              " model (acc: classification; auc: logistic, hinge; rmse: squared, mf)");
  }
  if (!std::isfinite(time_limit_s) || time_limit_s < 0) {
    BadConfig("--time-limit must be a number of seconds >= 0 (0: no limit)");
  }
  if (bits != 8 && bits != 16) BadConfig("--bits must be 8 or 16");
  if (model_bits != 8 && model_bits != 16) BadConfig("--model-bits must be 8 or 16");
  if (gossip_every < 1 && gossip_every != kGossipEveryAuto) {
    BadConfig("--gossip-every must be auto or >= 1, got " + std::to_string(gossip_every));
  }
  if (!hardware.empty()) internal::Hardware described(hardware);  // throws naming --hardware
  if (group_size < 0) {
    BadConfig("--group-size must be >= 0 (0: the threads of a cache domain), got " +
              std::to_string(group_size));
  }
  if (hot_coords < -1) {
    BadConfig("--hot-coords must be auto, off or a count >= 0, got " + std::to_string(hot_coords));
  }
  if (eval_every < 0) {
    BadConfig("--eval-every must be a number of epochs >= 1 or auto, got " + std::to_string(eval_every));
  }
  if (checkpoint_every < 0) BadConfig("--checkpoint-every must be >= 1 epochs or a number of seconds (Ns)");
  if (!std::isfinite(checkpoint_every_s) || checkpoint_every_s < 0) {
    BadConfig("--checkpoint-every must be a number of seconds > 0 (Ns) or >= 1 epochs");
  }
  if ((checkpoint_every > 0 || checkpoint_every_s > 0) && checkpoint_path.empty()) {
    BadConfig("--checkpoint-every needs a file to write (--save PATH)");
  }
  if (!init_path.empty() && !resume_path.empty()) {
    BadConfig("--init starts a new run from a model, --resume continues a saved run: give one");
  }
  if (seeded_tau) {
    if (*seeded_tau < 0 || *seeded_tau > kMaxSeededTau) {
      BadConfig("--schedule seeded:TAU needs TAU in [0, " + std::to_string(kMaxSeededTau) +
                "], got " + std::to_string(*seeded_tau));
    }
    const internal::ModeInfo& mode = internal::InfoOf(mode_checked);
    if (!mode.seeded) {
      BadConfig("--schedule " + ScheduleSpec(*this) + ": " + std::string(mode.name) +
                (mode.round_based
                     ? " is round-based: its runs already repeat bit for bit for a seed and a "
                       "--threads (with a numeric --gossip-every); use --schedule free"
                     : " has no seeded schedule (hogwild and buckwild have; docs/algorithms.md, "
                       "\"Determinism\"); it repeats bit for bit with --threads 1"));
    }
  }
  if (hot_sync < 0) {
    BadConfig("--hot-sync must be >= 1 updates (0: automatic), got " + std::to_string(hot_sync));
  }
  // Throws kBadConfig naming a bad --link or --link-mode.
  const internal::RunSpecs specs = internal::ParseRunSpecs(*this);
  const bool public_copies = algorithm == Algorithm::kChoco || algorithm == Algorithm::kAdpsgd;
  if (public_copies && specs.compress.starts_with("ef:")) {
    // Measured: choco and adpsgd with ef:topk:0.1 diverge on a9a within one epoch.
    BadConfig("--compress '" + specs.compress + "': " + std::string(ToString(algorithm)) +
              " keeps public copies h of the replicas and sends C(x - h), which already feeds the "
              "compression error back; error feedback on top counts it twice and diverges. Use "
              "the inner codec ('" + specs.compress.substr(3) + "')");
  }
  if (algorithm == Algorithm::kAdpsgd) {
    internal::MakeCompressor(specs.compress, 1);  // a bad spec fails here
    if (gamma == kGammaTheory) {
      BadConfig("--gamma theory is CHOCO's (rounds on a fixed W); adpsgd's pairwise averages "
                "take a number in (0, 1]");
    }
  }
  if (!std::isfinite(gamma) || (gamma != kGammaTheory && (gamma < 0 || gamma > 1))) {
    BadConfig("--gamma must be in (0, 1], or 'theory' (0: the default), got " +
              std::to_string(gamma));
  }
  if (internal::IsCompressedGossip(algorithm)) {
    internal::MakeCompressor(specs.compress, 1);  // a bad spec fails before any data is read
  }
  if (specs.link) {
    const internal::LinkUse use = internal::InfoOf(mode_checked).link;
    const bool sync = use == internal::LinkUse::kParameterServer;
    if (use == internal::LinkUse::kNone) {
      BadConfig("--link applies to dpsgd, local, dcd, ecd, choco, and sync or qsgd on --topology "
                "star, not '" +
                std::string(ToString(algorithm)) + "'");
    }
    if (sync && (topology != "star" || link_mode != "virtual")) {
      BadConfig("--link with " + std::string(ToString(algorithm)) +
                " models a parameter server: it needs --topology star and --link-mode virtual "
                "(got '" + topology + "', '" + link_mode + "')");
    }
  }
}

const EvalPoint* ResultPoint(const TrainResult& result) {
  if (result.history.empty()) return nullptr;
  if (result.best_epoch) {
    for (const EvalPoint& p : result.history) {
      if (p.epoch == *result.best_epoch) return &p;
    }
  }
  return &result.history.back();
}

SavedModel ToSavedModel(const TrainResult& result) {
  return {.info = result.model, .params = result.params, .training = result.state};
}

namespace internal {

std::string CheckpointTopology(const TrainConfig& config) {
  // The graph matters to the run where the mode gossips over it, or where --link costs a
  // parameter server's steps on it (the registry says which).
  const ModeInfo& mode = InfoOf(config.algorithm);
  const bool uses_graph =
      mode.topology || (mode.link == LinkUse::kParameterServer && !config.link.empty());
  return uses_graph ? config.topology : "";
}

std::vector<std::string> CheckMixing(const Topology& topology, bool strict) {
  std::vector<std::string> problems;
  const auto name = [](int i, int j) {
    return "W_" + std::to_string(i) + "," + std::to_string(j);
  };
  std::string first_row;  // the first row of any round that is not stochastic
  int bad_rows = 0;
  for (int r = 0; r < topology.period(); ++r) {
    const auto round = static_cast<std::uint64_t>(r);
    for (int i = 0; i < topology.workers(); ++i) {
      double sum = topology.SelfWeight(i, round);
      std::string negative = sum < 0 ? name(i, i) + " = " + Number(sum) : "";
      for (const Neighbour& nb : topology.Neighbours(i, round)) {
        sum += nb.weight;
        if (nb.weight < 0 && negative.empty()) negative = name(i, nb.worker) + " = " + Number(nb.weight);
      }
      if (negative.empty() && std::abs(sum - 1) <= kStochasticTolerance) continue;
      if (++bad_rows > 1) continue;
      first_row = "row " + std::to_string(i) + (topology.period() > 1 ? " of round " + std::to_string(r) : "") +
                  (negative.empty() ? " sums to " + Number(sum) + ", not 1"
                                    : " has the negative weight " + negative +
                                          " (its other weights sum to over 1)");
    }
  }
  if (bad_rows > 0) {
    problems.push_back("W is not stochastic: " + first_row +
                       (bad_rows > 1 ? " (and " + std::to_string(bad_rows - 1) + " more rows)" : "") +
                       "; the replicas do not average");
  }
  if (topology.workers() <= kMaxAnalyzedWorkers && !Analyze(topology).connected) {
    problems.push_back("the graph is disconnected: some workers never hear from the others, so "
                       "their replicas never agree");
  }
  for (std::string& p : problems) {
    p = "topology '" + topology.spec() + "': " + p;
    if (strict) throw Error(ErrorCode::kBadConfig, p + " (--strict)");
  }
  return problems;
}

double PeakRssMb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// `threads` workers on each rank of `cluster`.
// `train` holds the rows `held` of the set.
template <typename M>
TrainResult RunMode(const M& model, const Dataset& train, HeldRows held, const Dataset* test,
                    const Dataset* validation, const TrainConfig& config, int threads,
                    Cluster& cluster, float l2, const TrainObserver& observer, ModelInfo info,
                    std::string algorithm_reason) {
  const ModeInfo& mode = InfoOf(config.algorithm);
  // A step that averages every worker's batch is searched at that batch.
  const auto search_batch = static_cast<std::size_t>(config.batch) *
                            static_cast<std::size_t>(mode.all_batches ? threads * cluster.ranks() : 1);
  bool searched = false;
  RunPlan plan = PlanRun(model, train, config, threads, cluster, held, search_batch, searched,
                         mode.replicas ? threads * cluster.ranks() : 1);
  plan.info = std::move(info);
  plan.validation = validation;
  plan.algorithm_reason = std::move(algorithm_reason);
  return (*mode.runner)(model, ModeRun{.test = test, .plan = std::move(plan), .lr_searched = searched,
                                       .l2 = l2, .observer = observer});
}

}  // namespace internal

std::string ResolvedCompress(const TrainConfig& config) {
  if (!config.compress.empty()) return config.compress;
  // ecd with local steps (any --gossip-every but 1): qsgd:16. ECD's estimates stay stable for
  // about t < 4/omega rounds (omega: the codec's squared relative error, compressed_gossip.h);
  // qsgd:8 (omega 0.002-0.005, a limit of ~1,000-2,000 rounds) diverged on the Zipf set at
  // every K up to 512, qsgd:16 ended within 1% of hogwild's objective (docs/algorithms.md).
  // --gossip-every 1 keeps the paper's runs, and their stored digests, on qsgd:8.
  if (config.algorithm == Algorithm::kEcd && config.gossip_every != 1) return "qsgd:16";
  return std::string(internal::InfoOf(config.algorithm).compress);
}

TrainResult Train(const Dataset& all, const Dataset* test, const TrainConfig& given,
                  const TrainObserver& observer) {
  internal::LocalCluster alone;
  return Train(all, test, given, observer, alone);
}

namespace {

// The workers --threads asks for: the number, or one per hardware thread.
int RequestedThreads(const TrainConfig& config) {
  if (config.threads > 0) return config.threads;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}
// ... of which a run on `rows` rows starts at most one per row.
int WorkerThreads(const TrainConfig& config, std::size_t rows) {
  return static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(RequestedThreads(config)), rows));
}

// `config` with --algo auto resolved (ResolveAlgorithm) and checked again as the mode chosen;
// the reason goes to `reason`.
TrainConfig WithAlgorithm(const TrainConfig& given, const Dataset& train, int threads, int ranks,
                          std::string& reason) {
  if (given.algorithm != Algorithm::kAuto) return given;
  const AlgorithmChoice choice = ResolveAlgorithm(given, train, threads, ranks);
  TrainConfig config = given;
  config.algorithm = choice.algorithm;
  config.group_size = choice.group_size;
  config.Validate();
  reason = choice.reason;
  return config;
}

// What a run across ranks cannot do (yet), refused before any data is touched; each message
// names the flag. Every rank checks the same config, so all refuse alike.
void CheckAcrossRanks(const TrainConfig& config, const TrainObserver& observer, int ranks) {
  const internal::ModeInfo& mode = internal::InfoOf(config.algorithm);
  const std::string across = "across " + std::to_string(ranks) + " ranks (mpirun)";
  if (!mode.across_ranks) {
    std::string modes;
    for (const internal::ModeInfo& m : internal::kModes) {
      if (m.across_ranks) modes += (modes.empty() ? "" : ", ") + std::string(m.name);
    }
    BadConfig("--algo " + std::string(mode.name) + " does not run " + across + "; these do: " +
              modes + " (or run it in one process)");
  }
  if (config.threads == 0) {
    BadConfig("--threads must be a number " + across +
              ": the workers of each rank (mpirun starts one rank per slot; e.g. one rank per "
              "NUMA node with --threads its cores)");
  }
  if (observer.live != nullptr) BadConfig("a LiveModel does not follow a run " + across);
  if (!config.validation.empty() || config.early_stop > 0) {
    BadConfig("--validation and --early-stop do not run " + across + " yet");
  }
  if (config.class_weight.balanced) {
    BadConfig("--class-weight balanced does not run " + across +
              " yet (each rank would count its own rows); give the weights as LABEL:W,...");
  }
}

}  // namespace

RankPart RankPartOf(std::size_t total, int rank, int ranks) {
  const std::size_t first = ContiguousShardBegin(total, static_cast<std::size_t>(ranks),
                                                 static_cast<std::size_t>(rank));
  const std::size_t last = ContiguousShardBegin(total, static_cast<std::size_t>(ranks),
                                                static_cast<std::size_t>(rank) + 1);
  return {.first = first, .count = last - first, .total = total};
}

namespace {

// The whole set's TrainingFacts from every rank's part: rows and feature counts added in rank
// order, the classes' union, the largest dimension. Collective.
TrainingFacts FactsAcross(Cluster& cluster, const Dataset& mine) {
  TrainingFacts facts = TrainingFacts::Of(mine);
  facts.num_features = internal::MaxAcross(cluster, facts.num_features);
  facts.rows_with.resize(facts.num_features, 0);
  facts.rows = internal::SumAcross(cluster, facts.rows);
  const std::vector<std::uint64_t> counts =
      internal::GatherAll(cluster, std::span<const std::uint64_t>(facts.rows_with));
  std::ranges::fill(facts.rows_with, 0);
  for (std::size_t at = 0; at < counts.size(); ++at) facts.rows_with[at % facts.num_features] += counts[at];
  // Classes: each rank's labels, padded with NaN (no label) to the most any rank has.
  std::vector<float> labels = facts.classes.labels();
  labels.resize(internal::MaxAcross(cluster, labels.size()), std::numeric_limits<float>::quiet_NaN());
  std::vector<float> all = internal::GatherAll(cluster, std::span<const float>(labels));
  std::erase_if(all, [](float v) { return std::isnan(v); });
  facts.classes = ClassMap(std::move(all));
  return facts;
}

// A run on `mine`, the rows `held` of the set: all of them in one process, this rank's own
// across ranks. The model is built from `model_data` (every rank's whole copy of the set),
// else from `facts` (the whole set's, added across ranks), else from the rows it fits (one
// process: `mine` less --validation's share).
TrainResult TrainHeld(const Dataset& mine, internal::HeldRows held, const Dataset* model_data,
                      const TrainingFacts* facts, const Dataset* test, const TrainConfig& given,
                      const TrainObserver& observer, Cluster& cluster) {
  given.Validate();
  if (held.total == 0) {
    throw Error(ErrorCode::kBadInput, mine.name() + ": the training set has no rows");
  }
  // Across ranks each holds a part, which may weigh 0 alone (LoadWeights checks the whole file).
  if (cluster.ranks() == 1 && mine.weighted() &&
      std::none_of(mine.weights().begin(), mine.weights().end(), [](float w) { return w > 0.0f; })) {
    throw Error(ErrorCode::kBadInput, mine.name() + ": every sample weight is 0, expected at least one above 0");
  }
  std::string algorithm_reason;
  TrainConfig config =
      WithAlgorithm(given, mine, WorkerThreads(given, held.total), cluster.ranks(), algorithm_reason);
  if (cluster.ranks() > 1) CheckAcrossRanks(config, observer, cluster.ranks());
  config.compress = ResolvedCompress(config);
  const Split split = SplitValidation(mine, config);  // one process only (refused across ranks)
  const Dataset& train = split.fit;
  const Dataset* validation = split.validation ? &*split.validation : nullptr;
  if (cluster.ranks() == 1) held = {.first = 0, .total = train.rows()};
  int threads = RequestedThreads(config);
  // Every worker needs at least one row of its own.
  const auto ranks = static_cast<std::size_t>(cluster.ranks());
  if (ranks > 1 && static_cast<std::size_t>(threads) * ranks > held.total) {
    throw Error(ErrorCode::kBadConfig,
                train.name() + ": " + std::to_string(held.total) + " rows for " +
                    std::to_string(ranks) + " ranks x --threads " + std::to_string(threads) +
                    " workers: every worker needs a row of its own");
  }
  threads = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(threads), held.total));
  // Each worker's gradient buffer holds an entry (index, value, L2 weight) for every stored
  // value of its batch's rows: a lower bound of what --batch costs, checked before any worker
  // allocates it.
  CheckMemory({static_cast<double>(config.batch), static_cast<double>(train.max_row_nnz()) + 1,
               12, static_cast<double>(threads)},
              ErrorCode::kBadConfig, "--batch " + std::to_string(config.batch),
              "the workers' gradient buffers for rows of up to " +
                  std::to_string(train.max_row_nnz()) + " values");
  const float l2 = config.l2.value_or(1.0f / static_cast<float>(held.total));
  // A bad --topology fails before the step-size search spends time on the data.
  std::vector<std::string> mixing_warnings;
  if (const std::string topology = internal::CheckpointTopology(config); !topology.empty()) {
    mixing_warnings = internal::CheckMixing(MakeTopology(topology, threads * cluster.ranks()), config.strict);
  }

  const Dataset& source = model_data != nullptr ? *model_data : train;
  return internal::WithTrainingModel(config, source, facts, l2, [&](const auto& model) {
    ModelInfo info = internal::Describe(config.model, model, source);
    TrainResult result = internal::RunMode(model, train, held, test, validation, config, threads,
                                           cluster, l2, observer, info, algorithm_reason);
    result.model = std::move(info);
    result.warnings.insert(result.warnings.begin(), mixing_warnings.begin(), mixing_warnings.end());
    return result;
  });
}

}  // namespace

TrainResult Train(const Dataset& all, const Dataset* test, const TrainConfig& given,
                  const TrainObserver& observer, Cluster& cluster) {
  if (cluster.ranks() == 1 || all.rows() == 0) {
    // The model from the rows it fits (without --validation's held-out share).
    return TrainHeld(all, {.first = 0, .total = all.rows()}, nullptr, nullptr, test, given,
                     observer, cluster);
  }
  // Every rank holds the whole set: each trains on a view of its workers' rows and evaluates
  // its part of the sets, as a rank that read only its rows does (the model still from `all`).
  const RankPart part = RankPartOf(all.rows(), cluster.rank(), cluster.ranks());
  const Dataset mine = all.Rows(part.first, part.first + part.count);
  std::optional<Dataset> test_part;
  if (test != nullptr) {
    const RankPart t = RankPartOf(test->rows(), cluster.rank(), cluster.ranks());
    test_part = test->Rows(t.first, t.first + t.count);
  }
  return TrainHeld(mine, {.first = part.first, .total = part.total}, &all, nullptr,
                   test_part ? &*test_part : nullptr, given, observer, cluster);
}

TrainResult Train(const Dataset& mine, const RankPart& part, const Dataset* test,
                  const TrainConfig& given, const TrainObserver& observer, Cluster& cluster) {
  const RankPart expected = RankPartOf(part.total, cluster.rank(), cluster.ranks());
  const bool wrong =
      part.first != expected.first || part.count != expected.count || mine.rows() != part.count;
  // Agreed before any rank goes on into the collectives below.
  if (internal::AnyAcross(cluster, wrong) && !wrong) {
    throw Error(ErrorCode::kBadConfig, "another rank's rows are not its RankPartOf");
  }
  if (wrong) {
    throw Error(ErrorCode::kBadConfig,
                mine.name() + ": rank " + std::to_string(cluster.rank()) + " of " +
                    std::to_string(cluster.ranks()) + " holds " + std::to_string(mine.rows()) +
                    " rows as rows " + std::to_string(part.first) + ".. of " +
                    std::to_string(part.total) + "; expected its part, rows " +
                    std::to_string(expected.first) + ".." +
                    std::to_string(expected.first + expected.count) + " (RankPartOf)");
  }
  if (cluster.ranks() == 1) return Train(mine, test, given, observer, cluster);
  const TrainingFacts facts = FactsAcross(cluster, mine);
  return TrainHeld(mine, {.first = part.first, .total = part.total}, nullptr, &facts, test, given,
                   observer, cluster);
}

namespace detail {

// A custom model runs through the same RunMode as the built-in ones (see custom_model.h).
TrainResult TrainCustomModel(const CustomModelBase& custom, const Dataset& all,
                             const Dataset* test, const TrainConfig& given,
                             const TrainObserver& observer) {
  given.Validate();
  if (given.algorithm == Algorithm::kBuckwild) {
    BadConfig("buckwild trains the built-in linear models (logistic, hinge, squared), not a "
              "custom model");
  }
  if (!given.resume_path.empty() || !given.init_path.empty()) {
    BadConfig("--resume and --init load the built-in models only, not a custom model");
  }
  if (!given.class_weight.none()) {
    BadConfig("--class-weight weighs the built-in classifiers' losses (logistic, hinge, "
              "softmax), not a custom model's");
  }
  if (all.weighted()) {
    BadConfig(all.name() + ": sample weights weigh the built-in models' losses, not a custom "
              "model's (its AddGradient takes no weight)");
  }
  if (all.rows() == 0) {
    throw Error(ErrorCode::kBadInput, all.name() + ": the training set has no rows");
  }
  // A custom model's step writes the coordinates of its row, as a linear model's does: auto
  // chooses for it as for logistic.
  TrainConfig as_linear = given;
  as_linear.model = ModelKind::kLogistic;
  std::string algorithm_reason;
  TrainConfig config = WithAlgorithm(as_linear, all, WorkerThreads(given, all.rows()), 1, algorithm_reason);
  config.model = given.model;
  config.compress = ResolvedCompress(config);
  const Split split = SplitValidation(all, config);
  const Dataset& train = split.fit;
  const Dataset* validation = split.validation ? &*split.validation : nullptr;
  if (custom.NumParams() == 0) BadConfig("a custom model needs NumParams() >= 1, got 0");
  const int threads = WorkerThreads(config, train.rows());
  const float l2 = config.l2.value_or(1.0f / static_cast<float>(train.rows()));
  if (internal::InfoOf(config.algorithm).topology) internal::GossipTopology(config, threads, {});
  const auto run = [&](const auto& model) {
    const ModelInfo info{.kind = config.model, .l2 = l2, .num_features = train.num_features()};
    internal::LocalCluster alone;  // custom models run in one process
    TrainResult result = internal::RunMode(model, train, {.first = 0, .total = train.rows()}, test,
                                           validation, config, threads, alone, l2, observer, info,
                                           algorithm_reason);
    result.model = info;
    return result;
  };
  if (custom.task() == Task::kRegression) {
    return run(internal::ErasedModel<Task::kRegression>(custom, l2));
  }
  return run(internal::ErasedModel<Task::kBinary>(custom, l2));
}

}  // namespace detail
}  // namespace corral
