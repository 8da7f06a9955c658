// Every algorithm through the public API, one suite parameterised over all of them (the
// registry's list, so a new mode joins by itself): it converges, reports its own settings, fails
// cleanly when a worker throws, and stops on a time limit. Mode-specific behaviour has its own suites (shared_modes_test, replica_test, ...).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <corral/corral.h>

#include "logistic_oracle.h"
#include "algorithm_names.h"
#include "test_data.h"

namespace corral {
namespace {

// The settings each algorithm reports in the metrics summary (besides the common fields).
const std::map<Algorithm, std::set<std::string>>& ExpectedSettings() {
  static const std::set<std::string> rounds = {"topology",  "gossip_every", "gossip_auto",
                                               "gossip_share", "link", "link_mode", "consensus"};
  static const std::map<Algorithm, std::set<std::string>> expected = [] {
    std::map<Algorithm, std::set<std::string>> e;
    e[Algorithm::kHogwild] = {"hot_coords", "hot_sync"};
    e[Algorithm::kDpsgd] = rounds;
    e[Algorithm::kDpsgd].insert("mix_order");
    e[Algorithm::kLocal] = e[Algorithm::kDpsgd];
    for (const Algorithm a : {Algorithm::kDcd, Algorithm::kEcd, Algorithm::kChoco}) {
      e[a] = rounds;
      e[a].insert({"compress", "compress_rel_error"});
    }
    e[Algorithm::kChoco].insert("gamma");
    e[Algorithm::kAdpsgd] = {"topology", "compress", "gossip_every", "gossip_auto", "gossip_share",
                             "consensus"};
    e[Algorithm::kHogwildPP] = {"hot_coords", "hot_sync", "group_size", "gossip_every", "consensus"};
    return e;
  }();
  return expected;
}

TrainConfig Config(Algorithm a) {
  TrainConfig config{.algorithm = a, .l2 = 1e-2f, .threads = 2, .epochs = 20, .seed = 5,
                     .pin = Pin::kNone};
  if (a == Algorithm::kEcd) {
    // ECD with qsgd is stable for ~4/omega rounds only (see compressed_gossip_test.cc): 240.
    config.batch = 64;
    config.epochs = 10;
  }
  return config;
}

class AllModes : public ::testing::TestWithParam<Algorithm> {};

TEST_P(AllModes, ConvergesNearTheFullBatchOptimum) {
  const SyntheticSplit data = testing::SmallProblem();
  const double optimum = testing::OptimalObjective(data.train, 1e-2);
  const TrainConfig config = Config(GetParam());
  const TrainResult r = Train(data.train, &data.test, config);
  ASSERT_EQ(r.history.size(), static_cast<std::size_t>(config.epochs));
  EXPECT_GE(r.history.back().objective, optimum - 1e-6);
  EXPECT_LE(r.history.back().objective, optimum * 1.05) << "optimum " << optimum;
}

TEST_P(AllModes, ReportsItsOwnSettingsInTheMetricsSummary) {
  const SyntheticSplit data = testing::SmallProblem();
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("corral_all_modes_" + AlgorithmTestName({GetParam(), 0}) + ".jsonl");
  TrainConfig config = Config(GetParam());
  config.epochs = 2;
  config.metrics_path = path.string();
  const TrainResult r = Train(data.train, nullptr, config);
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) last = line;
  std::filesystem::remove(path);
  const nlohmann::json summary = nlohmann::json::parse(last);
  ASSERT_EQ(summary["event"], "summary");
  EXPECT_EQ(summary["algo"], std::string(ToString(GetParam())));
  const auto expected = ExpectedSettings().find(GetParam());
  const std::set<std::string> keys =
      expected == ExpectedSettings().end() ? std::set<std::string>{} : expected->second;
  for (const std::string& key : keys) EXPECT_TRUE(summary.contains(key)) << key;
  // Every setting the mode reported is in the summary, and none that belongs to another mode.
  std::set<std::string> all;
  for (const auto& [a, k] : ExpectedSettings()) all.insert(k.begin(), k.end());
  for (const std::string& key : all) {
    if (!keys.contains(key)) {
      EXPECT_FALSE(summary.contains(key)) << key;
    }
  }
  for (const ModeSetting& s : r.settings) EXPECT_TRUE(summary.contains(s.key)) << s.key;
  // Replica modes add a "replicas" line to the run's summary.
  bool replicas_line = false;
  for (const auto& [label, text] : r.summary) replicas_line = replicas_line || label == "replicas";
  EXPECT_EQ(replicas_line, keys.contains("consensus"));
}

// A model of the embedder's own (public API) that throws on its 200th gradient.
struct ThrowingLogistic {
  static constexpr Task kTask = Task::kBinary;
  std::size_t dim;
  std::atomic<int>* calls;
  std::size_t NumParams() const { return dim; }
  float Predict(const Params& w, const SparseRow& x) const {
    float s = 0;
    for (std::size_t k = 0; k < x.index.size(); ++k) s += w.Load(x.index[k]) * x.value[k];
    return s;
  }
  double Loss(const Params& w, const SparseRow& x, float y) const {
    return std::log1p(std::exp(-(y > 0 ? 1.0 : -1.0) * Predict(w, x)));
  }
  void AddGradient(const Params& w, const SparseRow& x, float y, std::span<float> grad) const {
    // relaxed: only the count matters.
    if (calls->fetch_add(1, std::memory_order_relaxed) == 200) throw std::runtime_error("boom");
    const double label = y > 0 ? 1.0 : -1.0;
    const auto d = static_cast<float>(-label / (1 + std::exp(label * Predict(w, x))));
    for (std::size_t k = 0; k < x.index.size(); ++k) grad[x.index[k]] += d * x.value[k];
  }
};

TEST_P(AllModes, AThrowingWorkerFailsTheRunAfterAllStopped) {
  if (GetParam() == Algorithm::kBuckwild) {
    GTEST_SKIP() << "buckwild trains only the built-in linear models: no model can throw in it";
  }
  const SyntheticSplit data = testing::SmallProblem();
  std::atomic<int> calls{0};
  TrainConfig config = Config(GetParam());
  config.threads = 4;
  config.lr = 0.1f;
  try {
    TrainCustom(ThrowingLogistic{data.train.num_features(), &calls}, data.train, nullptr, config);
    FAIL() << "expected kWorkerFailed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kWorkerFailed) << e.what();
    EXPECT_NE(std::string(e.what()).find("boom"), std::string::npos) << e.what();
  }
}

TEST_P(AllModes, StopsOnTheTimeLimit) {
  const SyntheticSplit data = testing::SmallProblem();
  TrainConfig config = Config(GetParam());
  config.epochs = 1'000'000;
  config.time_limit_s = 0.3;
  const TrainResult r = Train(data.train, nullptr, config);
  EXPECT_EQ(r.stop_reason, StopReason::kTimeLimit);
  ASSERT_FALSE(r.history.empty());
  EXPECT_LT(r.history.size(), 1'000'000u);
  EXPECT_TRUE(std::isfinite(r.history.back().objective));
}

INSTANTIATE_TEST_SUITE_P(Every, AllModes, ::testing::ValuesIn(Algorithms()), AlgorithmTestName);

}  // namespace
}  // namespace corral
