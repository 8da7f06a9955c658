// corral: lock-free asynchronous and decentralized SGD. See README.md.
#include <cstdio>

#include <corral/error.h>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"corral: lock-free asynchronous and decentralized SGD on one many-core machine"};
  app.require_subcommand(1);
  const corral::cli::Action train = corral::cli::AddTrainCommand(app);
  const corral::cli::Action data = corral::cli::AddDataCommand(app);
  const corral::cli::Action eval = corral::cli::AddEvalCommand(app);
  const corral::cli::Action predict = corral::cli::AddPredictCommand(app);
  const corral::cli::Action scale = corral::cli::AddScaleCommand(app);
  const corral::cli::Action topology = corral::cli::AddTopologyCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    if (app.got_subcommand("train")) return train();
    if (app.got_subcommand("data")) return data();
    if (app.got_subcommand("eval")) return eval();
    if (app.got_subcommand("predict")) return predict();
    if (app.got_subcommand("scale")) return scale();
    if (app.got_subcommand("topology")) return topology();
  } catch (const corral::Error& e) {
    std::fprintf(stderr, "corral: error: %s\n", e.what());
    return e.IsUsageError() ? 2 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "corral: error: %s\n", e.what());
    return 1;
  }
  return 2;
}
