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

  // A failed write (a full disk) never throws: metrics are a by-product that must not cost
  // the run its model. The writer stops writing and failure() says what happened.
  void Write(const EvalPoint& point);
  void WriteSummary(const TrainConfig& config, const TrainResult& result);

  // Empty, or a warning naming the file, the line that failed and why.
  const std::string& failure() const { return failure_; }

 private:
  void Put(const std::string& line);

  std::string path_;
  std::ofstream out_;
  int lines_ = 0;
  std::string failure_;
};

}  // namespace corral::internal
