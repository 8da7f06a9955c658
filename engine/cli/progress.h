// Human-readable output of `corral train`: a live progress line on a terminal, one line per
// evaluation point, and the final summary.
#pragma once

#include <cstdio>

#include <corral/train.h>

namespace corral::cli {

class ProgressPrinter {
 public:
  // Writes to `out`; a live line (redrawn with '\r') only when `out` is a terminal.
  ProgressPrinter(std::FILE* out, bool quiet);

  void OnProgress(const Progress& p);
  void OnEval(const EvalPoint& p, int epochs);
  void Summary(const TrainConfig& config, const TrainResult& r);

 private:
  void ClearLine();

  std::FILE* out_;
  bool quiet_;
  bool live_;
  bool line_open_ = false;
};

}  // namespace corral::cli
