#include "progress.h"

#include <unistd.h>

#include <string>

#include "placement_text.h"

namespace corral::cli {
namespace {

std::string Rate(double per_s) {
  char buf[32];
  if (per_s >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2fM", per_s / 1e6);
  } else if (per_s >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.1fk", per_s / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f", per_s);
  }
  return buf;
}

}  // namespace

ProgressPrinter::ProgressPrinter(std::FILE* out, bool quiet)
    : out_(out), quiet_(quiet), live_(isatty(fileno(out)) != 0) {}

void ProgressPrinter::ClearLine() {
  if (line_open_) std::fprintf(out_, "\r\033[K");
  line_open_ = false;
}

void ProgressPrinter::OnProgress(const Progress& p) {
  if (quiet_ || !live_) return;
  const double done = (p.epoch - 1 + p.epoch_fraction) / p.epochs;
  const double eta_s = done > 0 ? p.wall_s * (1 - done) / done : 0;
  std::fprintf(out_, "\r\033[Kepoch %d/%d %3.0f%%  %s samples/s  %.1fs  ETA %.0fs", p.epoch,
               p.epochs, 100 * p.epoch_fraction, Rate(p.samples_per_s).c_str(), p.wall_s, eta_s);
  std::fflush(out_);
  line_open_ = true;
}

void ProgressPrinter::OnEval(const EvalPoint& p, int epochs) {
  if (quiet_) return;
  ClearLine();
  std::fprintf(out_, "epoch %3d/%d  objective %.6f  train_loss %.6f", p.epoch, epochs,
               p.objective, p.train_loss);
  if (p.train_acc) std::fprintf(out_, "  train_acc %.4f", *p.train_acc);
  if (p.train_rmse) std::fprintf(out_, "  train_rmse %.4f", *p.train_rmse);
  if (p.test_loss) std::fprintf(out_, "  test_loss %.6f", *p.test_loss);
  if (p.test_acc) std::fprintf(out_, "  test_acc %.4f", *p.test_acc);
  if (p.test_rmse) std::fprintf(out_, "  test_rmse %.4f", *p.test_rmse);
  if (p.test_auc) std::fprintf(out_, "  test_auc %.4f", *p.test_auc);
  if (p.validation_loss) std::fprintf(out_, "  val_loss %.6f", *p.validation_loss);
  if (p.validation_acc) std::fprintf(out_, "  val_acc %.4f", *p.validation_acc);
  if (p.validation_rmse) std::fprintf(out_, "  val_rmse %.4f", *p.validation_rmse);
  if (p.validation_auc) std::fprintf(out_, "  val_auc %.4f", *p.validation_auc);
  if (p.consensus) std::fprintf(out_, "  consensus %.3g  virtual %.2fs", *p.consensus, p.virtual_s);
  std::fprintf(out_, "  %s samples/s  %.2fs\n", Rate(p.samples_per_s).c_str(), p.wall_s);
  std::fflush(out_);
}

void ProgressPrinter::Summary(const TrainConfig& config, const TrainResult& r) {
  if (quiet_) return;
  ClearLine();
  const EvalPoint last = r.history.empty() ? EvalPoint{} : r.history.back();
  const PlacementReport& pl = r.placement;
  std::fprintf(out_, "\nsummary\n");
  const std::string algo(ToString(r.algorithm));
  std::fprintf(out_, "  algo          %s\n",
               (r.algorithm_reason.empty() ? algo : algo + " (auto: " + r.algorithm_reason + ")").c_str());
  std::fprintf(out_, "  model         %s (l2 %g)\n", std::string(ToString(config.model)).c_str(),
               static_cast<double>(r.l2));
  std::fprintf(out_, "  threads       %d, %s\n", r.threads, ThreadsText(pl).c_str());
  std::fprintf(out_, "  numa nodes    %d used of %d\n", pl.numa_nodes_used, pl.machine.numa_nodes);
  std::fprintf(out_, "  lr            %g%s, %s\n", static_cast<double>(r.lr),
               r.lr_searched ? " (searched)" : "", LrScheduleSpec(config).c_str());
  std::fprintf(out_, "  epochs        %d (stopped: %s)\n", last.epoch,
               std::string(ToString(r.stop_reason)).c_str());
  if (config.target_loss) {
    if (r.epochs_to_target) {
      std::fprintf(out_, "  to target     %d epochs, %.2fs of training (objective <= %g)\n",
                   *r.epochs_to_target, *r.train_s_to_target, *config.target_loss);
    } else {
      std::fprintf(out_, "  to target     not reached (objective <= %g)\n", *config.target_loss);
    }
  }
  // The measures of the model returned (the best epoch's with --early-stop: its summary line).
  const EvalPoint model = ResultPoint(r) != nullptr ? *ResultPoint(r) : EvalPoint{};
  std::fprintf(out_, "  objective     %.6f\n", model.objective);
  std::fprintf(out_, "  train_loss    %.6f\n", model.train_loss);
  if (model.train_acc) std::fprintf(out_, "  train_acc     %.4f\n", *model.train_acc);
  if (model.train_rmse) std::fprintf(out_, "  train_rmse    %.4f\n", *model.train_rmse);
  if (model.test_loss) std::fprintf(out_, "  test_loss     %.6f\n", *model.test_loss);
  if (model.test_acc) std::fprintf(out_, "  test_acc      %.4f\n", *model.test_acc);
  if (model.test_rmse) std::fprintf(out_, "  test_rmse     %.4f\n", *model.test_rmse);
  if (model.test_auc) std::fprintf(out_, "  test_auc      %.4f\n", *model.test_auc);
  std::fprintf(out_, "  samples/s     %s\n", Rate(r.samples_per_s).c_str());
  if (r.bytes_sent > 0) {
    std::fprintf(out_, "  bytes sent    %.3g MB (busiest worker %.3g MB)\n",
                 static_cast<double>(r.bytes_sent) / 1e6, static_cast<double>(r.bytes_sent_max) / 1e6);
  }
  std::fprintf(out_, "  wall          %.2fs (training %.2fs)\n", r.wall_s, r.train_s);
  for (const auto& [label, text] : r.summary) {
    std::fprintf(out_, "  %-14s%s\n", label.c_str(), text.c_str());
  }
  std::fprintf(out_, "  peak rss      %.0f MiB\n", r.peak_rss_mb);
  std::fflush(out_);
}

}  // namespace corral::cli
