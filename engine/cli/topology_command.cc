// `corral topology`: a topology's degrees, weights check, spectral gap and beta (DESIGN.md §4).
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include <corral/topology.h>

#include "commands.h"

namespace corral::cli {
namespace {

struct TopologyCommandOptions {
  std::string spec;
  int workers = 0;
  std::string weights = "metropolis";
  TopologyOptions topology;
  bool json = false;
};

int RunTopology(TopologyCommandOptions& o) {
  o.topology.weights = ParseMixingWeights(o.weights);
  const Topology t = MakeTopology(o.spec, o.workers, o.topology);
  const TopologyReport r = Analyze(t);
  if (o.json) {
    nlohmann::ordered_json j;
    j["topology"] = t.spec();
    j["workers"] = r.workers;
    j["edges"] = r.edges;
    j["weights"] = t.weights();
    j["time_varying"] = t.time_varying();
    j["period"] = r.period;
    j["min_degree"] = r.min_degree;
    j["max_degree"] = r.max_degree;
    j["symmetric"] = r.symmetric;
    j["doubly_stochastic"] = r.doubly_stochastic;
    j["stochastic_error"] = r.stochastic_error;
    j["connected"] = r.connected;
    j["gap"] = r.gap;
    j["beta"] = r.beta;
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("topology           %s: %d workers, %zu edges\n", t.spec().c_str(), r.workers, r.edges);
  if (t.time_varying()) {
    std::printf("rounds             time-varying, period %d (gap and beta of the product over one period)\n",
                r.period);
  }
  std::printf("degree             min %d, max %d%s\n", r.min_degree, r.max_degree,
              r.connected ? "" : " (not connected)");
  std::printf("weights            %s; %s; %s (max error %.1e)\n", t.weights().c_str(),
              r.symmetric ? "symmetric" : "not symmetric",
              r.doubly_stochastic ? "doubly stochastic" : "NOT doubly stochastic", r.stochastic_error);
  std::printf("spectral gap       %.6f\n", r.gap);
  std::printf("beta = |I - W|_2   %.6f\n", r.beta);
  return 0;
}

}  // namespace

Action AddTopologyCommand(CLI::App& app) {
  auto o = std::make_shared<TopologyCommandOptions>();
  CLI::App* cmd = app.add_subcommand("topology", "A topology's mixing weights, spectral gap and beta");
  cmd->add_option("--topology", o->spec, "Topology: " + std::string(TopologySpecs()))->required();
  cmd->add_option("--workers", o->workers, "Number of workers")->required();
  cmd->add_option("--weights", o->weights, "Edge weights: metropolis, uniform")
      ->check(CLI::IsMember({"metropolis", "uniform"}))
      ->capture_default_str();
  cmd->add_option("--groups", o->topology.groups,
                  "hierarchical: each worker's group, comma-separated (default: one group)")
      ->delimiter(',');
  cmd->add_option("--seed", o->topology.seed, "Seed of random-regular:D")->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON object");
  return [o] { return RunTopology(*o); };
}

}  // namespace corral::cli
