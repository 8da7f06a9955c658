#include "engine/src/runtime/metrics.h"

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include <corral/error.h>

namespace corral::internal {

MetricsWriter::MetricsWriter(const std::string& path) : path_(path) {
  if (path.empty()) return;
  out_.open(path, std::ios::out | std::ios::trunc);
  if (!out_) {
    throw Error(ErrorCode::kIo, "cannot write metrics file " + path + ": " + std::strerror(errno));
  }
}

void MetricsWriter::Write(const EvalPoint& p) {
  if (!out_.is_open()) return;
  nlohmann::json j = {
      {"epoch", p.epoch},           {"step", p.step},
      {"wall_s", p.wall_s},         {"virtual_s", p.virtual_s},
      {"lr", p.lr},                 {"train_loss", p.train_loss},
      {"objective", p.objective},   {"samples_per_s", p.samples_per_s},
      {"bytes_sent", p.bytes_sent}, {"bytes_sent_max", p.bytes_sent_max},
      {"diverged", p.diverged},
  };
  if (p.train_acc) j["train_acc"] = *p.train_acc;
  if (p.train_rmse) j["train_rmse"] = *p.train_rmse;
  if (p.test_loss) j["test_loss"] = *p.test_loss;
  if (p.test_acc) j["test_acc"] = *p.test_acc;
  if (p.test_rmse) j["test_rmse"] = *p.test_rmse;
  if (p.consensus) j["consensus"] = *p.consensus;
  if (p.compress_rel_error) j["compress_rel_error"] = *p.compress_rel_error;
  // JSON has no NaN: nlohmann writes a NaN loss as null, with "diverged": true beside it.
  out_ << j.dump() << '\n';
  out_.flush();
}

void MetricsWriter::WriteSummary(const TrainConfig& config, const TrainResult& r) {
  if (!out_.is_open()) return;
  const EvalPoint last = r.history.empty() ? EvalPoint{} : r.history.back();
  nlohmann::json j = {
      {"event", "summary"},
      {"algo", ToString(config.algorithm)},
      {"model", ToString(config.model)},
      {"threads", r.threads},
      {"epochs", last.epoch},
      {"lr", r.lr},
      {"l2", r.l2},
      {"train_loss", last.train_loss},
      {"objective", last.objective},
      {"samples_per_s", r.samples_per_s},
      {"wall_s", r.wall_s},
      {"virtual_s", last.virtual_s},
      {"bytes_sent", r.bytes_sent},
      {"bytes_sent_max", r.bytes_sent_max},
      {"peak_rss_mb", r.peak_rss_mb},
      {"stop_reason", ToString(r.stop_reason)},
      {"numa_nodes_used", r.placement.numa_nodes_used},
  };
  if (r.epochs_to_target) j["epochs_to_target"] = *r.epochs_to_target;
  if (r.train_s_to_target) j["time_to_target_s"] = *r.train_s_to_target;
  if (last.train_acc) j["train_acc"] = *last.train_acc;
  if (last.train_rmse) j["train_rmse"] = *last.train_rmse;
  if (last.test_loss) j["test_loss"] = *last.test_loss;
  if (last.test_acc) j["test_acc"] = *last.test_acc;
  if (last.test_rmse) j["test_rmse"] = *last.test_rmse;
  if (config.algorithm == Algorithm::kDpsgd || config.algorithm == Algorithm::kLocal) {
    // The replica settings that shaped the run (local: always an exact average after a step).
    const bool local = config.algorithm == Algorithm::kLocal;
    j["topology"] = local ? "complete" : config.topology;
    j["mix_order"] = ToString(local ? MixOrder::kStepThenMix : config.mix_order);
    j["gossip_every"] = config.gossip_every;
    j["link"] = config.link;
    j["link_mode"] = config.link_mode;
    if (last.consensus) j["consensus"] = *last.consensus;
  }
  if (config.algorithm == Algorithm::kDcd || config.algorithm == Algorithm::kEcd ||
      config.algorithm == Algorithm::kChoco) {
    j["topology"] = config.topology;
    j["compress"] = ResolvedCompress(config);
    j["gossip_every"] = config.gossip_every;
    j["link"] = config.link;
    j["link_mode"] = config.link_mode;
    if (config.algorithm == Algorithm::kChoco) j["gamma"] = r.gamma;
    if (last.consensus) j["consensus"] = *last.consensus;
    if (last.compress_rel_error) j["compress_rel_error"] = *last.compress_rel_error;
  }
  if (config.algorithm == Algorithm::kAdpsgd) {
    j["topology"] = config.topology;
    j["compress"] = ResolvedCompress(config);
    if (j["compress"] != "none") j["gamma"] = r.gamma;
  }
  if (!r.warnings.empty()) j["warnings"] = r.warnings;
  if (config.algorithm == Algorithm::kHogwild || config.algorithm == Algorithm::kHogwildPP) {
    j["hot_coords"] = r.hot_coords;
    j["hot_sync"] = r.hot_sync;
  }
  if (config.algorithm == Algorithm::kAdpsgd || config.algorithm == Algorithm::kHogwildPP) {
    // The asynchronous replica settings (hogwild++ always syncs over its ring of groups).
    if (config.algorithm == Algorithm::kAdpsgd) j["topology"] = config.topology;
    if (config.algorithm == Algorithm::kHogwildPP) j["group_size"] = config.group_size;
    j["gossip_every"] = config.gossip_every;
    if (last.consensus) j["consensus"] = *last.consensus;
  }
  out_ << j.dump() << '\n';
  out_.flush();
  if (!out_) throw Error(ErrorCode::kIo, "writing metrics file " + path_ + " failed");
}

}  // namespace corral::internal
