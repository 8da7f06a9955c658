// `corral topology`: a topology's degrees, weights check, spectral gap and beta (DESIGN.md §4);
// with --hardware, the machine, where each worker would run on it and the groups that
// hogwild++ and `hierarchical` would use (corral/placement.h).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <corral/error.h>
#include <corral/placement.h>
#include <corral/topology.h>

#include "commands.h"
#include "placement_text.h"

namespace corral::cli {
namespace {

struct TopologyCommandOptions {
  std::string spec;
  int workers = 0;
  std::string weights = "metropolis";
  TopologyOptions topology;
  std::optional<std::string> hardware;  // set (maybe empty: this machine) when --hardware given
  std::string pin = "compact";
  int group_size = 0;
  bool json = false;
};

// The machine, the worker map and the groups (text or JSON fields).
void PrintHardware(const PlacementReport& p, const std::string& pin, int group_size,
                   nlohmann::ordered_json* json) {
  const std::vector<int> replica_groups = ReplicaGroups(static_cast<int>(p.worker_pu.size()), group_size,
                                                        p.worker_domain);
  const std::vector<int> hierarchical = HierarchicalGroups(p.worker_domain);
  const bool placed = !hierarchical.empty();
  if (json != nullptr) {
    nlohmann::ordered_json& j = *json;
    j["hardware"] = p.hardware;
    j["simulated"] = p.simulated;
    j["machine"] = {{"packages", p.machine.packages},
                    {"numa_nodes", p.machine.numa_nodes},
                    {"l3_domains", p.machine.l3_domains},
                    {"cores", p.machine.cores},
                    {"hardware_threads", p.machine.hardware_threads}};
    j["pin"] = pin;
    j["worker_pu"] = p.worker_pu;
    j["worker_core"] = p.worker_core;
    j["worker_l3"] = p.worker_l3;
    j["worker_numa"] = p.worker_numa;
    j["worker_package"] = p.worker_package;
    j["worker_domain"] = p.worker_domain;
    j["hogwild++_groups"] = replica_groups;
    j["hierarchical_groups"] = hierarchical;
    return;
  }
  std::printf("hardware           %s%s\n", p.hardware.c_str(),
              p.simulated ? " (a description: threads would not be bound)" : "");
  std::printf("machine            %s\n", MachineText(p.machine).c_str());
  const int n = static_cast<int>(p.worker_pu.size());
  if (!placed) {
    std::printf("placement          %s, %d workers: unknown (the OS places the threads)\n", pin.c_str(), n);
  } else {
    std::printf("placement          %s, %d workers on cores %s, L3 domains %s, NUMA nodes %s, packages %s\n",
                pin.c_str(), n, IdRanges(p.worker_core).c_str(), IdRanges(p.worker_l3).c_str(),
                IdRanges(p.worker_numa).c_str(), IdRanges(p.worker_package).c_str());
    std::printf("  worker     pu   core     l3   numa    pkg  domain\n");
    for (std::size_t w = 0; w < p.worker_pu.size(); ++w) {
      std::printf("  %6zu %6d %6d %6d %6d %6d  %6d\n", w, p.worker_pu[w], p.worker_core[w], p.worker_l3[w],
                  p.worker_numa[w], p.worker_package[w], p.worker_domain[w]);
    }
  }
  const int groups = replica_groups.empty() ? 0 : *std::max_element(replica_groups.begin(), replica_groups.end()) + 1;
  const std::string how = group_size > 0 ? "--group-size " + std::to_string(group_size)
                          : placed       ? "--group-size auto, one per cache domain"
                                         : "--group-size auto, placement unknown: groups of 1";
  std::printf("hogwild++ groups   %d (%s): %s\n", groups, how.c_str(), GroupsText(replica_groups).c_str());
  if (placed) {
    std::printf("hierarchical       complete inside each cache domain, ring across: %s\n",
                GroupsText(hierarchical).c_str());
  } else {
    std::printf("hierarchical       one group (placement unknown): the complete graph\n");
  }
}

void PrintTopology(const Topology& t, nlohmann::ordered_json* json) {
  const TopologyReport r = Analyze(t);
  if (json != nullptr) {
    nlohmann::ordered_json& j = *json;
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
    return;
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
}

int RunTopology(TopologyCommandOptions& o) {
  if (o.spec.empty() && !o.hardware) {
    throw Error(ErrorCode::kBadConfig, "topology: expected --topology SPEC --workers N, --hardware [SPEC], or both");
  }
  o.topology.weights = ParseMixingWeights(o.weights);
  const Pin pin = ParsePin(o.pin);
  if (o.group_size < 0) {
    throw Error(ErrorCode::kBadConfig, "--group-size must be >= 0 (0: auto), got " + std::to_string(o.group_size));
  }
  if (o.workers < 0) throw Error(ErrorCode::kBadConfig, "--workers (or --threads) must be >= 1");
  nlohmann::ordered_json j;
  nlohmann::ordered_json* json = o.json ? &j : nullptr;
  std::optional<PlacementReport> placement;
  if (o.hardware) {
    if (o.workers == 0) o.workers = PlanPlacement(*o.hardware, Pin::kNone, 0).machine.hardware_threads;
    placement = PlanPlacement(*o.hardware, pin, o.workers);
    // hierarchical without --groups: the groups a run on this hardware would use.
    if (o.topology.groups.empty()) o.topology.groups = HierarchicalGroups(placement->worker_domain);
  }
  if (!o.spec.empty() && o.workers < 1) {
    throw Error(ErrorCode::kBadConfig, "--workers (or --threads) must be >= 1 with --topology");
  }
  if (placement) PrintHardware(*placement, o.pin, o.group_size, json);
  if (!o.spec.empty()) PrintTopology(MakeTopology(o.spec, o.workers, o.topology), json);
  if (json != nullptr) std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace

Action AddTopologyCommand(CLI::App& app) {
  auto o = std::make_shared<TopologyCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "topology", "A topology's mixing weights, spectral gap and beta; with --hardware, where workers run and the "
                  "groups modes use");
  cmd->add_option("--topology", o->spec, "Topology: " + std::string(TopologySpecs()));
  cmd->add_option("--workers,--threads", o->workers,
                  "Number of workers (with --hardware, default: one per hardware thread)");
  cmd->add_option("--weights", o->weights, "Edge weights: metropolis, uniform")
      ->check(CLI::IsMember({"metropolis", "uniform"}))
      ->capture_default_str();
  cmd->add_option("--groups", o->topology.groups,
                  "hierarchical: each worker's group, comma-separated (default: one group; with "
                  "--hardware, its cache domains)")
      ->delimiter(',');
  cmd->add_option("--seed", o->topology.seed, "Seed of random-regular:D")->capture_default_str();
  cmd->add_option_function<std::string>(
         "--hardware", [o](const std::string& spec) { o->hardware = spec; },
         "Show the machine, where each worker runs and the groups of hogwild++ and hierarchical: "
         "this machine (no value), synthetic:\"pack:2 numa:4 l3:2 core:8 pu:2\" or xml:FILE")
      ->expected(0, 1);
  cmd->add_option("--pin", o->pin, "With --hardware: compact, scatter, none")->capture_default_str();
  cmd->add_option("--group-size", o->group_size, "With --hardware: hogwild++'s --group-size (0: auto)")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON object");
  return [o] { return RunTopology(*o); };
}

}  // namespace corral::cli
