// `corral scale`: the same training at several thread counts, as a speedup table (and CSV,
// and a gnuplot PNG of speedup and objective against training time).
//
// Hardware efficiency is samples/s (speedup = samples/s over the first row's); statistical
// efficiency is what the samples buy: epochs and training time to --target-loss, and the final
// objective. A mode can win one and lose the other (HOGWILD! with many threads: more samples/s,
// sometimes more epochs), which is why the table shows both.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <stop_token>
#include <string>
#include <vector>

#include <corral/corral.h>

#include "commands.h"
#include "train_options.h"

namespace corral::cli {
namespace {

struct ScaleCommand {
  TrainOptions options;
  std::vector<int> threads = {1, 2};
  std::string csv;
  std::string plot;
};

struct Row {
  int threads = 0;
  TrainResult result;
};

// Replica modes: the gossip period of the run's last epoch (the chosen one with
// --gossip-every auto) and the share of wall time its rounds took; "-" for other modes.
std::string Period(const TrainResult& r) {
  const std::optional<std::uint64_t> k = r.history.back().gossip_every;
  return k ? std::to_string(*k) : "-";
}
std::optional<double> SharePercent(const TrainResult& r) {
  const std::optional<double> share = r.history.back().gossip_share;
  if (!share) return std::nullopt;
  return 100 * *share;
}

std::string Optional(const std::optional<double>& v, const char* format) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, format, *v);
  return buf;
}

void WriteCsv(const std::string& path, const std::vector<Row>& rows) {
  std::ofstream out(path);
  out << "threads,algo,samples_per_s,speedup,efficiency,epochs,epochs_to_target,time_to_target_s,"
         "objective,train_s,gossip_every,gossip_share\n";
  const double base = rows.front().result.samples_per_s;
  for (const Row& row : rows) {
    const TrainResult& r = row.result;
    const double speedup = base > 0 ? r.samples_per_s / base : 0;
    out << row.threads << ',' << ToString(r.algorithm) << ',' << r.samples_per_s << ',' << speedup << ','
        << speedup * rows.front().threads / row.threads << ',' << r.history.back().epoch << ','
        << (r.epochs_to_target ? std::to_string(*r.epochs_to_target) : "") << ','
        << (r.train_s_to_target ? std::to_string(*r.train_s_to_target) : "") << ','
        << r.history.back().objective << ',' << r.train_s << ','
        << (r.history.back().gossip_every ? std::to_string(*r.history.back().gossip_every) : "") << ','
        << (r.history.back().gossip_share ? std::to_string(*r.history.back().gossip_share) : "")
        << '\n';
  }
  if (!out) throw Error(ErrorCode::kIo, "cannot write " + path);
}

// Writes PATH.dat and PATH.gp beside the PNG and runs gnuplot when it is installed.
void Plot(const std::string& png, const std::vector<Row>& rows, bool quiet) {
  const std::string dat = png + ".dat", gp = png + ".gp";
  {
    std::ofstream out(dat);
    const double base = rows.front().result.samples_per_s;
    out << "# threads speedup\n";
    for (const Row& row : rows) out << row.threads << ' ' << row.result.samples_per_s / base << '\n';
    for (const Row& row : rows) {  // one block per thread count: training time, objective
      out << "\n\n# threads=" << row.threads << "\n";
      for (const EvalPoint& p : row.result.history) out << p.train_s << ' ' << p.objective << '\n';
    }
    if (!out) throw Error(ErrorCode::kIo, "cannot write " + dat);
  }
  {
    std::ofstream out(gp);
    out << "set terminal png size 1200,500\nset output '" << png << "'\n"
        << "set multiplot layout 1,2\n"
        << "set title 'speedup (samples/s)'\nset xlabel 'threads'\nset ylabel 'speedup'\n"
        << "set key top left\n"
        << "plot '" << dat << "' index 0 using 1:2 with linespoints title 'measured', "
        << "x * " << 1.0 / rows.front().threads << " with lines dashtype 2 title 'linear'\n"
        << "set title 'objective vs training time'\nset xlabel 'seconds'\nset ylabel 'objective'\n"
        << "set key top right\nplot ";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      out << (i ? ", " : "") << "'" << dat << "' index " << i + 1
          << " using 1:2 with linespoints title '" << rows[i].threads << " threads'";
    }
    out << "\nunset multiplot\n";
    if (!out) throw Error(ErrorCode::kIo, "cannot write " + gp);
  }
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    std::fprintf(stderr, "gnuplot is not installed (Debian: apt install gnuplot-nox); wrote %s and %s\n",
                 dat.c_str(), gp.c_str());
    return;
  }
  const std::string command = "gnuplot '" + gp + "'";
  if (std::system(command.c_str()) != 0) {
    throw Error(ErrorCode::kIo, "gnuplot failed on " + gp);
  }
  if (!quiet) std::fprintf(stderr, "wrote %s\n", png.c_str());
}

int RunScale(ScaleCommand& cmd) {
  TrainOptions& o = cmd.options;
  ResolveConfig(o);
  if (cmd.threads.empty()) throw Error(ErrorCode::kBadConfig, "--threads needs at least one count");
  for (const int t : cmd.threads) {
    if (t < 1) throw Error(ErrorCode::kBadConfig, "--threads counts must be >= 1");
  }
  CheckOutputPath("--csv", cmd.csv);
  CheckOutputPath("--plot", cmd.plot);
  CheckOutputPath("--metrics", o.config.metrics_path);
  InstallInterruptHandler();
  const TrainData data = LoadTrainData(o);

  std::stop_source stop;
  TrainObserver observer;
  observer.stop = stop.get_token();
  observer.on_progress = [&](const Progress&) {
    if (Interrupted()) stop.request_stop();
  };
  std::vector<Row> rows;
  for (const int t : cmd.threads) {
    TrainConfig config = o.config;
    config.threads = t;
    // --plot draws the objective at every epoch end.
    if (!cmd.plot.empty() && config.eval_every == kEvalAuto) config.eval_every = 1;
    if (!rows.empty()) config.lr = rows.front().result.lr;  // one step size for every row
    if (!o.quiet) std::fprintf(stderr, "training with %d thread%s...\n", t, t == 1 ? "" : "s");
    rows.push_back({t, Train(data.train, data.test ? &*data.test : nullptr, config, observer)});
    if (rows.back().result.stop_reason == StopReason::kCancelled) {
      std::fprintf(stderr, "interrupted\n");
      return 130;
    }
  }

  const double base = rows.front().result.samples_per_s;
  std::printf("%-8s %-10s %14s %8s %11s %8s %16s %15s %12s %12s %12s\n", "threads", "algo", "samples/s",
              "speedup", "efficiency", "epochs", "epochs_to_target", "time_to_target", "objective",
              "gossip_every", "gossip_share");
  for (const Row& row : rows) {
    const TrainResult& r = row.result;
    const double speedup = base > 0 ? r.samples_per_s / base : 0;
    const double efficiency = speedup * rows.front().threads / row.threads;
    std::printf("%-8d %-10s %14.0f %8.2f %11.2f %8d %16s %15s %12.6f %12s %12s\n", row.threads,
                std::string(ToString(r.algorithm)).c_str(), r.samples_per_s, speedup, efficiency, r.history.back().epoch,
                r.epochs_to_target ? std::to_string(*r.epochs_to_target).c_str() : "-",
                Optional(r.train_s_to_target, "%.2fs").c_str(), r.history.back().objective,
                Period(r).c_str(), Optional(SharePercent(r), "%.1f%%").c_str());
  }
  std::fflush(stdout);
  if (!cmd.csv.empty()) WriteCsv(cmd.csv, rows);
  if (!cmd.plot.empty()) Plot(cmd.plot, rows, o.quiet);
  return 0;
}

}  // namespace

Action AddScaleCommand(CLI::App& app) {
  auto cmd = std::make_shared<ScaleCommand>();
  CLI::App* sub = app.add_subcommand(
      "scale", "Train at several thread counts and print speedup (samples/s) and time to target");
  AddTrainOptions(sub, cmd->options);
  sub->remove_option(sub->get_option("--threads"));
  sub->add_option("--threads", cmd->threads, "Thread counts, e.g. 1,2,4,8 (the first is the baseline)")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("--csv", cmd->csv, "Write the table as CSV to this file");
  sub->add_option("--plot", cmd->plot,
                  "Draw speedup and objective vs time into this PNG (needs gnuplot)");
  return [cmd] { return RunScale(*cmd); };
}

}  // namespace corral::cli
