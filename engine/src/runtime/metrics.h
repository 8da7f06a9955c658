// MetricsWriter: the --metrics JSON lines file (DESIGN.md §9 keys).
//
// Thread safety: owner-only (the coordinating thread).
#pragma once

#include <fstream>
#include <string>

#include <corral/train.h>

namespace corral::internal {

class MetricsWriter {
 public:
  // Opens `path` for writing (truncating); an empty path writes nothing. Throws kIo.
  explicit MetricsWriter(const std::string& path);

  void Write(const EvalPoint& point);
  void WriteSummary(const TrainConfig& config, const TrainResult& result);

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace corral::internal
