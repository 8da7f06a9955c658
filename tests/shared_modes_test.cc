// The shared-model modes (hogwild, buckwild, locked, sync, qsgd) through the public API:
// convergence to the full-batch optimum, stopping rules, cancellation, and checkpoints that
// resume bit for bit.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <stop_token>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include <corral/corral.h>

#include "logistic_oracle.h"
#include "temp_file.h"
#include "test_data.h"

namespace corral {
namespace {

struct ModeCase {
  Algorithm algorithm;
  int threads;
  int bits = 8;
  int model_bits = 16;
  double tolerance = 0.01;  // reached objective <= optimum * (1 + tolerance)
  int batch = 1;
};

std::string Name(const ::testing::TestParamInfo<ModeCase>& info) {
  std::string name = std::string(ToString(info.param.algorithm)) + "_" +
                     std::to_string(info.param.threads) + "threads";
  if (info.param.algorithm == Algorithm::kBuckwild) {
    name += "_data" + std::to_string(info.param.bits) + "_model" + std::to_string(info.param.model_bits);
  }
  return name;
}

class ModeConverges : public ::testing::TestWithParam<ModeCase> {};

TEST_P(ModeConverges, ToTheFullBatchOptimum) {
  const ModeCase& c = GetParam();
  const SyntheticSplit data = testing::SmallProblem();
  const double optimum = testing::OptimalObjective(data.train, 1e-2);
  const TrainResult r = Train(data.train, &data.test,
                              {.algorithm = c.algorithm, .l2 = 1e-2f, .threads = c.threads,
                               .epochs = 30, .batch = c.batch, .seed = 5, .bits = c.bits,
                               .model_bits = c.model_bits});
  ASSERT_EQ(r.history.size(), 30u);
  const double reached = r.history.back().objective;
  EXPECT_GE(reached, optimum - 1e-6);
  EXPECT_LE(reached, optimum * (1 + c.tolerance)) << "optimum " << optimum;
  // The reported objective is the objective of the returned parameters.
  const std::vector<double> w(r.params.begin(), r.params.end());
  EXPECT_NEAR(testing::Objective(data.train, w, 1e-2), reached, 1e-5);
  EXPECT_EQ(r.stop_reason, StopReason::kEpochs);
}

INSTANTIATE_TEST_SUITE_P(
    AllModes, ModeConverges,
    ::testing::Values(ModeCase{Algorithm::kHogwild, 3}, ModeCase{Algorithm::kLocked, 3},
                      ModeCase{Algorithm::kSync, 1},
                      ModeCase{.algorithm = Algorithm::kSync, .threads = 3, .batch = 8},
                      ModeCase{.algorithm = Algorithm::kQsgd, .threads = 3, .batch = 8},
                      ModeCase{Algorithm::kBuckwild, 1, 16}, ModeCase{Algorithm::kBuckwild, 3, 16},
                      ModeCase{Algorithm::kBuckwild, 3, 8},
                      ModeCase{Algorithm::kBuckwild, 3, 8, 8, 0.05}),
    Name);

// buckwild's dense kernels (buckwild_kernels.h) on dense rows whose width is not a whole number
// of their 16-coordinate blocks, every pair of widths, 1 and 3 workers.
TEST(SharedModes, BuckwildOnDenseRowsReachesTheOptimum) {
  const SyntheticSplit data = MakeSyntheticClassification(
      {.rows = 2000, .features = 37, .label_noise = 0.05, .seed = 9, .dense = true}, 0);
  const double optimum = testing::OptimalObjective(data.train, 1e-2);
  for (const int threads : {1, 3}) {
    for (const auto& [bits, model_bits, tolerance] : {std::tuple{8, 16, 0.002}, std::tuple{16, 16, 0.002},
                                                      std::tuple{16, 8, 0.03}, std::tuple{8, 8, 0.03}}) {
      const TrainResult r = Train(data.train, nullptr,
                                  {.algorithm = Algorithm::kBuckwild, .l2 = 1e-2f, .threads = threads,
                                   .epochs = 20, .seed = 5, .bits = bits, .model_bits = model_bits});
      const double reached = r.history.back().objective;
      EXPECT_LE(reached, optimum * (1 + tolerance))
          << threads << " threads, data " << bits << " model " << model_bits << ", optimum " << optimum;
    }
  }
}

TEST(SharedModes, QsgdSendsFewerBytesThanSync) {
  const SyntheticSplit data = testing::SmallProblem();
  const TrainConfig base{.algorithm = Algorithm::kSync, .l2 = 1e-2f, .threads = 2, .epochs = 2, .lr = 0.5f};
  TrainConfig qsgd = base;
  qsgd.algorithm = Algorithm::kQsgd;
  qsgd.compress = "qsgd:8";
  const TrainResult full = Train(data.train, nullptr, base);
  const TrainResult quantized = Train(data.train, nullptr, qsgd);
  ASSERT_EQ(full.samples, quantized.samples);
  // Sparse gradients: 4-byte index + 4-byte value vs 4-byte index + 1 byte (+ a norm).
  const auto ratio = static_cast<double>(quantized.bytes_sent) / static_cast<double>(full.bytes_sent);
  EXPECT_LT(ratio, 0.7);
  EXPECT_GT(ratio, 0.6);
  EXPECT_LE(full.bytes_sent_max * 2, full.bytes_sent + full.bytes_sent / 10);
}

TEST(SharedModes, BadQsgdSpecIsAConfigError) {
  const SyntheticSplit data = testing::SmallProblem();
  try {
    Train(data.train, nullptr, {.algorithm = Algorithm::kQsgd, .threads = 2, .compress = "qsgd:1"});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
    EXPECT_NE(std::string(e.what()).find("qsgd:1"), std::string::npos) << e.what();
  }
}

TEST(SharedModes, BuckwildNeedsALinearModel) {
  const Dataset ratings = testing::PlantedRatings(20, 30, 2, 400, 0.1, 3);
  EXPECT_THROW(Train(ratings, nullptr, {.algorithm = Algorithm::kBuckwild, .model = ModelKind::kMf}),
               Error);
}

TEST(SharedModes, SyncDivergenceIsAnError) {
  // Feature values so large that one step overflows the margin.
  const Dataset huge({0, 1, 3}, {0, 0, 1}, {1e30f, 1e30f, 1.0f}, {1, -1}, 2, "huge");
  try {
    Train(huge, nullptr, {.algorithm = Algorithm::kSync, .threads = 2, .lr = 1});
    FAIL() << "expected divergence";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDiverged);
    EXPECT_NE(std::string(e.what()).find("smaller --lr"), std::string::npos) << e.what();
  }
}

TEST(Stopping, TargetLossStopsAtTheFirstEpochBelowIt) {
  const SyntheticSplit data = testing::SmallProblem();
  const double optimum = testing::OptimalObjective(data.train, 1e-2);
  const TrainResult r = Train(data.train, nullptr,
                              {.l2 = 1e-2f, .threads = 2, .epochs = 50, .target_loss = optimum * 1.02});
  EXPECT_EQ(r.stop_reason, StopReason::kTarget);
  ASSERT_TRUE(r.epochs_to_target.has_value());
  EXPECT_EQ(*r.epochs_to_target, static_cast<int>(r.history.size()));
  EXPECT_LT(r.history.size(), 50u);
  EXPECT_LE(r.history.back().objective, optimum * 1.02);
  for (std::size_t i = 0; i + 1 < r.history.size(); ++i) {
    EXPECT_GT(r.history[i].objective, optimum * 1.02) << "an earlier epoch already reached it";
  }
}

TEST(Stopping, TimeLimitCutsTheRunShort) {
  const SyntheticSplit data = MakeSyntheticClassification(
      {.rows = 200'000, .features = 1000, .nnz_per_row = 20, .seed = 3}, 0);
  const TrainResult r = Train(data.train, nullptr,
                              {.l2 = 1e-4f, .threads = 2, .epochs = 100'000, .time_limit_s = 0.2});
  EXPECT_EQ(r.stop_reason, StopReason::kTimeLimit);
  EXPECT_LT(r.history.size(), 100'000u);
  EXPECT_TRUE(std::isfinite(r.history.back().objective));
}

TEST(Stopping, CancelFromAnotherThread) {
  const SyntheticSplit data = testing::SmallProblem();
  std::stop_source stop;
  TrainObserver observer;
  observer.stop = stop.get_token();
  std::jthread canceller;
  observer.on_eval = [&](const EvalPoint& p) {
    if (p.epoch == 2) canceller = std::jthread([&stop] { stop.request_stop(); });
    if (p.epoch == 2) canceller.join();  // the request is in before the next epoch starts
    return true;
  };
  const TrainResult r = Train(data.train, nullptr, {.threads = 2, .epochs = 50}, observer);
  EXPECT_EQ(r.stop_reason, StopReason::kCancelled);
  EXPECT_EQ(r.history.size(), 2u);
  EXPECT_EQ(r.state.epochs_done, 2);
}

class Resume : public ::testing::TestWithParam<Algorithm> {};

// Stopped after epoch 2, saved, loaded and continued to epoch 5: the same model, bit for bit,
// as 5 epochs in one go (1 thread fixes the order of every floating-point operation).
TEST_P(Resume, AtAnEpochBoundaryEqualsAnUninterruptedRun) {
  const SyntheticSplit data = testing::SmallProblem();
  const TrainConfig config{.algorithm = GetParam(), .l2 = 1e-3f, .threads = 1, .epochs = 5, .batch = 3};
  const TrainResult whole = Train(data.train, nullptr, config);

  TrainObserver stop_after_2;
  stop_after_2.on_eval = [](const EvalPoint& p) { return p.epoch < 2; };
  const TrainResult first = Train(data.train, nullptr, config, stop_after_2);
  ASSERT_EQ(first.state.epochs_done, 2);
  const std::string path = TempPath("resume.model");
  SaveModel(path, ToSavedModel(first));
  TrainConfig resumed = config;
  resumed.resume_path = path;
  const TrainResult rest = Train(data.train, nullptr, resumed);
  std::filesystem::remove(path);
  EXPECT_EQ(rest.history.size(), 3u);
  EXPECT_EQ(rest.lr, whole.lr);
  EXPECT_EQ(rest.params, whole.params);
  EXPECT_EQ(rest.state.epochs_done, 5);
}

INSTANTIATE_TEST_SUITE_P(Modes, Resume,
                         ::testing::Values(Algorithm::kHogwild, Algorithm::kLocked, Algorithm::kSync),
                         [](const auto& mode) { return std::string(ToString(mode.param)); });

// Stopped by the time limit somewhere inside an epoch: the checkpoint records each worker's
// position (and the mode's state: `kept` names an array it must hold), and the resumed run
// still ends bit for bit where the uninterrupted one does.
void ExpectMidEpochResumeEqualsAnUninterruptedRun(Optimizer optimizer, const char* kept) {
  const SyntheticSplit data = MakeSyntheticClassification(
      {.rows = 5'000, .features = 2000, .nnz_per_row = 10, .seed = 9}, 0);
  // --shuffle index: the limit must land among the steps, and --shuffle epoch spends the first
  // half or more of an epoch of these short rows on its copy. The resumed run below takes the
  // checkpoint with epoch, which visits the same samples in the same order.
  TrainConfig config{.l2 = 1e-4f, .threads = 1, .epochs = 2, .lr = 0.05f,
                     .shuffle = Shuffle::kIndex};
  config.optimizer = optimizer;
  if (optimizer == Optimizer::kMomentum) {  // heavy ball steps the mlp only: a narrow one, in batches
    config.model = ModelKind::kMlp;
    config.hidden = {2};
    config.batch = 32;
    config.lr = 0.01f;
  }
  // Copies of the rows enough for an epoch to last a tenth of a second in this build on this
  // machine, five times the coordinator's 20 ms time checks. A step costs more under the
  // sanitizers than in Release, by a factor that differs between them and is not in proportion
  // to the rows (AddressSanitizer: 0.1 s an epoch at 320,000 rows, 21 s at 1.28 million), so the
  // epoch is timed at the size it will run (the fixed sizes this replaced, 1.2 million rows and
  // 300,000 for the mlp, took up to 10 minutes under ThreadSanitizer).
  const auto copies_of_the_rows = [&](std::size_t copies) {
    std::vector<std::size_t> rows(copies * data.train.rows());
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = i % data.train.rows();
    return data.train.Gather(rows);
  };
  TrainConfig probe = config;
  probe.epochs = 1;
  std::size_t copies = 1;
  Dataset train = copies_of_the_rows(copies);
  while (copies < 256 && Train(train, nullptr, probe).train_s < 0.1) {
    copies *= 2;
    train = copies_of_the_rows(copies);
  }
  const TrainResult whole = Train(train, nullptr, config);

  // A quarter of the whole run's training time stops the first run in the middle of its first
  // epoch, sanitizers included, unless another process took the cores from one of the two runs
  // (once in a ctest -j2 of the whole suite here: the runs' speeds differed by 2x or more):
  // then other shares of it, until one stops inside an epoch.
  TrainConfig limited = config;
  TrainResult first;
  for (const double share : {0.25, 0.125, 0.375, 0.0625, 0.5, 0.03125}) {
    limited.time_limit_s = whole.train_s * share;
    first = Train(train, nullptr, limited);
    if (first.stop_reason == StopReason::kTimeLimit && first.state.position.size() == 1 &&
        first.state.position[0] > 0) {
      break;
    }
  }
  ASSERT_EQ(first.stop_reason, StopReason::kTimeLimit);
  const std::string path = TempPath("midepoch.model");
  SaveModel(path, ToSavedModel(first));
  const SavedModel saved = LoadModel(path);
  ASSERT_TRUE(saved.training.has_value());
  EXPECT_EQ(saved.training->position, first.state.position);
  ASSERT_EQ(first.state.position.size(), 1u)
      << "the limit should stop the run inside an epoch (" << copies << " copies of the rows, "
      << whole.train_s << " s for the whole run)";
  EXPECT_GT(first.state.position[0], 0u) << "the limit should stop the run inside an epoch";
  if (kept != nullptr) {
    EXPECT_TRUE(saved.training->mode.arrays.contains(kept)) << kept;
  }
  TrainConfig resumed = config;
  resumed.resume_path = path;
  const TrainResult rest = Train(train, nullptr, resumed);
  EXPECT_EQ(rest.params, whole.params);
  resumed.shuffle = Shuffle::kEpoch;
  const TrainResult rest_epoch = Train(train, nullptr, resumed);
  std::filesystem::remove(path);
  EXPECT_EQ(rest_epoch.params, whole.params);
}

TEST(Resume, MidEpochEqualsAnUninterruptedRun) {
  ExpectMidEpochResumeEqualsAnUninterruptedRun(Optimizer::kSgd, nullptr);
}

// hogwild saves its state inside an epoch too (kStateInsideEpoch): AdaGrad's accumulators as
// of the moment the workers stopped, consistent with the model saved beside them (issue 20).
TEST(Resume, MidEpochAdaGradEqualsAnUninterruptedRun) {
  ExpectMidEpochResumeEqualsAnUninterruptedRun(Optimizer::kAdaGrad, "sum_sq");
}

// ... and each worker's heavy-ball velocity, from the same moment as the model.
TEST(Resume, MidEpochMomentumEqualsAnUninterruptedRun) {
  ExpectMidEpochResumeEqualsAnUninterruptedRun(Optimizer::kMomentum, "velocity/0");
}

// Mid-epoch positions count samples of one visiting order: a checkpoint of a run that visited
// its rows in storage order (--shuffle off), resumed shuffled, restarts the interrupted epoch
// instead of skipping the wrong rows; resumed in the same order, it skips them.
TEST(Resume, PositionsOfAnotherVisitingOrderRestartTheEpoch) {
  const SyntheticSplit data = testing::SmallProblem();
  const TrainConfig off{.l2 = 1e-3f, .threads = 1, .epochs = 3, .lr = 0.05f, .shuffle = Shuffle::kOff};
  TrainObserver stop_after_1;
  stop_after_1.on_eval = [](const EvalPoint& p) { return p.epoch < 1; };
  SavedModel saved = ToSavedModel(Train(data.train, nullptr, off, stop_after_1));
  ASSERT_TRUE(saved.training.has_value());
  EXPECT_EQ(saved.training->order, "storage");
  const auto resume = [&](std::vector<std::uint64_t> position, Shuffle shuffle) {
    saved.training->position = std::move(position);
    const std::string path = TempPath("order.model");
    SaveModel(path, saved);
    TrainConfig config = off;
    config.shuffle = shuffle;
    config.resume_path = path;
    const TrainResult r = Train(data.train, nullptr, config);
    std::filesystem::remove(path);
    return r.params;
  };
  const std::uint64_t midway = data.train.rows() / 2;
  EXPECT_EQ(resume({midway}, Shuffle::kEpoch), resume({}, Shuffle::kEpoch));
  EXPECT_EQ(resume({midway}, Shuffle::kIndex), resume({}, Shuffle::kIndex));
  EXPECT_NE(resume({midway}, Shuffle::kOff), resume({}, Shuffle::kOff));
}

TEST(Resume, RejectsAFileOfAnotherModel) {
  const SyntheticSplit data = testing::SmallProblem();
  const TrainResult r = Train(data.train, nullptr, {.threads = 1, .epochs = 1});
  SavedModel saved = ToSavedModel(r);
  saved.params.push_back(0);
  saved.info.num_features += 1;
  const std::string path = TempPath("other.model");
  SaveModel(path, saved);
  TrainConfig config{.threads = 1, .epochs = 2};
  config.resume_path = path;
  try {
    Train(data.train, nullptr, config);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace corral
