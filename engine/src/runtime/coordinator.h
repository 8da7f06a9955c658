// Over 300 lines: the Mode contract, the run plan and the loop's view of a mode, kept beside each other.
// The coordinator loop every mode runs under (Coordinate; the loop itself is coordinator.cc):
// epochs, evaluation, stopping rules, metrics, progress, checkpoints and failure handling. A mode
// supplies only what its workers do.
//
// A Mode has (all but the worker calls run on the coordinator while the workers are parked):
//   Mode(const M& model, const RunPlan& plan, std::atomic<bool>& halt)
//   void Setup(int w);                                   // worker w's thread, once
//   void Epoch(int w, int epoch, std::uint64_t start,    // worker w's thread; `start` samples
//              std::atomic<std::uint64_t>& steps);        //   of the epoch are already done
//   std::uint64_t Position(int w) const;                 // samples of the epoch done by w
//   std::uint64_t EpochLength(int w) const;              // samples in w's full epoch
//   std::uint64_t Samples() const;                       // all samples processed this run
//   void Snapshot(std::span<float> out) const;           // the model as floats
//   std::uint64_t BytesSent() const, BytesSentMax() const;
//   void EndEpoch();                                     // optional: between epochs
//   void LiveSnapshot(std::span<float> out);             // the model while the workers run
//                                                        //   (LiveModel), or instead
//   static constexpr bool kSnapshotWhileRunning = true;  //   Snapshot is safe beside them
// and optionally (replica modes; detected with `requires`):
//   double Consensus() const;                            // (1/n) sum_i |x_i - mean|^2
//   std::optional<double> VirtualSeconds() const;        // modelled time; nullopt: train_s
//   std::optional<double> CompressRelError();            // mean |Q(z)-z|/|z| since last call
//   void AfterSetup();                                   // every Setup done, before epoch 1
//   void MeasureRounds(EvalPoint& p);                    // after an epoch: gossip_every, _share
//   void Report(TrainResult& result) const;              // warnings and settings it chose
//   void Describe(TrainResult& result) const;            // at the end: its settings and summary
//                                                        //   lines (describe.h)
//   void VisitState(StateVisitor& v);                    // its training state beyond the model
//                                                        //   (mode_state.h), at epoch ends:
//                                                        //   saved into checkpoints, restored on
//                                                        //   resume after AfterSetup
//   static constexpr bool kStateInsideEpoch = true;      // VisitState is whole whenever the
//                                                        //   workers are parked, inside an epoch
//                                                        //   too (a shared model): saved then too
//   std::vector<std::span<const std::byte>>              // worker w's own memory (its rows,
//       OwnedMemory(int w) const;                        //   replica): bound to w's NUMA node
//                                                        //   after Setup(w), on w's thread
//   std::span<const std::byte> SharedMemory() const;     // a shared model: interleaved over the
//                                                        //   nodes in use
//   std::pair<Shuffle, std::uint64_t> Shuffling() const; // the visiting order its workers used
//                                                        //   and their epoch copies' bytes (a
//                                                        //   mode without it reads through an
//                                                        //   index: --shuffle index)
// Workers stop early (within one step) when `halt` is set: by the coordinator on a time limit
// or cancellation, or by a failing worker.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <corral/cluster.h>
#include <corral/error.h>
#include <corral/placement.h>
#include <corral/rng.h>
#include <corral/topology.h>
#include <corral/train.h>

#include "engine/src/channel/link.h"
#include "engine/src/cluster/collectives.h"
#include "engine/src/runtime/crew.h"
#include "engine/src/runtime/describe.h"
#include "engine/src/runtime/divergence.h"
#include "engine/src/runtime/epoch_layout.h"
#include "engine/src/runtime/evaluate.h"
#include "engine/src/runtime/live.h"
#include "engine/src/runtime/lr_search.h"
#include "engine/src/runtime/metrics.h"
#include "engine/src/runtime/mode_state.h"
#include "engine/src/runtime/placement.h"
#include "engine/src/runtime/shard_worker.h"

namespace corral::internal {

double PeakRssMb();

// The --topology a run of `config` gossips over, or "" when its algorithm has none (hogwild,
// local's fixed complete graph, ...). Defined in train.cc.
std::string CheckpointTopology(const TrainConfig& config);

// What keeps a W from averaging, each a message naming the topology: a row that is not
// stochastic (a negative entry, or entries that do not sum to 1), a disconnected graph.
// Throws kBadConfig with the first one when `strict`. Defined in train.cc.
std::vector<std::string> CheckMixing(const Topology& topology, bool strict);

// The checkpoint's name for the order a --shuffle visits rows in (TrainingState::order).
inline std::string VisitingOrder(Shuffle s) { return s == Shuffle::kOff ? "storage" : "shuffled"; }

// A checkpoint continues only the run that wrote it: its saved positions and step size mean
// something only for the same algorithm, workers, batch, gossip graph and compressor (sync
// workers resumed at hogwild's unequal positions would wait at a barrier forever), and the
// --optimizer whose state it holds. Throws kBadConfig naming every difference; a field an older
// file does not record is not compared, except that such a file holds no optimizer state: it
// resumes under sgd only.
inline void CheckResumable(const std::string& path, const TrainingState& saved,
                           const TrainConfig& config, int threads) {
  std::string differences;
  const auto compare = [&](const char* flag, const std::string& then, const std::string& now) {
    if (then == now) return;
    differences += std::string(differences.empty() ? "" : ", ") + flag + " " + then +
                   " (this run: " + now + ")";
  };
  const auto or_none = [](const std::string& s) { return s.empty() ? std::string("none") : s; };
  compare("--algo", std::string(ToString(saved.algorithm)), std::string(ToString(config.algorithm)));
  compare("--threads", std::to_string(saved.threads), std::to_string(threads));
  compare("--batch", std::to_string(saved.batch), std::to_string(config.batch));
  if (saved.topology) compare("--topology", or_none(*saved.topology), or_none(CheckpointTopology(config)));
  if (saved.compress) compare("--compress", *saved.compress, ResolvedCompress(config));
  if (saved.optimizer) {
    compare("--optimizer", std::string(ToString(*saved.optimizer)),
            std::string(ToString(config.optimizer)));
  } else if (config.optimizer != Optimizer::kSgd) {
    differences += std::string(differences.empty() ? "" : ", ") +
                   "no optimizer state (a file from before corral saved it; this run: "
                   "--optimizer " + std::string(ToString(config.optimizer)) + ")";
  }
  if (differences.empty()) return;
  throw Error(ErrorCode::kBadConfig,
              path + ": cannot resume: the checkpoint was written with " + differences +
                  "; a resumed run needs the same --algo, --threads, --batch, --optimizer, "
                  "--topology and --compress (or train afresh without --resume)");
}

// The run's specs, parsed once (TrainConfig::Validate checks a config by parsing them too):
// modes take them from the plan and never parse a spec themselves.
struct RunSpecs {
  std::string compress;            // ResolvedCompress: --compress or the algorithm's default
  std::optional<LinkSpec> link;    // --link; none: infinitely fast links
  LinkMode link_mode = LinkMode::kVirtual;
};
inline RunSpecs ParseRunSpecs(const TrainConfig& config) {
  RunSpecs specs{.compress = ResolvedCompress(config), .link_mode = ParseLinkMode(config.link_mode)};
  if (!config.link.empty()) specs.link = ParseLinkSpec(config.link);
  return specs;
}

// What a mode is built from: the run's resolved settings and starting point.
struct RunPlan {
  const Dataset& train;
  const TrainConfig& config;
  int threads = 1;                   // this rank's workers
  // Across ranks (mpirun): this rank hosts the workers [first_worker, first_worker + threads)
  // of `workers` in all; one process: 0 and `threads`. Shards, random streams, topology and
  // mixing weights come from the global ids, so R ranks of T threads run the algorithm of one
  // process with R x T threads. Only modes registered as across_ranks see first_worker > 0.
  int first_worker = 0;
  int workers = 1;
  // Which rows of the whole set `train` holds: all of them in one process; across ranks this
  // rank's workers' rows (Train slices them off, or the rank read only them: LoadRankRows).
  // Shards and epoch lengths come from held.total.
  HeldRows held;
  Cluster* cluster = nullptr;        // never null once planned: LocalCluster in one process
  float lr = 0;                      // initial step size; epoch e uses EpochStepSize(config, lr, e)
  std::vector<float> initial;        // starting parameters
  int first_epoch = 0;               // resumed runs start later
  std::vector<std::uint64_t> start;  // per worker, samples of first_epoch already done
  std::vector<int> worker_domain;    // per worker, its cache domain (-1 unknown): groups
  bool live = false;                 // a LiveModel reads the model while it trains
  // Each worker copies its shard (first touch: onto its NUMA node) only when the workers span
  // more than one node; on one node the copy would place nothing and double the data's
  // memory, so the shards are views of the training set (embedders' arrays stay unique).
  bool copy_shards = true;
  RunSpecs specs;                    // compressor, links
  Shuffle shuffle = Shuffle::kIndex;  // --shuffle, index where epoch's copy does not fit
  std::string shuffle_note;           // why epoch fell back to index (empty: it did not)
  std::string shuffle_reason;         // --shuffle auto: why it chose what it did (empty: not auto)
  std::string shards_note;            // why shards are views though copies were asked for
  // What --memory-budget leaves for other copies of the data (the hot head's split rows) after
  // the epoch's and the shards' (infinite without a budget).
  double copy_bytes_left = std::numeric_limits<double>::infinity();
  // --shuffle epoch in windows of this many bytes a worker (0: the whole shard), for a mode
  // whose EpochInWindows(config) is true (DataCopies::window_bytes).
  std::uint64_t window_bytes = 0;
  ModelInfo info;                     // what the parameters mean (checkpoints written while training)
  ModeState mode_state;               // resumed: the mode's saved state (empty: none saved)
  const Dataset* validation = nullptr;  // --validation: scored at every epoch end (or none)
  // --algo auto: why config.algorithm runs (AlgorithmChoice::reason); empty when it was given.
  std::string algorithm_reason;
  float EpochLr(int epoch) const { return EpochStepSize(config, lr, epoch); }
};

// Mean loss, objective and accuracy or RMSE of a snapshot, as an evaluation point's fields.
// Across ranks `train` and `test` are this rank's parts and the sums are added across ranks.
template <typename M>
void EvaluateInto(const M& model, std::span<const float> w, const Dataset& train,
                  const Dataset* test, Cluster& cluster, EvalPoint& p) {
  const EvalResult on_train = Evaluate(model, w, train, cluster);
  p.train_loss = on_train.loss;
  p.objective = on_train.loss + model.Regularizer(w);
  bool finite = std::isfinite(p.objective);
  if constexpr (M::kTask == Task::kRegression) {
    p.train_rmse = on_train.rmse;
  } else {
    p.train_acc = on_train.accuracy;
  }
  if (test != nullptr) {
    const EvalResult on_test = Evaluate(model, w, *test, cluster);
    p.test_loss = on_test.loss;
    finite = finite && std::isfinite(on_test.loss);
    if constexpr (M::kTask == Task::kRegression) {
      p.test_rmse = on_test.rmse;
    } else {
      p.test_acc = on_test.accuracy;
    }
    p.test_auc = EvaluateAuc(model, w, *test, cluster);
  }
  p.diverged = !finite;
}

// The validation set's measures (TrainConfig::validation) as an evaluation point's fields.
template <typename M>
void EvaluateValidation(const M& model, std::span<const float> w, const Dataset& validation,
                        EvalPoint& p) {
  const EvalResult r = Evaluate(model, w, validation);
  p.validation_loss = r.loss;
  if constexpr (M::kTask == Task::kRegression) {
    p.validation_rmse = r.rmse;
  } else {
    p.validation_acc = r.accuracy;
  }
  p.validation_auc = EvaluateAuc(model, w, validation);
}

// --init: the parameters of a model file (its training state, if any, is not used), checked to
// be a model of this run's kind and size. Throws kBadInput naming both.
inline std::vector<float> InitialParameters(const TrainConfig& config, std::size_t num_params) {
  SavedModel saved = LoadModel(config.init_path);
  if (saved.info.kind != config.model || saved.params.size() != num_params) {
    throw Error(ErrorCode::kBadInput,
                config.init_path + ": --init needs a " + std::string(ToString(config.model)) +
                    " model with " + std::to_string(num_params) +
                    " parameters (this run's model and data), the file holds a " +
                    std::string(ToString(saved.info.kind)) + " model with " +
                    std::to_string(saved.params.size()));
  }
  return std::move(saved.params);
}

// The run's step size, starting parameters and position: from a checkpoint, or fresh.
// `search_batch` is the batch one update averages over (sync modes: all workers' batches);
// `search_replicas` how many models the workers' steps are spread over, each averaged with the
// others (the replica modes: the workers; 1: one shared model, or sync's one averaged step), so
// that a model takes epochs x rows / (search_batch x search_replicas) steps: the run length the
// step-size search scales its pick to (SearchOptions::run_samples).
// `threads` workers on each of the cluster's ranks; `train` holds the rows `held` of the set.
template <typename M>
RunPlan PlanRun(const M& model, const Dataset& train, const TrainConfig& config, int threads,
                Cluster& cluster, HeldRows held, std::size_t search_batch, bool& lr_searched,
                int search_replicas = 1) {
  RunPlan plan{.train = train, .config = config, .threads = threads,
               .first_worker = cluster.rank() * threads, .workers = cluster.ranks() * threads,
               .held = held, .cluster = &cluster, .specs = ParseRunSpecs(config)};
  lr_searched = false;
  if (!config.resume_path.empty()) {
    SavedModel saved = LoadModel(config.resume_path);
    if (!saved.training) {
      throw Error(ErrorCode::kBadInput, config.resume_path +
                                            ": holds no training state (expected a file written by "
                                            "corral train --save)");
    }
    if (saved.info.kind != config.model || saved.params.size() != model.NumParams()) {
      throw Error(ErrorCode::kBadInput,
                  config.resume_path + ": holds a " + std::string(ToString(saved.info.kind)) +
                      " model with " + std::to_string(saved.params.size()) +
                      " parameters; this run trains a " + std::string(ToString(config.model)) +
                      " model with " + std::to_string(model.NumParams()));
    }
    TrainingState& s = *saved.training;
    // The file holds all the run's workers (across ranks too): this rank takes its own.
    CheckResumable(config.resume_path, s, config, plan.workers);
    if (cluster.ranks() == 1) {
      plan.mode_state = std::move(s.mode);
    } else {
      CheckWorkersWithin(s.mode, static_cast<std::size_t>(plan.workers), config.resume_path);
      plan.mode_state = WorkersOf(s.mode, static_cast<std::size_t>(plan.first_worker),
                                  static_cast<std::size_t>(threads), 0);
    }
    plan.lr = config.lr > 0 ? config.lr : s.lr;
    plan.initial = std::move(saved.params);
    plan.first_epoch = s.epochs_done;
    // Mid-epoch positions only mean the same rows with the same shuffles (otherwise the
    // interrupted epoch restarts). A mode without --shuffle off visits shuffled rows even when
    // asked for storage order; taking the flag at its word here only restarts such an epoch.
    if (s.seed == config.seed && s.position.size() == static_cast<std::size_t>(plan.workers) &&
        s.order == VisitingOrder(config.shuffle)) {
      plan.start.assign(s.position.begin() + plan.first_worker,
                        s.position.begin() + plan.first_worker + threads);
    }
  } else {
    if (!config.init_path.empty()) {
      plan.initial = InitialParameters(config, model.NumParams());
    } else {
      plan.initial.assign(model.NumParams(), 0.0f);
      Rng init_rng(config.seed, 0);
      model.Init(std::span(plan.initial), init_rng);
    }
    plan.lr = config.lr;
    if (plan.lr <= 0) {
      const SearchOptions search{.optimizer = config.optimizer,
                                 .momentum = config.momentum,
                                 .lanes = static_cast<std::size_t>(std::max(threads, 1)),
                                 .run_samples = static_cast<double>(config.epochs) *
                                                static_cast<double>(held.total) /
                                                std::max(search_replicas, 1)};
      if (cluster.ranks() == 1) {
        plan.lr = SearchStepSize(model, train, search_batch, config.seed, search).lr;
      } else {
        // One process's sample, the same rows in the same order: each drawn row comes from the
        // rank that holds it, and every rank searches on the gathered copy.
        const SearchPool pool = PoolOf(DrawSearchRows<M>(held.total, config.seed, search));
        const Dataset gathered = GatherRowsAcross(cluster, train, held.first, pool.wanted);
        plan.lr =
            SearchStepSizeOn(model, gathered, pool.in_pool, search_batch, config.seed, search).lr;
      }
      plan.lr = FromRankZero(cluster, plan.lr);  // the same search on every rank; rank 0's word
      lr_searched = true;
    }
  }
  plan.start.resize(static_cast<std::size_t>(threads), 0);
  // The copies for workers on one node and a mode that re-lays out its rows; the coordinator
  // settles them once it knows the placement and the mode (ResolveDataCopies there): until
  // then --shuffle auto knows no cache and resolves to epoch.
  DataCopies copies = ResolveDataCopies(config.shuffle, true, false, DataBytes(train), config.memory_budget,
                                        static_cast<double>(MemoryLimitBytes()));
  plan.shuffle = copies.shuffle;
  plan.shuffle_note = std::move(copies.shuffle_note);
  plan.shuffle_reason = std::move(copies.auto_reason);
  plan.copy_bytes_left = copies.bytes_left;
  return plan;
}

// A plan for this process alone (tests and benches that build a mode themselves).
template <typename M>
RunPlan PlanRun(const M& model, const Dataset& train, const TrainConfig& config, int threads,
                std::size_t search_batch, bool& lr_searched) {
  static LocalCluster alone;  // stateless: shared by every caller
  return PlanRun(model, train, config, threads, alone, {.first = 0, .total = train.rows()},
                 search_batch, lr_searched);
}

// The Mode contract behind one virtual table: what the coordinator's loop (RunCoordinator)
// calls, each optional member answered by the mode's own or by the contract's default. The
// loop is compiled once, in coordinator.cc, instead of once for every mode and model (in
// 2026-12 it was half of each mode file's object code, for every model type); a call through
// the table costs nothing measurable: the loop calls a mode a few times a worker an epoch.
class CoordinatedMode {
 public:
  virtual ~CoordinatedMode() = default;
  virtual void Setup(int w) = 0;
  virtual void Epoch(int w, int epoch, std::uint64_t start, std::atomic<std::uint64_t>& steps) = 0;
  virtual std::uint64_t Position(int w) const = 0;
  virtual std::uint64_t EpochLength(int w) const = 0;
  virtual std::uint64_t Samples() const = 0;
  virtual void Snapshot(std::span<float> out) const = 0;
  virtual void LiveSnapshot(std::span<float> out) = 0;  // its own, or Snapshot where that is safe
  virtual std::uint64_t BytesSent() const = 0;
  virtual std::uint64_t BytesSentMax() const = 0;
  virtual bool HasEndEpoch() const = 0;
  virtual void EndEpoch() = 0;
  virtual std::optional<double> Consensus() const = 0;  // nullopt: a mode without replicas
  virtual std::optional<double> VirtualSeconds() const = 0;
  virtual std::optional<double> CompressRelError() = 0;
  virtual void AfterSetup() = 0;
  virtual void MeasureRounds(EvalPoint& p) = 0;
  virtual void Report(TrainResult& result) const = 0;
  virtual void Describe(TrainResult& result) const = 0;
  virtual bool HasState() const = 0;          // whether it has VisitState
  virtual bool StateInsideEpoch() const = 0;  // kStateInsideEpoch
  virtual void VisitState(StateVisitor& v) = 0;
  virtual bool OwnsMemory() const = 0;        // whether it has OwnedMemory
  virtual std::vector<std::span<const std::byte>> OwnedMemory(int w) const = 0;
  virtual std::optional<std::span<const std::byte>> SharedMemory() const = 0;
  // Its visiting order and epoch copies' bytes; nullopt: it reads through an index.
  virtual std::optional<std::pair<Shuffle, std::uint64_t>> Shuffling() const = 0;
};

// Mode (the contract at the top of this file) as a CoordinatedMode.
template <typename Mode>
class ModeCalls final : public CoordinatedMode {
 public:
  template <typename M>
  ModeCalls(const M& model, const RunPlan& plan, std::atomic<bool>& halt) : mode_(model, plan, halt) {}

  void Setup(int w) override { mode_.Setup(w); }
  void Epoch(int w, int epoch, std::uint64_t start, std::atomic<std::uint64_t>& steps) override {
    mode_.Epoch(w, epoch, start, steps);
  }
  std::uint64_t Position(int w) const override { return mode_.Position(w); }
  std::uint64_t EpochLength(int w) const override { return mode_.EpochLength(w); }
  std::uint64_t Samples() const override { return mode_.Samples(); }
  void Snapshot(std::span<float> out) const override { mode_.Snapshot(out); }
  void LiveSnapshot(std::span<float> out) override {
    if constexpr (requires(Mode& m) { m.LiveSnapshot(out); }) {
      mode_.LiveSnapshot(out);
    } else {
      static_assert(Mode::kSnapshotWhileRunning,
                    "a mode must offer LiveSnapshot or a Snapshot that is safe while it trains");
      mode_.Snapshot(out);
    }
  }
  std::uint64_t BytesSent() const override { return mode_.BytesSent(); }
  std::uint64_t BytesSentMax() const override { return mode_.BytesSentMax(); }
  bool HasEndEpoch() const override { return requires(Mode& m) { m.EndEpoch(); }; }
  void EndEpoch() override {
    if constexpr (requires(Mode& m) { m.EndEpoch(); }) mode_.EndEpoch();
  }
  std::optional<double> Consensus() const override {
    if constexpr (requires(Mode& m) { m.Consensus(); }) return mode_.Consensus();
    return std::nullopt;
  }
  std::optional<double> VirtualSeconds() const override {
    if constexpr (requires(Mode& m) { m.VirtualSeconds(); }) return mode_.VirtualSeconds();
    return std::nullopt;
  }
  std::optional<double> CompressRelError() override {
    if constexpr (requires(Mode& m) { m.CompressRelError(); }) return mode_.CompressRelError();
    return std::nullopt;
  }
  void AfterSetup() override {
    if constexpr (requires(Mode& m) { m.AfterSetup(); }) mode_.AfterSetup();
  }
  void MeasureRounds(EvalPoint& p) override {
    if constexpr (requires(Mode& m) { m.MeasureRounds(p); }) mode_.MeasureRounds(p);
  }
  void Report(TrainResult& result) const override {
    if constexpr (requires(Mode& m) { m.Report(result); }) mode_.Report(result);
  }
  void Describe(TrainResult& result) const override {
    if constexpr (requires(Mode& m) { m.Describe(result); }) mode_.Describe(result);
  }
  bool HasState() const override { return requires(Mode& m, StateVisitor& v) { m.VisitState(v); }; }
  bool StateInsideEpoch() const override {
    if constexpr (requires { Mode::kStateInsideEpoch; }) return Mode::kStateInsideEpoch;
    return false;
  }
  void VisitState(StateVisitor& v) override {
    if constexpr (requires(Mode& m) { m.VisitState(v); }) mode_.VisitState(v);
  }
  bool OwnsMemory() const override { return requires(Mode& m) { m.OwnedMemory(0); }; }
  std::vector<std::span<const std::byte>> OwnedMemory(int w) const override {
    if constexpr (requires(Mode& m) { m.OwnedMemory(w); }) return mode_.OwnedMemory(w);
    return {};
  }
  std::optional<std::span<const std::byte>> SharedMemory() const override {
    if constexpr (requires(Mode& m) { m.SharedMemory(); }) return mode_.SharedMemory();
    return std::nullopt;
  }
  std::optional<std::pair<Shuffle, std::uint64_t>> Shuffling() const override {
    if constexpr (requires(Mode& m) { m.Shuffling(); }) return mode_.Shuffling();
    return std::nullopt;
  }

 private:
  Mode mode_;
};

// What the loop needs of the model: its size and its evaluation, behind one virtual table.
class EvaluatedModel {
 public:
  virtual ~EvaluatedModel() = default;
  virtual std::size_t NumParams() const = 0;
  // EvaluateInto and EvaluateValidation of this model.
  virtual void Evaluate(std::span<const float> w, const Dataset& train, const Dataset* test,
                        Cluster& cluster, EvalPoint& p) const = 0;
  virtual void Validate(std::span<const float> w, const Dataset& validation, EvalPoint& p) const = 0;
};

template <Model M>
class ModelCalls final : public EvaluatedModel {
 public:
  explicit ModelCalls(const M& model) : model_(model) {}
  std::size_t NumParams() const override { return model_.NumParams(); }
  void Evaluate(std::span<const float> w, const Dataset& train, const Dataset* test,
                Cluster& cluster, EvalPoint& p) const override {
    EvaluateInto(model_, w, train, test, cluster, p);
  }
  void Validate(std::span<const float> w, const Dataset& validation, EvalPoint& p) const override {
    EvaluateValidation(model_, w, validation, p);
  }

 private:
  const M& model_;
};

// How the loop builds the run's mode, once it has resolved the plan's data copies (which read
// the first two fields): Mode's constructor, and what the contract says of it before one exists.
struct ModeMaker {
  bool shuffles = false;          // it has Shuffling(): it can re-lay its rows out
  bool epoch_in_windows = false;  // Mode::EpochInWindows(config)
  std::function<std::unique_ptr<CoordinatedMode>(const RunPlan& plan, std::atomic<bool>& halt)> make;
};

// The loop every mode runs under, for any mode and model (coordinator.cc).
TrainResult RunCoordinator(const EvaluatedModel& model, const ModeMaker& maker, const Dataset* test,
                           RunPlan plan, bool lr_searched, float l2, const TrainObserver& observer);

// Runs Mode, built from `model`, under the loop.
template <Model M, typename Mode>
TrainResult Coordinate(const M& model, const Dataset* test, RunPlan plan, bool lr_searched,
                       float l2, const TrainObserver& observer) {
  ModeMaker maker{.shuffles = requires(const Mode& m) { m.Shuffling(); },
                  .make = [&model](const RunPlan& p, std::atomic<bool>& halt) -> std::unique_ptr<CoordinatedMode> {
                    return std::make_unique<ModeCalls<Mode>>(model, p, halt);
                  }};
  if constexpr (requires { Mode::EpochInWindows(plan.config); }) {
    maker.epoch_in_windows = Mode::EpochInWindows(plan.config);
  }
  return RunCoordinator(ModelCalls<M>(model), maker, test, std::move(plan), lr_searched, l2, observer);
}

}  // namespace corral::internal
