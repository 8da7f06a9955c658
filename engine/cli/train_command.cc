// `corral train`: parse flags into a TrainConfig, load data, train, report.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <corral/corral.h>
#include <corral/load.h>

#include "commands.h"
#include "progress.h"

namespace corral::cli {
namespace {

struct TrainOptions {
  std::string data;
  std::string test;
  std::string format = "auto";
  std::size_t features = 0;
  std::string algo = "hogwild";
  std::string model = "logistic";
  std::string pin = "compact";
  std::optional<float> l2;
  bool quiet = false;
  std::string save;
  TrainConfig config;
};

// With no --data: the built-in synthetic sparse set, so a fresh install does something real.
SyntheticSplit DefaultData() {
  return MakeSyntheticClassification(SyntheticSpec{}, /*test_rows=*/20'000);
}

int RunTrain(TrainOptions& o) {
  TrainConfig& config = o.config;
  config.algorithm = ParseAlgorithm(o.algo);
  config.model = ParseModel(o.model);
  config.pin = ParsePin(o.pin);
  config.l2 = o.l2;
  config.Validate();

  ProgressPrinter printer(stderr, o.quiet);
  Dataset train;
  std::optional<Dataset> test;
  if (o.data.empty()) {
    if (!o.quiet) std::fprintf(stderr, "no --data: training on the built-in synthetic set\n");
    SyntheticSplit split = DefaultData();
    train = std::move(split.train);
    test = std::move(split.test);
  } else {
    // Parsing uses every core (threads = 0): it ends before training starts.
    const LoadOptions load{.format = ParseDataFormat(o.format), .num_features = o.features};
    train = LoadDataset(o.data, load);
    if (!o.test.empty()) {
      LoadOptions test_load = load;
      // A ratings test set keeps the train set's ids; a test file may never reach the train
      // file's highest index, so it takes the train set's dimension.
      test_load.ratings_mapping = train.ratings_shared();
      if (train.ratings() == nullptr) test_load.num_features = train.num_features();
      test = LoadDataset(o.test, test_load);
    }
  }
  if (!o.quiet) {
    std::fprintf(stderr, "data: %s: %zu rows, %zu features, %zu non-zeros", train.name().c_str(),
                 train.rows(), train.num_features(), train.nnz());
    if (test) std::fprintf(stderr, "; test %s: %zu rows", test->name().c_str(), test->rows());
    std::fprintf(stderr, "\n");
  }

  TrainObserver observer;
  observer.on_progress = [&](const Progress& p) { printer.OnProgress(p); };
  observer.on_eval = [&](const EvalPoint& p) {
    printer.OnEval(p, config.epochs);
    return true;
  };
  const TrainResult result = Train(train, test ? &*test : nullptr, config, observer);
  printer.Summary(config, result);
  if (!o.save.empty()) {
    SaveModel(o.save, {result.model, result.params});
    if (!o.quiet) std::fprintf(stderr, "saved the model to %s\n", o.save.c_str());
  }
  return 0;
}

}  // namespace

Action AddTrainCommand(CLI::App& app) {
  auto o = std::make_shared<TrainOptions>();
  TrainConfig& c = o->config;
  CLI::App* cmd = app.add_subcommand("train", "Train a model (no --data: a built-in synthetic set)");
  cmd->add_option("--data", o->data, "Training data file (LIBSVM)");
  cmd->add_option("--test", o->test, "Test data file, evaluated at every epoch end");
  cmd->add_option("--format", o->format,
                  "Data format: auto, libsvm, idx, ratings, csv, cache (auto: by magic number, "
                  "extension and content)")
      ->check(CLI::IsMember({"auto", "libsvm", "idx", "ratings", "csv", "cache"}))
      ->capture_default_str();
  cmd->add_option("--features", o->features,
                  "Feature dimension (default: the largest index in the training file)");
  cmd->add_option("--model", o->model, "Model: logistic, hinge, squared, softmax, mf, mlp")->capture_default_str();
  cmd->add_option("--l2", o->l2,
                  "L2 strength: objective = mean loss + (l2/2)|w|^2 (default 1/rows, "
                  "LIBLINEAR's C=1)");
  cmd->add_option("--algo", o->algo, "Algorithm: hogwild")->capture_default_str();
  cmd->add_option("--threads", c.threads, "Worker threads (0 = all hardware threads)")
      ->capture_default_str();
  cmd->add_option("--epochs", c.epochs, "Passes over the training data")->capture_default_str();
  cmd->add_option("--batch", c.batch, "Samples per gradient step")->capture_default_str();
  cmd->add_option("--hidden", c.hidden, "Hidden layer widths of mlp, e.g. 256,128")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--rank", c.rank, "Factor rank of mf")->capture_default_str();
  cmd->add_flag_callback(
      "--no-bias", [&c] { c.bias = false; },
      "Keep softmax's per-class and mf's per-user/item biases at 0 (LIBLINEAR's default)");
  cmd->add_option("--lr", c.lr, "Initial step size (0 = search on a sample)")
      ->capture_default_str();
  cmd->add_option("--lr-decay", c.lr_decay, "Step size multiplier after each epoch")
      ->capture_default_str();
  cmd->add_option("--seed", c.seed, "Random seed")->capture_default_str();
  cmd->add_option("--pin", o->pin, "Thread placement: compact, scatter, none")
      ->capture_default_str();
  cmd->add_option("--metrics", c.metrics_path, "Write JSON lines metrics to this file");
  cmd->add_option("--save", o->save, "Write the trained model to this file (see corral eval)");
  cmd->add_flag("--quiet", o->quiet, "Print only errors");
  return [o] { return RunTrain(*o); };
}

}  // namespace corral::cli
