// `corral train`: parse flags into a TrainConfig, load data, train, report.
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <stop_token>
#include <string>

#include <corral/corral.h>

#include "commands.h"
#include "progress.h"
#include "train_options.h"

namespace corral::cli {
namespace {

struct TrainCommand {
  TrainOptions options;
  std::string save;
  std::string resume;
  std::string init;
  std::string checkpoint_every;  // N (epochs) or Ns (seconds)
};

int RunTrain(TrainCommand& cmd) {
  TrainOptions& o = cmd.options;
  ResolveConfig(o);
  TrainConfig& config = o.config;
  config.resume_path = cmd.resume;
  config.init_path = cmd.init;
  config.checkpoint_path = cmd.save;
  ParseCheckpointEvery(cmd.checkpoint_every, config);
  // A bad destination fails now, not after the training it was meant to keep.
  CheckOutputPath("--save", cmd.save);
  CheckOutputPath("--metrics", config.metrics_path);
  InstallInterruptHandler();

  ProgressPrinter printer(stderr, o.quiet);
  const TrainData data = LoadTrainData(o);

  std::stop_source stop;
  TrainObserver observer;
  observer.stop = stop.get_token();
  observer.on_progress = [&](const Progress& p) {
    if (Interrupted()) stop.request_stop();
    printer.OnProgress(p);
  };
  observer.on_eval = [&](const EvalPoint& p) {
    if (Interrupted()) stop.request_stop();
    printer.OnEval(p, config.epochs);
    return true;
  };
  const TrainResult result = Train(data.train, data.test ? &*data.test : nullptr, config, observer);
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
  return [cmd] { return RunTrain(*cmd); };
}

}  // namespace corral::cli
