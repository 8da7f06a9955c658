// The --metrics file: one JSON object per evaluation point with DESIGN.md §9's keys, then a
// summary line, with the numbers the run returned.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <corral/corral.h>

#include "test_data.h"

namespace corral {
namespace {

std::vector<nlohmann::json> ReadLines(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

TEST(Metrics, EveryEpochAndTheSummaryCarryTheDesignKeys) {
  const SyntheticSplit data = testing::SmallProblem();
  const auto path = std::filesystem::path(::testing::TempDir()) / "corral_metrics.jsonl";
  const TrainResult r = Train(data.train, &data.test,
                              {.threads = 2, .epochs = 3, .metrics_path = path.string()});
  const std::vector<nlohmann::json> lines = ReadLines(path);
  ASSERT_EQ(lines.size(), 4u);
  for (int e = 0; e < 3; ++e) {
    const nlohmann::json& j = lines[static_cast<std::size_t>(e)];
    for (const char* key : {"epoch", "step", "wall_s", "virtual_s", "train_loss", "objective",
                            "train_acc", "test_loss", "test_acc", "samples_per_s", "bytes_sent",
                            "bytes_sent_max", "diverged"}) {
      EXPECT_TRUE(j.contains(key)) << "line " << e << " lacks " << key;
    }
    EXPECT_EQ(j["epoch"], e + 1);
    EXPECT_EQ(j["step"], (e + 1) * data.train.rows());
    EXPECT_DOUBLE_EQ(j["objective"].get<double>(), r.history[static_cast<std::size_t>(e)].objective);
    EXPECT_EQ(j["diverged"], false);
  }
  const nlohmann::json& s = lines.back();
  EXPECT_EQ(s["event"], "summary");
  for (const char* key : {"algo", "model", "threads", "epochs", "train_loss", "objective",
                          "test_acc", "samples_per_s", "wall_s", "bytes_sent", "peak_rss_mb"}) {
    EXPECT_TRUE(s.contains(key)) << "summary lacks " << key;
  }
  EXPECT_EQ(s["algo"], "hogwild");
  EXPECT_EQ(s["model"], "logistic");
  EXPECT_EQ(s["threads"], 2);
  EXPECT_EQ(s["epochs"], 3);
  EXPECT_DOUBLE_EQ(s["test_acc"].get<double>(), *r.history.back().test_acc);
  EXPECT_GT(s["peak_rss_mb"].get<double>(), 0.0);
}

TEST(Metrics, UnwritablePathIsAnIoError) {
  const SyntheticSplit data = testing::SmallProblem();
  try {
    Train(data.train, nullptr, {.epochs = 1, .metrics_path = "/nonexistent-dir/m.jsonl"});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/m.jsonl"), std::string::npos);
  }
}

}  // namespace
}  // namespace corral
