// --algo auto: ResolveAlgorithm's table (model, data, threads, ranks, the options only one mode
// runs), what a run reports (TrainResult, the metrics summary, the saved training state), and
// resuming under auto.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <corral/corral.h>

#include "expect_bad_config.h"
#include "temp_file.h"
#include "test_data.h"

namespace corral {
namespace {

using ::testing::HasSubstr;

TrainConfig Auto(ModelKind model) { return {.algorithm = Algorithm::kAuto, .model = model}; }

Dataset DenseSet() {
  return MakeSyntheticClassification({.rows = 200, .features = 8, .seed = 3, .dense = true}, 0).train;
}

TEST(AlgoAuto, DenseModelAtTwoOrMoreThreadsRunsHogwildPPInGroupsOfOne) {
  const Dataset sparse = testing::SmallProblem().train;
  for (const int threads : {2, 8}) {
    const AlgorithmChoice c = ResolveAlgorithm(Auto(ModelKind::kMlp), sparse, threads);
    EXPECT_EQ(c.algorithm, Algorithm::kHogwildPP);
    EXPECT_EQ(c.group_size, 1);
    EXPECT_EQ(c.reason, "dense model mlp at " + std::to_string(threads) + " threads, groups of 1");
  }
  const AlgorithmChoice alone = ResolveAlgorithm(Auto(ModelKind::kMlp), sparse, 1);
  EXPECT_EQ(alone.algorithm, Algorithm::kHogwild);
  EXPECT_EQ(alone.reason, "1 thread");
}

TEST(AlgoAuto, RowSparseModelsRunHogwildOnSparseAndDenseData) {
  const Dataset sparse = testing::SmallProblem().train;
  const Dataset dense = DenseSet();
  const Dataset ratings = testing::PlantedRatings(30, 20, 2, 300, 0.1, 5);
  for (const ModelKind model : {ModelKind::kLogistic, ModelKind::kHinge, ModelKind::kSquared,
                                ModelKind::kSoftmax}) {
    for (const Dataset* data : {&sparse, &dense}) {
      if (data == &dense && model != ModelKind::kSoftmax) continue;  // LinearModelsOnDenseRows
      for (const int threads : {1, 2, 16}) {
        const AlgorithmChoice c = ResolveAlgorithm(Auto(model), *data, threads);
        EXPECT_EQ(c.algorithm, Algorithm::kHogwild) << ToString(model) << " at " << threads;
        EXPECT_FALSE(c.reason.empty());
      }
    }
  }
  const AlgorithmChoice mf = ResolveAlgorithm(Auto(ModelKind::kMf), ratings, 2);
  EXPECT_EQ(mf.algorithm, Algorithm::kHogwild);
  EXPECT_EQ(mf.reason, "mf updates its rows' coordinates at 2 threads (sparse rows)");
  EXPECT_THAT(ResolveAlgorithm(Auto(ModelKind::kSoftmax), dense, 2).reason, HasSubstr("(dense rows)"));
}

// A linear model on dense rows writes every weight every step, as the mlp does: from 2 threads
// a replica per thread (hogwild++, groups of 1); alone, hogwild.
TEST(AlgoAuto, LinearModelsOnDenseRowsRunGroupsOfOne) {
  const Dataset dense = DenseSet();
  for (const ModelKind model : {ModelKind::kLogistic, ModelKind::kHinge, ModelKind::kSquared}) {
    for (const int threads : {2, 16}) {
      const AlgorithmChoice c = ResolveAlgorithm(Auto(model), dense, threads);
      EXPECT_EQ(c.algorithm, Algorithm::kHogwildPP) << ToString(model) << " at " << threads;
      EXPECT_EQ(c.group_size, 1);
      EXPECT_EQ(c.reason, std::string(ToString(model)) + " on dense rows at " + std::to_string(threads) +
                              " threads writes every weight every step, groups of 1");
    }
    EXPECT_EQ(ResolveAlgorithm(Auto(model), dense, 1).algorithm, Algorithm::kHogwild);
  }
}

TEST(AlgoAuto, AnOptionOnlyHogwildRunsPicksHogwild) {
  const Dataset data = testing::SmallProblem().train;
  TrainConfig momentum = Auto(ModelKind::kMlp);
  momentum.optimizer = Optimizer::kMomentum;
  TrainConfig adagrad = Auto(ModelKind::kLogistic);
  adagrad.optimizer = Optimizer::kAdaGrad;
  TrainConfig seeded = Auto(ModelKind::kMlp);
  seeded.seeded_tau = 4;
  for (const auto& [config, option] :
       {std::pair{momentum, "--optimizer momentum"}, std::pair{adagrad, "--optimizer adagrad"},
        std::pair{seeded, "--schedule seeded:4"}}) {
    config.Validate();  // auto takes what hogwild takes
    const AlgorithmChoice c = ResolveAlgorithm(config, data, 2);
    EXPECT_EQ(c.algorithm, Algorithm::kHogwild) << option;
    EXPECT_EQ(c.reason, std::string(option) + ": hogwild++ does not run it");
  }
}

TEST(AlgoAuto, GroupSizePicksHogwildPPAndContradictionsAreRefused) {
  const Dataset data = testing::SmallProblem().train;
  TrainConfig grouped = Auto(ModelKind::kLogistic);
  grouped.group_size = 2;
  const AlgorithmChoice c = ResolveAlgorithm(grouped, data, 4);
  EXPECT_EQ(c.algorithm, Algorithm::kHogwildPP);
  EXPECT_EQ(c.group_size, 2);
  grouped.optimizer = Optimizer::kAdaGrad;
  try {
    ResolveAlgorithm(grouped, data, 4);
    ADD_FAILURE() << "adagrad with --group-size accepted under auto";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
    EXPECT_THAT(e.what(), HasSubstr("--optimizer adagrad runs under hogwild only, --group-size 2"));
  }
  // What neither mode takes is refused naming auto.
  TrainConfig link = Auto(ModelKind::kLogistic);
  link.link = "latency=1ms";
  testing::ExpectBadConfig(link, "not 'auto'");
}

TEST(AlgoAuto, AcrossRanksRunsHogwildPP) {
  const Dataset data = testing::SmallProblem().train;
  const AlgorithmChoice linear = ResolveAlgorithm(Auto(ModelKind::kLogistic), data, 2, 2);
  EXPECT_EQ(linear.algorithm, Algorithm::kHogwildPP);
  EXPECT_EQ(linear.group_size, 0);  // one group per rank
  const AlgorithmChoice mlp = ResolveAlgorithm(Auto(ModelKind::kMlp), data, 2, 2);
  EXPECT_EQ(mlp.algorithm, Algorithm::kHogwildPP);
  EXPECT_EQ(mlp.group_size, 1);
}

TEST(AlgoAuto, AGivenAlgorithmIsKeptWithoutAReason) {
  const Dataset data = testing::SmallProblem().train;
  TrainConfig config = Auto(ModelKind::kMlp);
  config.algorithm = Algorithm::kDpsgd;
  const AlgorithmChoice c = ResolveAlgorithm(config, data, 2);
  EXPECT_EQ(c.algorithm, Algorithm::kDpsgd);
  EXPECT_TRUE(c.reason.empty());
  EXPECT_EQ(ParseAlgorithm("auto"), Algorithm::kAuto);
  EXPECT_EQ(ToString(Algorithm::kAuto), "auto");
  const std::vector<Algorithm> modes = Algorithms();
  EXPECT_EQ(std::count(modes.begin(), modes.end(), Algorithm::kAuto), 0);
}

nlohmann::json SummaryLine(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) last = line;
  return nlohmann::json::parse(last);
}

TrainConfig SmallMlp(int epochs) {
  return {.algorithm = Algorithm::kAuto, .model = ModelKind::kMlp, .threads = 2, .epochs = epochs,
          .batch = 8, .hidden = {8}, .lr = 0.05f, .seed = 3, .gossip_every = 4};
}

TEST(AlgoAuto, TheRunReportsTheChoiceAndSavesTheModeThatRan) {
  const SyntheticSplit data = testing::SmallProblem();
  TrainConfig config = SmallMlp(1);
  config.metrics_path = TempPath("auto_metrics.jsonl");
  const TrainResult r = Train(data.train, nullptr, config);
  EXPECT_EQ(r.algorithm, Algorithm::kHogwildPP);
  EXPECT_EQ(r.algorithm_reason, "dense model mlp at 2 threads, groups of 1");
  EXPECT_EQ(r.state.algorithm, Algorithm::kHogwildPP);
  const nlohmann::json s = SummaryLine(config.metrics_path);
  EXPECT_EQ(s["algo"], "hogwild++");
  EXPECT_EQ(s["algo_requested"], "auto");
  EXPECT_EQ(s["algo_reason"], r.algorithm_reason);
  EXPECT_EQ(s["group_size"], 1);

  // A given algorithm: no request or reason recorded.
  config.algorithm = Algorithm::kHogwild;
  const TrainResult given = Train(data.train, nullptr, config);
  EXPECT_EQ(given.algorithm, Algorithm::kHogwild);
  EXPECT_TRUE(given.algorithm_reason.empty());
  EXPECT_FALSE(SummaryLine(config.metrics_path).contains("algo_requested"));
  std::filesystem::remove(config.metrics_path);
}

TEST(AlgoAuto, ResumeUnderAutoContinuesTheSavedRunsAlgorithm) {
  const SyntheticSplit data = testing::SmallProblem();
  const std::filesystem::path path = TempPath("auto_resume.model");
  // Saved under auto (hogwild++): auto resolves to it again and continues.
  SaveModel(path, ToSavedModel(Train(data.train, nullptr, SmallMlp(1))));
  TrainConfig rest = SmallMlp(2);
  rest.resume_path = path;
  const TrainResult resumed = Train(data.train, nullptr, rest);
  EXPECT_EQ(resumed.algorithm, Algorithm::kHogwildPP);
  EXPECT_EQ(resumed.state.epochs_done, 2);
  EXPECT_EQ(resumed.history.front().epoch, 2);  // only the second epoch ran

  // Saved under a mode auto would not pick: auto gives way to it.
  TrainConfig dpsgd = SmallMlp(1);
  dpsgd.algorithm = Algorithm::kDpsgd;
  SaveModel(path, ToSavedModel(Train(data.train, nullptr, dpsgd)));
  const TrainResult continued = Train(data.train, nullptr, rest);
  EXPECT_EQ(continued.algorithm, Algorithm::kDpsgd);
  EXPECT_EQ(continued.algorithm_reason, "the algorithm of the run --resume continues");
  EXPECT_EQ(continued.state.epochs_done, 2);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace corral
