// The coordinator loop every mode runs under (coordinator.h): compiled once, for every mode and
// model behind CoordinatedMode and EvaluatedModel.
#include "engine/src/runtime/coordinator.h"

#include <chrono>
#include <cstring>
#include <exception>

namespace corral::internal {
namespace {

// Every rank's part of a mode's state (`mine`: its workers by their index on the rank, the
// `threads` workers from `first` in the run) as the state of one process running them all:
// each rank's worker entries renumbered by their ids in the run (WorkerOf), in rank order, and
// the shared entries rank 0's. On every rank. Collective.
ModeState GatherModeState(Cluster& cluster, const ModeState& mine, std::size_t first,
                          std::size_t threads) {
  if (cluster.ranks() == 1) return mine;
  const ModeState own = WorkersOf(mine, 0, threads, first);
  std::vector<std::uint64_t> words;  // [kind, name bytes, name in words, count, values]
  const auto put_name = [&](std::uint64_t kind, const std::string& name) {
    words.push_back(kind);
    words.push_back(name.size());
    const std::size_t at = words.size();
    words.resize(at + (name.size() + 7) / 8, 0);
    std::memcpy(words.data() + at, name.data(), name.size());
  };
  for (const auto& [name, values] : own.arrays) {
    put_name(0, name);
    words.push_back(values.size());
    const std::size_t at = words.size();
    words.resize(at + (values.size() + 1) / 2, 0);
    std::memcpy(words.data() + at, values.data(), values.size() * sizeof(float));
  }
  for (const auto& [name, value] : own.counters) {
    put_name(1, name);
    words.push_back(value);
  }
  const std::uint64_t size = words.size();
  const std::vector<std::uint64_t> sizes = GatherAll(cluster, std::span<const std::uint64_t>(&size, 1));
  const std::uint64_t longest = *std::max_element(sizes.begin(), sizes.end());
  words.resize(longest, 0);
  const std::vector<std::uint64_t> all = GatherAll(cluster, std::span<const std::uint64_t>(words));
  ModeState merged;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    const std::uint64_t* at = all.data() + r * longest;
    const std::uint64_t* const end = at + sizes[r];
    while (at < end) {
      const std::uint64_t kind = *at++;
      std::string name(*at++, '\0');
      std::memcpy(name.data(), at, name.size());
      at += (name.size() + 7) / 8;
      if (kind == 1) {
        merged.counters.try_emplace(name, *at++);  // a shared counter: rank 0's
        continue;
      }
      std::vector<float> values(*at++);
      std::memcpy(values.data(), at, values.size() * sizeof(float));
      at += (values.size() + 1) / 2;
      merged.arrays.try_emplace(name, std::move(values));
    }
  }
  return merged;
}


// --early-stop: the best validation --metric so far, its epoch and its model. Loss and RMSE
// improve downwards, accuracy and AUC upwards; a tie is no improvement (the earlier, simpler
// model stays), nor is a NaN.
class BestEpoch {
 public:
  explicit BestEpoch(Metric metric) : metric_(metric) {}

  // Whether `p` improves on the best so far (it then becomes the best, with `params`).
  bool Offer(const EvalPoint& p, std::span<const float> params) {
    const std::optional<double> value = ValueOf(p);
    if (!value || std::isnan(*value)) return false;
    const bool higher_better = metric_ == Metric::kAccuracy || metric_ == Metric::kAuc;
    if (epoch_ > 0 && (higher_better ? *value <= best_ : *value >= best_)) return false;
    best_ = *value;
    epoch_ = p.epoch;
    params_.assign(params.begin(), params.end());
    return true;
  }
  int epoch() const { return epoch_; }  // 0: none yet
  double value() const { return best_; }
  std::vector<float>& params() { return params_; }

 private:
  std::optional<double> ValueOf(const EvalPoint& p) const {
    switch (metric_) {
      case Metric::kLoss:
        return p.validation_loss;
      case Metric::kAccuracy:
        return p.validation_acc;
      case Metric::kAuc:
        return p.validation_auc;
      case Metric::kRmse:
        return p.validation_rmse;
    }
    return std::nullopt;
  }

  Metric metric_;
  double best_ = 0;
  int epoch_ = 0;
  std::vector<float> params_;
};


// The visiting order the run used (the optional `Shuffling()` of the Mode contract: modes
// without it read their rows through an index).
Shuffle UsedShuffle(const CoordinatedMode& mode) {
  const auto shuffling = mode.Shuffling();
  return shuffling ? shuffling->first : Shuffle::kIndex;
}

// The visiting order the run used, as a setting and a summary line.
void DescribeShuffle(const CoordinatedMode& mode, const RunPlan& plan, TrainResult& r) {
  std::string why = plan.shuffle_note;
  r.shuffle = UsedShuffle(mode);
  if (const auto shuffling = mode.Shuffling()) {
    r.shuffle_copy_bytes = shuffling->second;
  } else if (plan.shuffle != Shuffle::kIndex) {
    why = "index: " + std::string(ToString(plan.config.algorithm)) +
          " reads its rows through the shuffled index (it does not re-lay them out)";
  }
  AddSetting(r, "shuffle", std::string(ToString(r.shuffle)));
  AddSetting(r, "shuffle_copy_bytes", static_cast<std::int64_t>(r.shuffle_copy_bytes));
  if (!plan.shuffle_reason.empty()) {  // as --algo auto's algo_requested and algo_reason
    AddSetting(r, "shuffle_requested", std::string("auto"));
    AddSetting(r, "shuffle_reason", plan.shuffle_reason);
  }
  if (why.empty() && r.shuffle == Shuffle::kEpoch) {
    why = "epoch: each worker's rows copied into the epoch's random order (" +
          FormatBytes(static_cast<double>(r.shuffle_copy_bytes)) + " in all)";
  } else if (why.empty()) {
    why = std::string(ToString(r.shuffle));
  }
  // --shuffle auto: the rule's choice after what happened to it ("index (auto: shard ...)").
  AddSummaryLine(r, "shuffle", plan.shuffle_reason.empty() ? why : why + " (auto: " + plan.shuffle_reason + ")");
  if (!plan.shards_note.empty()) AddSummaryLine(r, "shards", plan.shards_note);
  if (plan.config.memory_budget != 0) {
    AddSetting(r, "memory_budget", static_cast<std::int64_t>(plan.config.memory_budget));
  }
}

// Where the run's memory went (the optional `OwnedMemory(w)` and `SharedMemory()` of the Mode
// contract), as a setting and a summary line: `owned` says whether the mode has per-worker
// memory and `all_bound` whether every worker's was bound to its node; `interleaved`, set for
// a mode with a shared model, whether that was interleaved over the nodes in use.
void DescribeMemory(const PlacementReport& p, bool owned, bool all_bound,
                           std::optional<bool> interleaved, TrainResult& r) {
  std::string text;
  if (p.simulated) {
    text = "not placed: planned for a description of other hardware";
  } else if (!p.pinned) {
    text = "placement unknown: threads not pinned, memory wherever first touch and the OS put it";
  } else {
    const std::string nodes = IdRanges(p.worker_numa);
    if (owned) {
      text = all_bound ? "worker memory (shards, replicas) bound to the workers' NUMA nodes (" + nodes + ", hwloc)"
                       : "worker memory (shards, replicas) first-touched by the workers on nodes " + nodes +
                             " (hwloc memory binding refused)";
    }
    if (interleaved) {
      text += text.empty() ? "" : "; ";
      text += *interleaved ? "shared model interleaved over nodes " + nodes
                           : "shared model first-touched by the coordinator (interleaving refused)";
    }
  }
  AddSetting(r, "memory", text);
  AddSummaryLine(r, "memory", text);
}


// What happened on the ranks in one phase of a run (setup, an epoch), the worst first.
enum class RankOutcome : std::uint8_t { kOk, kHalted, kFailed };

}  // namespace

TrainResult RunCoordinator(const EvaluatedModel& model, const ModeMaker& maker, const Dataset* test,
                           RunPlan plan, bool lr_searched, float l2, const TrainObserver& observer) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  const TrainConfig& config = plan.config;
  const Dataset& train = plan.train;
  const int threads = plan.threads;
  // Across ranks the mode's workers have global ids (RunPlan): worker w of this rank is
  // first + w to the mode; Crew, Placement and the per-thread vectors here count locally.
  const int first = plan.first_worker;
  Cluster& cluster = *plan.cluster;
  const bool across = cluster.ranks() > 1;

  // One voice: rank 0 writes the metrics (and the caller prints and saves on rank 0 only).
  MetricsWriter metrics(cluster.rank() == 0 ? config.metrics_path : std::string());
  TrainResult result;
  result.algorithm = config.algorithm;
  result.algorithm_reason = plan.algorithm_reason;
  result.threads = plan.workers;
  result.l2 = l2;
  result.lr = plan.lr;
  result.lr_searched = lr_searched;

  // W: coordinator (time limit, cancellation) and a failing worker; R: workers once per step.
  // relaxed: it carries no data; a worker that sees it one step late does one more step, and
  // the epoch's end (Crew's semaphores) orders everything the workers wrote.
  std::atomic<bool> halt{false};
  // Before the mode: hogwild++'s groups and hierarchical topologies follow its cache domains.
  // Across ranks the launcher places the ranks (mpirun --map-by numa --bind-to numa) and the
  // workers inherit their rank's binding: pinned by this process's view of the whole machine,
  // the ranks sharing a machine would pin their workers onto the same cores.
  Placement placement(config.hardware, across ? Pin::kNone : config.pin, threads);
  plan.worker_domain = placement.report().worker_domain;
  DataCopies copies = ResolveDataCopies(
      config.shuffle, maker.shuffles, placement.report().numa_nodes_used > 1,
      DataBytes(train), config.memory_budget, static_cast<double>(MemoryLimitBytes()),
      placement.cache_share(), threads, maker.epoch_in_windows, DataBytes(train) / static_cast<double>(std::max<std::size_t>(train.rows(), 1)));
  plan.shuffle = copies.shuffle;
  plan.copy_shards = copies.copy_shards;
  plan.shuffle_note = std::move(copies.shuffle_note);
  plan.shuffle_reason = std::move(copies.auto_reason);
  plan.shards_note = std::move(copies.shards_note);
  plan.copy_bytes_left = copies.bytes_left;
  plan.window_bytes = copies.window_bytes;
  plan.live = observer.live != nullptr;
  const std::unique_ptr<CoordinatedMode> built = maker.make(plan, halt);
  CoordinatedMode& mode = *built;
  // hogwild's shared model: every worker writes all of it (Placement::Interleave).
  std::optional<bool> interleaved;
  if (const auto shared = mode.SharedMemory()) interleaved = placement.Interleave(*shared);
  for (int w = 0; w < threads; ++w) {
    const std::uint64_t at = plan.start[static_cast<std::size_t>(w)];
    if (at > mode.EpochLength(first + w)) {
      throw Error(ErrorCode::kBadInput,
                  config.resume_path + ": worker " + std::to_string(w) + " resumes at sample " +
                      std::to_string(at) + " of an epoch of " +
                      std::to_string(mode.EpochLength(first + w)) + " (a damaged checkpoint)");
    }
  }
  mode.Report(result);
  std::vector<float> snapshot(model.NumParams());
  const auto guarded = [&halt](auto&& f) {
    try {
      f();
    } catch (...) {
      halt.store(true, std::memory_order_relaxed);  // stop the other workers within a step
      throw;
    }
  };
  std::vector<std::uint64_t> epoch_start = plan.start;
  // Per worker, whether its own memory was bound to its node. W: worker w, once, in its setup;
  // R: the coordinator after Crew's constructor, whose semaphores order the writes before it.
  std::vector<char> bound(static_cast<std::size_t>(threads), 0);
  const bool owns_memory = mode.OwnsMemory();
  const auto setup = [&](int w) {
    guarded([&] {
      mode.Setup(first + w);
      if (owns_memory) bound[static_cast<std::size_t>(w)] = placement.BindLocal(w, mode.OwnedMemory(first + w));
    });
  };
  const auto epoch = [&](int w, int e, std::atomic<std::uint64_t>& steps) {
    guarded([&] { mode.Epoch(first + w, e, epoch_start[static_cast<std::size_t>(w)], steps); });
  };

  // A worker's failure, in its setup or an epoch, is the run's kWorkerFailed (an Error as is).
  const auto as_worker_failure = [](auto&& f) {
    try {
      f();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& failure) {
      throw Error(ErrorCode::kWorkerFailed, std::string("a worker failed: ") + failure.what());
    } catch (...) {
      throw Error(ErrorCode::kWorkerFailed, "a worker failed with an unknown exception");
    }
  };
  // Across ranks, every rank learns at the same point whether another one failed or halted
  // (a phase's outcome, agreed), so that all ranks leave the run together: a rank that threw
  // while the others wait in a collective would hang them, and the replica modes' transport
  // shuts down collectively. One process: the phase's own outcome.
  const auto agreed = [&](auto&& phase) {
    RankOutcome mine = RankOutcome::kOk;
    try {
      as_worker_failure(phase);
    } catch (...) {
      MaxAcross(cluster, RankOutcome::kFailed);  // one process: no collective
      throw;
    }
    if (halt.load(std::memory_order_relaxed)) mine = RankOutcome::kHalted;
    const RankOutcome all = MaxAcross(cluster, mine);
    if (all == RankOutcome::kFailed) {
      throw Error(ErrorCode::kWorkerFailed,
                  "rank " + std::to_string(cluster.rank()) +
                      " stopped: another rank failed (that rank reports its error)");
    }
    return all;
  };
  std::optional<Crew> crew;  // setups may run the model (replica modes calibrate on it)
  agreed([&] { crew.emplace(threads, placement, setup, epoch); });
  mode.AfterSetup();
  if (!plan.mode_state.empty()) {  // resumed with the mode's own state: continue it exactly
    if (mode.HasState()) {
      StateVisitor v = StateVisitor::Loading(plan.mode_state, config.resume_path);
      mode.VisitState(v);
      v.Finish();
    } else {
      throw Error(ErrorCode::kBadInput, config.resume_path + ": holds training state that " +
                                            std::string(ToString(config.algorithm)) +
                                            " does not keep (a damaged file)");
    }
  }
  result.placement = placement.report();
  if (crew->pinned_workers() < threads) result.placement.pinned = false;
  // Snapshots from other threads (LiveModel): a mode's LiveSnapshot when it has one (replica
  // modes: served by the workers), else its Snapshot, which for the shared-model modes reads
  // the shared model with relaxed atomic loads and so may run concurrently with the workers.
  LiveAttachment live(observer.live, model.NumParams(),
                      [&mode](std::span<float> out) { mode.LiveSnapshot(out); });

  // The training state as of now (workers parked): where every worker stands and, at an epoch
  // boundary, the mode's own state (VisitState). A replica mode stopped inside an epoch has
  // no consistent state to save (its workers sit at different rounds): it resumes from the
  // epoch's start (Position reports 0), from the replicas' mean. A shared-model mode
  // (kStateInsideEpoch) saves its state inside an epoch too: its optimizer's accumulators and
  // velocities are where the workers stopped, like the model.
  const auto capture_state = [&](TrainingState& state, double train_s_so_far) {
    state.algorithm = config.algorithm;
    state.threads = plan.workers;
    state.seed = config.seed;
    state.lr = plan.lr;
    state.lr_decay = config.lr_decay;
    state.batch = config.batch;
    state.topology = CheckpointTopology(config);
    state.compress = ResolvedCompress(config);
    state.optimizer = config.optimizer;
    state.train_s = train_s_so_far;
    state.samples = SumAcross(cluster, mode.Samples());
    state.order = VisitingOrder(UsedShuffle(mode));
    state.mode = {};
    // Across ranks each rank visits its own workers, and every rank gathers all of them
    // (GatherModeState: the file one process writes; rank 0 writes it).
    if (mode.HasState() && (state.position.empty() || mode.StateInsideEpoch())) {
      StateVisitor v = StateVisitor::Saving(state.mode);
      mode.VisitState(v);
      if (across) {
        state.mode = GatherModeState(cluster, state.mode, static_cast<std::size_t>(first),
                                     static_cast<std::size_t>(threads));
      }
    }
  };
  // --checkpoint-every: the state written while training, at epoch ends.
  const bool checkpoints = !config.checkpoint_path.empty() &&
                           (config.checkpoint_every > 0 || config.checkpoint_every_s > 0);
  auto last_checkpoint = Clock::now();
  const auto checkpoint_due = [&](int epochs_done) {
    if (!checkpoints) return false;
    if (config.checkpoint_every > 0 && (epochs_done - plan.first_epoch) % config.checkpoint_every == 0) {
      return true;
    }
    // Each rank's clock: one rank's "due" makes it due on all (the state is gathered).
    return AnyAcross(cluster, config.checkpoint_every_s > 0 &&
                                  seconds_since(last_checkpoint) >= config.checkpoint_every_s);
  };

  double train_s = 0;
  std::string divergence;  // why the run diverged; empty while it has not
  // --eval-every: epochs between evaluation points (0: after the last epoch only). Auto
  // evaluates every epoch when something watches the epoch ends; evaluating the objective costs
  // a pass over the training set, on a small set a share of the run like the epochs' own.
  int eval_every = config.eval_every;
  if (eval_every == kEvalAuto) {
    const bool watched = test != nullptr || plan.validation != nullptr || config.target_loss ||
                         !config.metrics_path.empty() || observer.on_eval != nullptr;
    eval_every = AnyAcross(cluster, watched) ? 1 : 0;
  }
  // The epoch that ended last when it was not evaluated (evaluated after the loop).
  std::optional<EvalPoint> unevaluated;
  BestEpoch best(config.metric);
  mode.Snapshot(snapshot);  // the result, should no epoch run (a finished run resumed)
  EvalPoint start_point;
  model.Evaluate(std::span<const float>(snapshot), train, nullptr, cluster, start_point);
  const DivergenceGuard guard(start_point.objective);
  result.state.epochs_done = plan.first_epoch;
  // Where every worker of the run stands: each rank's, gathered in worker order; none when all
  // stand at the epoch's start (a boundary: a run stopped before its first epoch, or a finished
  // run resumed, saves the mode's state it holds, as one stopped after an epoch does).
  result.state.position = GatherAll(cluster, std::span<const std::uint64_t>(plan.start));
  if (std::all_of(result.state.position.begin(), result.state.position.end(),
                  [](std::uint64_t at) { return at == 0; })) {
    result.state.position.clear();
  }
  // An epoch's evaluation point `p` (its other fields set) of the model in `snapshot`: the
  // objective and the test and validation measures, the divergence check, the metrics line.
  const auto evaluate_point = [&](EvalPoint& p) {
    model.Evaluate(std::span<const float>(snapshot), train, test, cluster, p);
    if (plan.validation != nullptr) {
      model.Validate(std::span<const float>(snapshot), *plan.validation, p);
    }
    p.wall_s = seconds_since(start);
    divergence = guard.Check(result.history, p);
    p.diverged = !divergence.empty();
    metrics.Write(p);
    result.history.push_back(p);
  };
  for (int e = plan.first_epoch; e < config.epochs; ++e) {
    // Stop before the epoch: cancelled, or out of time (each rank's clock; across ranks one
    // rank's reason stops all, so that no rank starts an epoch the others will not run).
    StopReason before = StopReason::kEpochs;
    if (observer.stop.stop_requested()) {
      before = StopReason::kCancelled;
    } else if (config.time_limit_s > 0 && train_s >= config.time_limit_s) {
      before = StopReason::kTimeLimit;
    }
    before = MaxAcross(cluster, before);
    if (before != StopReason::kEpochs) {
      result.stop_reason = before;
      break;
    }
    const auto epoch_began = Clock::now();
    // Progress counts this rank's samples (Crew's), evaluation points all ranks'.
    const std::uint64_t samples_before = mode.Samples();
    const std::uint64_t all_before = SumAcross(cluster, samples_before);
    std::uint64_t epoch_samples = 0;
    for (int w = 0; w < threads; ++w) epoch_samples += mode.EpochLength(first + w);
    const auto tick = [&](std::uint64_t steps) {
      const double elapsed = seconds_since(epoch_began);
      if (observer.stop.stop_requested() && !halt.load(std::memory_order_relaxed)) {
        result.stop_reason = StopReason::kCancelled;
        halt.store(true, std::memory_order_relaxed);
      }
      if (config.time_limit_s > 0 && train_s + elapsed >= config.time_limit_s &&
          !halt.load(std::memory_order_relaxed)) {
        result.stop_reason = StopReason::kTimeLimit;
        halt.store(true, std::memory_order_relaxed);
      }
      if (!observer.on_progress) return;
      // Ranks step alike in the modes that run across them: rank 0's rate times the ranks.
      const auto done = static_cast<double>(steps - samples_before) * cluster.ranks();
      observer.on_progress({.epoch = e + 1,
                            .epochs = config.epochs,
                            .epoch_fraction = std::min(1.0, done / static_cast<double>(epoch_samples)),
                            .step = all_before + (steps - samples_before) * static_cast<std::uint64_t>(cluster.ranks()),
                            .wall_s = seconds_since(start),
                            .samples_per_s = elapsed > 0 ? done / elapsed : 0});
    };
    const RankOutcome outcome =
        agreed([&] { crew->RunEpoch(e, tick, config.time_limit_s > 0 ? 20 : 100); });
    if (outcome == RankOutcome::kHalted) {  // the reason of the rank that halted
      result.stop_reason = MaxAcross(cluster, result.stop_reason);
    }
    const double epoch_s = seconds_since(epoch_began);
    train_s += epoch_s;
    if (mode.HasEndEpoch()) {
      const auto exclusive = live.Exclusive();  // EndEpoch may rewrite the shared model
      mode.EndEpoch();
    }

    bool complete = true;
    for (int w = 0; w < threads; ++w) complete = complete && mode.Position(first + w) >= mode.EpochLength(first + w);
    complete = !AnyAcross(cluster, !complete);
    result.state.epochs_done = complete ? e + 1 : e;
    result.state.position.clear();
    if (!complete) {
      std::vector<std::uint64_t> mine;
      for (int w = 0; w < threads; ++w) mine.push_back(mode.Position(first + w));
      result.state.position = GatherAll(cluster, std::span<const std::uint64_t>(mine));
    }
    std::fill(epoch_start.begin(), epoch_start.end(), 0);

    EvalPoint p;
    p.epoch = e + 1;
    p.step = SumAcross(cluster, mode.Samples());
    p.train_s = train_s;
    p.lr = plan.EpochLr(e);
    p.samples_per_s = static_cast<double>(p.step - all_before) / epoch_s;
    p.bytes_sent = SumAcross(cluster, mode.BytesSent());
    p.bytes_sent_max = MaxAcross(cluster, mode.BytesSentMax());
    mode.Snapshot(snapshot);  // workers are parked: this is a consistent copy
    p.virtual_s = train_s;
    // nullopt on every rank or none
    if (const std::optional<double> modelled = mode.VirtualSeconds()) p.virtual_s = MaxAcross(cluster, *modelled);
    p.consensus = mode.Consensus();
    p.compress_rel_error = mode.CompressRelError();
    mode.MeasureRounds(p);
    // Not due, it is skipped unless the model holds a NaN or Inf (caught at the epoch it
    // happens; a loss that overflows while the model stays finite waits for the next
    // evaluation). The last epoch is always evaluated, after the loop if not here, whatever
    // stopped the run.
    const bool due = (eval_every > 0 && p.epoch % eval_every == 0) || p.epoch == config.epochs ||
                     AnyAcross(cluster, !std::all_of(snapshot.begin(), snapshot.end(),
                                                     [](float v) { return std::isfinite(v); }));
    unevaluated.reset();
    if (!due) unevaluated = p;
    if (due) {
      evaluate_point(p);
      if (p.diverged) break;
    }
    if (checkpoint_due(e + 1) && result.state.position.empty()) {
      // Atomic (model_file.h): a crash while writing leaves the previous checkpoint.
      capture_state(result.state, train_s);
      // Rank 0 writes (every rank holds the gathered state); the ranks agree on the outcome,
      // so none goes on into the next epoch when rank 0 could not write.
      std::exception_ptr failed;
      if (cluster.rank() == 0) {
        try {
          SaveModel(config.checkpoint_path, {.info = plan.info, .params = snapshot, .training = result.state});
        } catch (...) {
          failed = std::current_exception();
        }
      }
      if (AnyAcross(cluster, failed != nullptr)) {
        if (failed) std::rethrow_exception(failed);
        throw Error(ErrorCode::kIo, "rank " + std::to_string(cluster.rank()) +
                                        " stopped: rank 0 could not write the checkpoint " +
                                        config.checkpoint_path);
      }
      last_checkpoint = Clock::now();
    }
    if (!due) {
      if (outcome == RankOutcome::kHalted) break;  // time limit or cancellation (on any rank)
      continue;
    }
    if (config.early_stop > 0 && !best.Offer(p, snapshot) &&
        p.epoch - best.epoch() >= config.early_stop) {
      result.stop_reason = StopReason::kEarlyStop;
      break;
    }
    if (config.target_loss && p.objective <= *config.target_loss && !result.epochs_to_target) {
      result.epochs_to_target = p.epoch;
      result.train_s_to_target = train_s;
      result.stop_reason = StopReason::kTarget;
      break;
    }
    if (outcome == RankOutcome::kHalted) break;  // time limit or cancellation (on any rank)
    if (AnyAcross(cluster, observer.on_eval && !observer.on_eval(p))) {
      result.stop_reason = StopReason::kObserver;
      break;
    }
  }

  if (unevaluated) evaluate_point(*unevaluated);  // `snapshot` still holds its model

  result.samples = SumAcross(cluster, mode.Samples());
  result.train_s = train_s;
  result.wall_s = seconds_since(start);
  result.samples_per_s = train_s > 0 ? static_cast<double>(result.samples) / train_s : 0;
  result.peak_rss_mb = PeakRssMb();
  result.bytes_sent = SumAcross(cluster, mode.BytesSent());
  result.bytes_sent_max = MaxAcross(cluster, mode.BytesSentMax());
  if (!divergence.empty()) {
    throw Error(ErrorCode::kDiverged,
                "training diverged at epoch " + std::to_string(result.history.back().epoch) +
                    ": " + divergence + "; try a smaller --lr (this run started at " +
                    Number(result.lr) + ")");
  }
  capture_state(result.state, train_s);
  result.params = std::move(snapshot);
  if (config.early_stop > 0 && best.epoch() > 0) {
    // The best epoch's model is the result; the state stays where training stopped.
    result.best_epoch = best.epoch();
    result.params = std::move(best.params());
    AddSummaryLine(result, "early stop",
                   "best epoch " + std::to_string(best.epoch()) + " (validation " +
                       std::string(ToString(config.metric)) + " " + Number(best.value()) +
                       "), its model returned; " +
                       (result.stop_reason == StopReason::kEarlyStop
                            ? "stopped after " + std::to_string(config.early_stop) +
                                  " epochs without improvement"
                            : "no stop"));
    AddSetting(result, "best_epoch", static_cast<std::int64_t>(best.epoch()));
  }
  live.Finish(result.params);
  mode.Describe(result);
  DescribeShuffle(mode, plan, result);
  DescribeMemory(result.placement, owns_memory,
                 std::all_of(bound.begin(), bound.end(), [](char b) { return b != 0; }), interleaved, result);
  metrics.WriteSummary(config, result);
  if (!metrics.failure().empty()) result.warnings.push_back(metrics.failure());
  return result;
}

}  // namespace corral::internal
