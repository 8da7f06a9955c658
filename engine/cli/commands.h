// The subcommands of the `corral` binary. Each registers its options on the app and returns
// the action to run once parsing succeeded.
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace corral::cli {

// An action returns the process exit status: 0 success, 1 training failed, 2 bad usage/input.
using Action = std::function<int()>;

// --format, the data format of --data (and --test): the names are the library's
// (ParseDataFormat), listed and checked from there; `help` is appended to the list.
CLI::Option* AddFormatOption(CLI::App* cmd, std::string& format, const std::string& help = "");

Action AddTrainCommand(CLI::App& app);
Action AddDataCommand(CLI::App& app);
Action AddEvalCommand(CLI::App& app);
Action AddPredictCommand(CLI::App& app);
Action AddScaleCommand(CLI::App& app);
Action AddTopologyCommand(CLI::App& app);

}  // namespace corral::cli
