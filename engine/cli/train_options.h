// The options `corral train` and `corral scale` share: data, model, algorithm and schedule,
// parsed into a TrainConfig, and the data they load.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include <corral/corral.h>

namespace corral::cli {

struct TrainOptions {
  std::string data;
  std::string test;
  std::string weights;        // --weights FILE: one weight per training row
  std::string weight_column;  // --weight-column: a CSV column holding the weights
  std::string format = "auto";
  std::size_t features = 0;
  std::string algo = "auto";
  std::string model = "logistic";
  std::string pin = "compact";
  std::string shuffle = "auto";
  std::string rounding = "stochastic";
  std::string mix_order = "mix-then-step";
  std::string allreduce = "gather";
  std::string gamma;  // choco: a number, "theory", or empty (the default)
  std::string schedule = "free";  // free or seeded:TAU
  std::string memory_budget;      // a size (512M, 4G), or empty: none
  std::string metric = "loss";
  std::string eval_every = "auto";  // a number of epochs or auto
  std::string class_weight = "none";  // none, balanced or LABEL:W,...
  std::string optimizer = "sgd";
  std::string lr_schedule = "exp";
  std::optional<float> l2;
  bool quiet = false;
  TrainConfig config;
};

// Registers the shared options on `cmd`; `o` must outlive parsing.
void AddTrainOptions(CLI::App* cmd, TrainOptions& o);

// Turns the parsed spellings into o.config and validates it (throws corral::Error).
void ResolveConfig(TrainOptions& o);

struct TrainData {
  Dataset train;
  std::optional<Dataset> test;
  // Across ranks, when this rank read only its rows: which rows of the whole set `train`
  // holds (`test` is then this rank's part of the test set too). Empty: the whole sets.
  std::optional<RankPart> part;
};

// --data and --test (with --weights or --weight-column's weights), or the built-in synthetic
// set when --data is absent. Prints a one-line description unless quiet.
TrainData LoadTrainData(const TrainOptions& o);
// How --data and --test are read: --format, --features, --weight-column.
LoadOptions DataLoadOptions(const TrainOptions& o);
// `train` with --weights' weights for its rows [first, first + train.rows()) of `total`.
Dataset WithWeightsFile(const TrainOptions& o, const Dataset& train, std::size_t first, std::size_t total);

// Ctrl-C: the first SIGINT asks the run to stop (the handler only sets a flag); a second one
// kills the process as usual.
void InstallInterruptHandler();
bool Interrupted();

}  // namespace corral::cli
