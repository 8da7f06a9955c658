// `corral train`: parse flags into a TrainConfig, load data, train, report.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include <corral/corral.h>

#include "commands.h"
#include "progress.h"
#include "train_options.h"

#if CORRAL_HAVE_MPI
#include "engine/src/cluster/collectives.h"
#include "engine/src/cluster/mpi_cluster.h"
#include "engine/src/cluster/rank_data.h"
#endif

namespace corral::cli {
namespace {

// The ranks a launcher started this process among (Open MPI's mpirun, MPICH's Hydra, PMIx);
// 1 when none did.
int LaunchedRanks() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    if (const char* value = std::getenv(name); value != nullptr) return std::max(1, std::atoi(value));
  }
  return 1;
}

struct TrainCommand {
  TrainOptions options;
  std::string save;
  std::string resume;
  std::string init;
  std::string checkpoint_every;  // N (epochs) or Ns (seconds)
};

// Resolves the flags (into cmd.options.config). `voice`: this process prints and writes (rank 0).
void Resolve(TrainCommand& cmd, bool voice) {
  TrainOptions& o = cmd.options;
  if (!voice) o.quiet = true;
  ResolveConfig(o);
  TrainConfig& config = o.config;
  config.resume_path = cmd.resume;
  config.init_path = cmd.init;
  config.checkpoint_path = cmd.save;
  ParseCheckpointEvery(cmd.checkpoint_every, config);
  // A bad destination fails now, not after the training it was meant to keep.
  if (voice) {
    CheckOutputPath("--save", cmd.save);
    CheckOutputPath("--metrics", config.metrics_path);
  }
}

// Trains and reports. `cluster`: the ranks of an mpirun (null: this process alone); rank 0 alone
// prints, writes the metrics and saves.
int RunTrain(TrainCommand& cmd, const TrainData& data, Cluster* cluster) {
  const TrainOptions& o = cmd.options;
  const TrainConfig& config = o.config;
  InstallInterruptHandler();
  ProgressPrinter printer(stderr, o.quiet);

  std::stop_source stop;
  TrainObserver observer;
  observer.stop = stop.get_token();
  observer.on_progress = [&](const Progress& p) {
    if (Interrupted()) stop.request_stop();
    printer.OnProgress(p);
  };
  if (!o.quiet) {  // --quiet prints no epoch: --eval-every auto then evaluates the last only
    observer.on_eval = [&](const EvalPoint& p) {
      if (Interrupted()) stop.request_stop();
      printer.OnEval(p, config.epochs);
      return true;
    };
  }
  const Dataset* test = data.test ? &*data.test : nullptr;
  const TrainResult result =
      cluster == nullptr ? Train(data.train, test, config, observer)
      : data.part        ? Train(data.train, *data.part, test, config, observer, *cluster)
                         : Train(data.train, test, config, observer, *cluster);
  if (cluster != nullptr && cluster->rank() != 0) return 0;
  printer.Summary(config, result);
  for (const std::string& warning : result.warnings) {
    std::fprintf(stderr, "warning: %s\n", warning.c_str());
  }
  const bool interrupted = result.stop_reason == StopReason::kCancelled;
  if (!cmd.save.empty()) {
    SaveModel(cmd.save, ToSavedModel(result));
    if (!o.quiet || interrupted) {
      std::fprintf(stderr, "saved the model to %s (%d of %d epochs done%s)\n", cmd.save.c_str(),
                   result.state.epochs_done, config.epochs,
                   result.state.epochs_done < config.epochs ? "; continue with --resume" : "");
    }
  }
  if (interrupted) {
    std::fprintf(stderr, "interrupted: stopped cleanly%s\n",
                 cmd.save.empty() ? " (no --save given: the model was not written)" : "");
    return 130;  // the shell's status for a SIGINT
  }
  return 0;
}

#if CORRAL_HAVE_MPI
// The exit status of an error: 2 bad usage or input, 1 a failed run (main.cc's rule).
int StatusOf(const std::exception& e) {
  const auto* error = dynamic_cast<const Error*>(&e);
  return error != nullptr && error->IsUsageError() ? 2 : 1;
}

// The data of one rank: its own rows of --data and its part of --test where their format is
// read by range (LIBSVM text, the binary cache: rank_data.h), else the whole files
// (LoadTrainData). Collective; throws on every rank when any rank fails.
TrainData LoadRankData(const TrainOptions& o, Cluster& cluster) {
  if (o.data.empty()) return LoadTrainData(o);
  const LoadOptions load = DataLoadOptions(o);
  std::optional<internal::RankRows> train = internal::LoadRankRows(o.data, load, cluster);
  if (!train) return LoadTrainData(o);
  TrainData d{.train = WithWeightsFile(o, train->mine, train->part.first, train->part.total),
              .test = std::nullopt,
              .part = train->part};
  if (!o.test.empty()) {
    LoadOptions test_load = load;
    test_load.num_features = d.train.num_features();  // the whole set's (the ranks agreed)
    std::optional<internal::RankRows> test = internal::LoadRankRows(o.test, test_load, cluster);
    if (test) {
      d.test = std::move(test->mine);
    } else {
      // A test file read whole: this rank keeps its part (Train sums the parts' evaluations).
      const Dataset all = LoadDataset(o.test, test_load);
      const RankPart t = RankPartOf(all.rows(), cluster.rank(), cluster.ranks());
      d.test = all.Rows(t.first, t.first + t.count);
    }
  }
  if (!o.quiet) {
    std::fprintf(stderr,
                 "data: %s: %zu rows, %zu features; each rank reads its own rows (rank 0: %zu "
                 "rows, %zu non-zeros)",
                 d.train.name().c_str(), d.part->total, d.train.num_features(), d.train.rows(),
                 d.train.nnz());
    if (d.test) {
      std::fprintf(stderr, "; test %s (rank 0: %zu rows)", d.test->name().c_str(), d.test->rows());
    }
    std::fprintf(stderr, "\n");
  }
  return d;
}

// `corral train` as one rank of an mpirun. Each rank's error is printed with its rank. The
// ranks agree once the data is loaded (a file missing on one rank stops all of them cleanly,
// with that rank's status) and again at the end (AgreeOnExit: no rank hangs when another
// failed inside the run).
int RunAcrossRanks(TrainCommand& cmd) {
  const std::unique_ptr<Cluster> cluster = internal::MakeMpiCluster(nullptr, nullptr);
  const auto report = [&](const std::exception& e) {
    std::fprintf(stderr, "corral: error: rank %d: %s\n", cluster->rank(), e.what());
    return StatusOf(e);
  };
  std::optional<TrainData> data;
  int status = 0;
  try {
    Resolve(cmd, cluster->rank() == 0);
  } catch (const std::exception& e) {
    status = report(e);
  }
  if (const int all = internal::MaxAcross(*cluster, status); all != 0) return all;
  try {
    data.emplace(LoadRankData(cmd.options, *cluster));  // throws on every rank alike
  } catch (const std::exception& e) {
    status = report(e);
  }
  if (const int all = internal::MaxAcross(*cluster, status); all != 0) return all;
  try {
    status = RunTrain(cmd, *data, cluster.get());
  } catch (const std::exception& e) {
    status = report(e);
  }
  return internal::AgreeOnExit(*cluster, status);
}
#endif

// `corral train`: in this process, or as one rank of an mpirun (R > 1 ranks).
int RunTrainCommand(TrainCommand& cmd) {
  if (const int ranks = LaunchedRanks(); ranks > 1) {
#if CORRAL_HAVE_MPI
    return RunAcrossRanks(cmd);
#else
    throw Error(ErrorCode::kBadConfig,
                "this process is one of " + std::to_string(ranks) +
                    " ranks (mpirun), but this corral was built without MPI (CORRAL_MPI off): "
                    "install libopenmpi-dev openmpi-bin and rebuild, or run one process");
#endif
  }
  Resolve(cmd, true);
  const TrainData data = LoadTrainData(cmd.options);
  return RunTrain(cmd, data, nullptr);
}

}  // namespace

Action AddTrainCommand(CLI::App& app) {
  auto cmd = std::make_shared<TrainCommand>();
  CLI::App* sub = app.add_subcommand("train", "Train a model (no --data: a built-in synthetic set)");
  AddTrainOptions(sub, cmd->options);
  sub->add_option("--save", cmd->save,
                  "Write the model and its training state to this file (corral eval reads it; "
                  "--resume continues it); also written on Ctrl-C");
  sub->add_option("--resume", cmd->resume,
                  "Continue the run saved in this file (by --save) up to --epochs in total");
  sub->add_option("--checkpoint-every", cmd->checkpoint_every,
                  "Also write --save while training: every N epochs (e.g. 5) or at the first epoch "
                  "end N seconds after the last write (e.g. 600s); each write is atomic, the "
                  "previous file stays until the new one is complete");
  sub->add_option("--init", cmd->init,
                  "Start from the parameters of this model file (a --save of the same model kind "
                  "and size; its training state is ignored): a fresh run from epoch 1, e.g. on "
                  "new data");
  return [cmd] { return RunTrainCommand(*cmd); };
}

}  // namespace corral::cli
