// No behaviour change: every algorithm, on every model it trains, run with one thread on a
// fixed small problem, must produce the parameters it produced when tests/golden/modes.txt was
// written, bit for bit (an FNV-1a hash of the parameter bytes). The file was generated from the
// code before the mode layer was refactored (issue 15). To regenerate it after an intended
// change of results: CORRAL_GOLDEN_WRITE=1 build/tests/corral_golden_tests.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <corral/corral.h>

#include "test_data.h"

namespace corral {
namespace {

const std::string kGoldenPath = std::string(CORRAL_SOURCE_DIR) + "/tests/golden/modes.txt";

std::uint64_t Fnv1a(const std::vector<float>& params) {
  std::uint64_t h = 1469598103934665603ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(params.data());
  for (std::size_t i = 0; i < params.size() * sizeof(float); ++i) {
    h = (h ^ bytes[i]) * 1099511628211ull;
  }
  return h;
}

struct Problem {
  ModelKind model;
  Dataset train;
  float lr;  // fixed step size, small enough for two stable epochs
};

std::vector<Problem> Problems() {
  std::vector<Problem> problems;
  const SyntheticSplit binary = MakeSyntheticClassification(
      {.rows = 600, .features = 120, .nnz_per_row = 10, .zipf = 0.8, .label_noise = 0.05, .seed = 11},
      0);
  for (const ModelKind m : {ModelKind::kLogistic, ModelKind::kHinge, ModelKind::kSquared}) {
    problems.push_back({m, binary.train, 0.05f});
  }
  problems.push_back({ModelKind::kSoftmax,
                      MakeSyntheticClassification({.rows = 600, .features = 60, .nnz_per_row = 8,
                                                   .zipf = 0.5, .seed = 12, .classes = 4},
                                                  0)
                          .train,
                      0.05f});
  problems.push_back({ModelKind::kMf, testing::PlantedRatings(40, 50, 3, 800, 0.1, 13), 0.005f});
  problems.push_back({ModelKind::kMlp, MakeSyntheticClassification({.rows = 400, .features = 16,
                                                                    .seed = 14, .dense = true,
                                                                    .classes = 3},
                                                                   0)
                                           .train,
                      0.02f});
  return problems;
}

constexpr Algorithm kAlgorithms[] = {
    Algorithm::kHogwild, Algorithm::kBuckwild, Algorithm::kLocked, Algorithm::kSync,
    Algorithm::kQsgd,    Algorithm::kDpsgd,    Algorithm::kLocal,  Algorithm::kDcd,
    Algorithm::kEcd,     Algorithm::kChoco,    Algorithm::kAdpsgd, Algorithm::kHogwildPP,
};

const Problem& LogisticProblem() {
  static const Problem logistic = Problems().front();
  return logistic;
}

bool Linear(ModelKind m) {
  return m == ModelKind::kLogistic || m == ModelKind::kHinge || m == ModelKind::kSquared;
}

// Key -> hash of every run: "algo model" with the fixed step size, "algo model lr-search" with
// the step-size search (logistic only).
std::map<std::string, std::string> Runs() {
  std::map<std::string, std::string> out;
  for (const Problem& p : Problems()) {
    for (const Algorithm a : kAlgorithms) {
      if (a == Algorithm::kBuckwild && !Linear(p.model)) continue;
      for (const bool search : {false, true}) {
        if (search && p.model != ModelKind::kLogistic) continue;
        const TrainConfig config{.algorithm = a, .model = p.model, .l2 = 1e-3f, .threads = 1,
                                 .epochs = 2, .hidden = {8}, .rank = 3,
                                 .lr = search ? 0.0f : p.lr, .seed = 3, .pin = Pin::kNone};
        const std::string key = std::string(ToString(a)) + " " + std::string(ToString(p.model)) +
                                (search ? " lr-search" : "");
        TrainResult r;
        try {
          r = Train(p.train, nullptr, config);
        } catch (const Error& e) {
          ADD_FAILURE() << key << ": " << e.what();
          continue;
        }
        std::ostringstream hash;
        hash << std::hex << Fnv1a(r.params) << std::dec << " " << r.params.size();
        out[key] = hash.str();
      }
    }
  }
  // The synchronous modes are deterministic with several workers too (rounds and reductions
  // in a fixed order), which is where their gossip and reduce code runs: 4 workers each.
  // hogwild, buckwild, locked, adpsgd and hogwild++ are not (their races are the point).
  const Problem& logistic = LogisticProblem();
  struct Variant {
    Algorithm algorithm;
    const char* name;
    MixOrder mix_order = MixOrder::kMixThenStep;
    int gossip_every = 1;
    std::string compress;
  };
  const Variant variants[] = {
      {Algorithm::kSync, ""},  {Algorithm::kQsgd, ""},
      {Algorithm::kDpsgd, ""}, {Algorithm::kDpsgd, " step-then-mix every 2", MixOrder::kStepThenMix, 2},
      {Algorithm::kLocal, " every 3", MixOrder::kMixThenStep, 3},
      {Algorithm::kDcd, ""},   {Algorithm::kEcd, ""},
      {Algorithm::kChoco, ""}, {Algorithm::kChoco, " every 2 topk", MixOrder::kMixThenStep, 2, "topk:0.2"},
  };
  for (const Variant& v : variants) {
    const TrainConfig config{.algorithm = v.algorithm, .model = logistic.model, .l2 = 1e-3f,
                             .threads = 4, .epochs = 2, .batch = 2, .lr = logistic.lr, .seed = 3,
                             .pin = Pin::kNone, .compress = v.compress,
                             .gossip_every = v.gossip_every, .mix_order = v.mix_order};
    const std::string key = std::string(ToString(v.algorithm)) + " logistic 4-workers" + v.name;
    try {
      const TrainResult r = Train(logistic.train, nullptr, config);
      std::ostringstream hash;
      hash << std::hex << Fnv1a(r.params) << std::dec << " " << r.params.size();
      out[key] = hash.str();
    } catch (const Error& e) {
      ADD_FAILURE() << key << ": " << e.what();
    }
  }
  return out;
}

TEST(Golden, OneThreadParametersAreBitForBitTheStoredOnes) {
  const std::map<std::string, std::string> runs = Runs();
  if (const char* write = std::getenv("CORRAL_GOLDEN_WRITE"); write != nullptr && *write == '1') {
    std::ofstream file(kGoldenPath);
    file << "# algorithm model [lr-search] | FNV-1a of the parameters | parameter count "
            "(tests/golden_test.cc)\n";
    for (const auto& [key, hash] : runs) file << key << " | " << hash << "\n";
    ASSERT_TRUE(file.good()) << kGoldenPath;
    GTEST_SKIP() << "wrote " << kGoldenPath;
  }
  std::ifstream file(kGoldenPath);
  ASSERT_TRUE(file.good()) << "missing " << kGoldenPath;
  std::map<std::string, std::string> stored;
  for (std::string line; std::getline(file, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto bar = line.find(" | ");
    ASSERT_NE(bar, std::string::npos) << line;
    stored[line.substr(0, bar)] = line.substr(bar + 3);
  }
  EXPECT_EQ(stored.size(), runs.size());
  for (const auto& [key, hash] : runs) {
    const auto it = stored.find(key);
    ASSERT_NE(it, stored.end()) << key << " is not in " << kGoldenPath;
    EXPECT_EQ(hash, it->second) << key;
  }
}

}  // namespace
}  // namespace corral
