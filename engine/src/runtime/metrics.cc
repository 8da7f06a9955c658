#include "engine/src/runtime/metrics.h"

#include <cerrno>
#include <cstring>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include <corral/error.h>

namespace corral::internal {

namespace {

// A mean round's phases as round_compute_us, round_encode_us, ... (RoundSplit).
void WriteRoundSplit(const RoundSplit& t, nlohmann::json& j) {
  j["round_compute_us"] = 1e6 * t.compute_s;
  j["round_encode_us"] = 1e6 * t.encode_s;
  j["round_wait_us"] = 1e6 * t.wait_s;
  j["round_decode_us"] = 1e6 * t.decode_s;
  j["round_mix_us"] = 1e6 * t.mix_s;
}

}  // namespace

MetricsWriter::MetricsWriter(const std::string& path) : path_(path) {
  if (path.empty()) return;
  out_.open(path, std::ios::out | std::ios::trunc);
  if (!out_) {
    throw Error(ErrorCode::kIo, "cannot write metrics file " + path + ": " + std::strerror(errno));
  }
}

void MetricsWriter::Put(const std::string& line) {
  errno = 0;
  out_ << line << '\n';
  out_.flush();
  ++lines_;
  if (out_) return;
  const int saved = errno;
  failure_ = "writing metrics file " + path_ + " failed at line " + std::to_string(lines_) + ": " +
             (saved != 0 ? std::strerror(saved) : "write error") +
             "; no further metrics were written";
  out_.close();
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
  if (p.test_auc) j["test_auc"] = *p.test_auc;
  if (p.validation_loss) j["validation_loss"] = *p.validation_loss;
  if (p.validation_acc) j["validation_acc"] = *p.validation_acc;
  if (p.validation_rmse) j["validation_rmse"] = *p.validation_rmse;
  if (p.validation_auc) j["validation_auc"] = *p.validation_auc;
  if (p.consensus) j["consensus"] = *p.consensus;
  if (p.compress_rel_error) j["compress_rel_error"] = *p.compress_rel_error;
  if (p.gossip_every) j["gossip_every"] = *p.gossip_every;
  if (p.gossip_share) j["gossip_share"] = *p.gossip_share;
  if (p.round_split) WriteRoundSplit(*p.round_split, j);
  // JSON has no NaN: nlohmann writes a NaN loss as null, with "diverged": true beside it.
  Put(j.dump());
}

void MetricsWriter::WriteSummary(const TrainConfig& config, const TrainResult& r) {
  if (!out_.is_open()) return;
  const EvalPoint last = r.history.empty() ? EvalPoint{} : r.history.back();
  // The measures of the model the run returns (the best epoch's with --early-stop).
  const EvalPoint model = ResultPoint(r) != nullptr ? *ResultPoint(r) : EvalPoint{};
  nlohmann::json j = {
      {"event", "summary"},
      {"algo", ToString(r.algorithm)},
      {"model", ToString(config.model)},
      {"threads", r.threads},
      {"epochs", last.epoch},
      {"lr", r.lr},
      {"l2", r.l2},
      {"train_loss", model.train_loss},
      {"objective", model.objective},
      {"samples_per_s", r.samples_per_s},
      {"wall_s", r.wall_s},
      {"virtual_s", last.virtual_s},
      {"bytes_sent", r.bytes_sent},
      {"bytes_sent_max", r.bytes_sent_max},
      {"peak_rss_mb", r.peak_rss_mb},
      {"stop_reason", ToString(r.stop_reason)},
      {"numa_nodes_used", r.placement.numa_nodes_used},
      {"schedule", ScheduleSpec(config)},
      {"class_weight", ClassWeightSpec(config.class_weight)},
      {"optimizer", ToString(config.optimizer)},
      {"lr_schedule", LrScheduleSpec(config)},
      {"momentum", config.optimizer == Optimizer::kMomentum ? config.momentum : 0.0f},
  };
  if (!r.algorithm_reason.empty()) {  // --algo auto chose r.algorithm
    j["algo_requested"] = "auto";
    j["algo_reason"] = r.algorithm_reason;
  }
  if (r.epochs_to_target) j["epochs_to_target"] = *r.epochs_to_target;
  if (r.train_s_to_target) j["time_to_target_s"] = *r.train_s_to_target;
  if (model.train_acc) j["train_acc"] = *model.train_acc;
  if (model.train_rmse) j["train_rmse"] = *model.train_rmse;
  if (model.test_loss) j["test_loss"] = *model.test_loss;
  if (model.test_acc) j["test_acc"] = *model.test_acc;
  if (model.test_rmse) j["test_rmse"] = *model.test_rmse;
  if (model.test_auc) j["test_auc"] = *model.test_auc;
  // The algorithm's own settings (each mode describes itself) and, for replica modes, how far
  // apart the replicas ended and how much compression erred.
  for (const ModeSetting& setting : r.settings) {
    std::visit([&](const auto& value) { j[setting.key] = value; }, setting.value);
  }
  if (last.consensus) j["consensus"] = *last.consensus;
  if (last.compress_rel_error) j["compress_rel_error"] = *last.compress_rel_error;
  if (last.gossip_share) j["gossip_share"] = *last.gossip_share;
  if (last.round_split) WriteRoundSplit(*last.round_split, j);
  if (!r.edge_bytes.empty()) {
    nlohmann::json edges = nlohmann::json::array();
    for (const EdgeBytes& e : r.edge_bytes) edges.push_back({{"from", e.from}, {"to", e.to}, {"bytes", e.bytes}});
    j["bytes_per_edge"] = std::move(edges);
  }
  if (!r.warnings.empty()) j["warnings"] = r.warnings;
  Put(j.dump());
}

}  // namespace corral::internal
