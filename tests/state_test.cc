// Reproducible runs and the whole training state (issue 17): the round-based modes repeat bit
// for bit whatever the thread scheduling (8 workers on 2 cores), and every mode resumes a
// checkpoint where it stopped.
#include <algorithm>
#include <cmath>
#include <utility>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <corral/corral.h>

#include "algorithm_names.h"
#include "temp_file.h"
#include "test_data.h"

namespace corral {
namespace {

// Bitwise equality of two parameter vectors (== would call -0 and 0 equal and NaN unequal).
::testing::AssertionResult SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) {
    return ::testing::AssertionFailure() << a.size() << " vs " << b.size() << " parameters";
  }
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (std::memcmp(&a[k], &b[k], sizeof(float)) != 0) {
      return ::testing::AssertionFailure() << "parameter " << k << ": " << a[k] << " vs " << b[k];
    }
  }
  return ::testing::AssertionSuccess();
}

// A problem small enough for many runs under ThreadSanitizer (CI runs this suite there).
SyntheticSplit TinyProblem() {
  return MakeSyntheticClassification({.rows = 600, .features = 60, .nnz_per_row = 6, .seed = 3}, 0);
}

// The round-based modes: every worker takes the same steps and its rounds at the same steps,
// so the result is a function of the seed, the worker count and the gossip period alone.
constexpr Algorithm kRoundBased[] = {Algorithm::kSync, Algorithm::kQsgd, Algorithm::kDpsgd,
                                     Algorithm::kLocal, Algorithm::kDcd, Algorithm::kEcd,
                                     Algorithm::kChoco};

class RoundBased : public ::testing::TestWithParam<Algorithm> {};

// 8 workers on the machine's cores (2 in CI): the operating system interleaves them
// differently in every run. The period is a number (an automatic one is measured from
// timings, docs/algorithms.md "Determinism"), 4 so that local steps and rounds both occur.
TEST_P(RoundBased, ThreeRunsWithTheSameSeedAgreeBitForBit) {
  const SyntheticSplit data = TinyProblem();
  TrainConfig config{.algorithm = GetParam(), .l2 = 1e-2f, .threads = 8, .epochs = 2,
                     .batch = GetParam() == Algorithm::kEcd ? 8 : 1, .lr = 0.05f, .seed = 11,
                     .pin = Pin::kNone};
  config.gossip_every = 4;
  const TrainResult first = Train(data.train, nullptr, config);
  for (int run = 0; run < 2; ++run) {
    const TrainResult again = Train(data.train, nullptr, config);
    EXPECT_TRUE(SameBits(first.params, again.params)) << "run " << run + 2;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, RoundBased, ::testing::ValuesIn(kRoundBased), AlgorithmTestName);

bool RoundBasedMode(Algorithm a) {
  return std::find(std::begin(kRoundBased), std::end(kRoundBased), a) != std::end(kRoundBased);
}

// A deterministic run of mode `a`: the round-based modes at 3 workers (their result does not
// depend on scheduling), the asynchronous ones at 1 (with more, the interleaving decides).
// Local steps between rounds (gossip every 3) where the mode takes them, so that the saved
// state has rounds in flight across the epoch boundary.
TrainConfig DeterministicConfig(Algorithm a) {
  TrainConfig config{.algorithm = a, .l2 = 1e-2f, .threads = RoundBasedMode(a) ? 3 : 1,
                     .epochs = 4, .lr = 0.05f, .seed = 9, .pin = Pin::kNone};
  if (a == Algorithm::kEcd) config.batch = 8;
  if (a != Algorithm::kHogwildPP) config.gossip_every = 3;
  return config;
}

// `config` trained for `epochs` epochs, saved to a file (named after `name`), and resumed from
// it to config.epochs.
TrainResult ResumedAfter(int epochs, const Dataset& train, const TrainConfig& config, const std::string& name) {
  TrainConfig first = config;
  first.epochs = epochs;
  const std::string path = TempPath(name + ".model");
  SaveModel(path, ToSavedModel(Train(train, nullptr, first)));
  TrainConfig rest = config;
  rest.resume_path = path;
  TrainResult resumed = Train(train, nullptr, rest);
  std::filesystem::remove(path);
  return resumed;
}

// The state's entries that are measurements (virtual clocks: CPU time), not training state.
ModeState WithoutClocks(ModeState s) {
  std::erase_if(s.counters, [](const auto& c) { return c.first.starts_with("clock/"); });
  return s;
}

// The same whole state (every replica, copy, estimate, accumulator, velocity, counter) bit for
// bit, clocks aside.
void ExpectSameState(const TrainResult& whole, const TrainResult& resumed) {
  const ModeState a = WithoutClocks(whole.state.mode);
  const ModeState b = WithoutClocks(resumed.state.mode);
  EXPECT_EQ(a.counters, b.counters);
  ASSERT_EQ(a.arrays.size(), b.arrays.size());
  for (const auto& [name, values] : a.arrays) {
    ASSERT_TRUE(b.arrays.contains(name)) << name;
    EXPECT_TRUE(SameBits(values, b.arrays.at(name))) << name;
  }
}

class EveryMode : public ::testing::TestWithParam<Algorithm> {};

// E epochs in one go, and E/2, saved to a file, loaded and resumed to E: the same parameters
// and the same whole state (every replica, copy, estimate, counter) bit for bit.
TEST_P(EveryMode, ResumesBitForBitFromACheckpoint) {
  const SyntheticSplit data = TinyProblem();
  const TrainConfig config = DeterministicConfig(GetParam());
  const TrainResult whole = Train(data.train, nullptr, config);

  const TrainResult resumed =
      ResumedAfter(config.epochs / 2, data.train, config, AlgorithmTestName({GetParam(), 0}));

  ASSERT_EQ(resumed.state.epochs_done, config.epochs);
  EXPECT_TRUE(SameBits(whole.params, resumed.params));
  ExpectSameState(whole, resumed);
  const ModeState a = WithoutClocks(whole.state.mode);
  // The replica modes' state is more than their mean: every replica is in it.
  if (GetParam() == Algorithm::kDpsgd || GetParam() == Algorithm::kChoco) {
    EXPECT_TRUE(a.arrays.contains("x/2"));
  }
  if (GetParam() == Algorithm::kLocal) {
    EXPECT_TRUE(a.arrays.contains("base/2"));  // sparse rounds
  }
}

// Every algorithm of the registry (a new mode joins by itself).
INSTANTIATE_TEST_SUITE_P(Modes, EveryMode, ::testing::ValuesIn(Algorithms()), AlgorithmTestName);


// local's sparse rounds (gossip/sparse_changes.h) across a checkpoint: 3 workers (where the
// sparse and dense rounds differ in rounding, so a resumed run that sent another form would
// show), a round every 7 steps, so that epochs end with changes not yet sent, on a problem
// wide enough for the messages to be sparse.
TEST(Checkpoint, SparseLocalRoundsResumeBitForBit) {
  const SyntheticSplit data = MakeSyntheticClassification(
      {.rows = 900, .features = 3000, .nnz_per_row = 6, .seed = 8}, 0);
  const TrainConfig config{.algorithm = Algorithm::kLocal, .l2 = 1e-2f, .threads = 3, .epochs = 4,
                           .lr = 0.1f, .seed = 9, .pin = Pin::kNone, .gossip_every = 7};
  const TrainResult whole = Train(data.train, nullptr, config);
  // 300 steps per epoch: 171 rounds, 6 directed edges; sparse messages are under a quarter.
  const std::uint64_t dense = (4 * 300 / 7) * 6 * whole.params.size() * sizeof(float);
  ASSERT_LT(4 * whole.bytes_sent, dense);
  const TrainResult resumed = ResumedAfter(2, data.train, config, "sparse_local");
  EXPECT_TRUE(SameBits(whole.params, resumed.params));
  for (const char* name : {"x/1", "base/1"}) {
    EXPECT_TRUE(SameBits(whole.state.mode.arrays.at(name), resumed.state.mode.arrays.at(name))) << name;
  }
}

// The asynchronous modes under --schedule seeded with 4 workers: hogwild and buckwild resume
// bit for bit (an epoch ends with no update pending, and each epoch's streams derive from the
// seed);
// the others have no seeded schedule and refuse it, naming the flag. A checkpoint resumes only
// under the schedule that wrote it.
TEST(Checkpoint, SeededAsynchronousRunsResumeBitForBitOrRefuseTheSchedule) {
  const SyntheticSplit data = TinyProblem();
  for (const Algorithm a : {Algorithm::kHogwild, Algorithm::kBuckwild, Algorithm::kLocked,
                            Algorithm::kAdpsgd, Algorithm::kHogwildPP}) {
    TrainConfig config = DeterministicConfig(a);
    config.threads = 4;
    config.seeded_tau = 8;
    if (a != Algorithm::kHogwild && a != Algorithm::kBuckwild) {
      try {
        config.Validate();
        ADD_FAILURE() << ToString(a) << " accepted --schedule seeded";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--schedule seeded:8"), std::string::npos) << e.what();
      }
      continue;
    }
    const TrainResult whole = Train(data.train, nullptr, config);
    TrainConfig half = config;
    half.epochs = config.epochs / 2;
    const std::string path = TempPath("seeded.model");
    SaveModel(path, ToSavedModel(Train(data.train, nullptr, half)));
    TrainConfig rest = config;
    rest.resume_path = path;
    const TrainResult resumed = Train(data.train, nullptr, rest);
    EXPECT_TRUE(SameBits(whole.params, resumed.params));
    EXPECT_EQ(whole.state.mode.counters, resumed.state.mode.counters);
    rest.seeded_tau = 64;
    try {
      Train(data.train, nullptr, rest);
      ADD_FAILURE() << "a seeded:8 checkpoint resumed under seeded:64";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--schedule seeded:8"), std::string::npos) << e.what();
    }
    // A free run's checkpoint under seeded: named as such, not as a damaged file.
    TrainConfig free = half;
    free.seeded_tau.reset();
    SaveModel(path, ToSavedModel(Train(data.train, nullptr, free)));
    try {
      Train(data.train, nullptr, rest);
      ADD_FAILURE() << "a free checkpoint resumed under seeded:64";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("written under --schedule free"), std::string::npos) << e.what();
    }
    std::filesystem::remove(path);
  }
}

// Codec memory is training state too: dcd with error feedback (its residual per worker, the
// paper's every-step form) and choco on top-k at 3 workers resume bit for bit.
TEST(Checkpoint, CodecMemoriesResumeBitForBit) {
  const SyntheticSplit data = TinyProblem();
  for (const auto& [algo, codec] : {std::pair{Algorithm::kDcd, "ef:qsgd:8"},
                                    std::pair{Algorithm::kChoco, "topk:0.1"}}) {
    TrainConfig config = DeterministicConfig(algo);
    config.compress = codec;
    if (algo == Algorithm::kDcd) config.gossip_every = 1;  // its local steps diverge under ef
    const TrainResult whole = Train(data.train, nullptr, config);
    if (algo == Algorithm::kDcd) {
      EXPECT_TRUE(whole.state.mode.arrays.contains("codec/2"));
    }
    TrainConfig half = config;
    half.epochs = config.epochs / 2;
    const std::string path = TempPath("codec.model");
    SaveModel(path, ToSavedModel(Train(data.train, nullptr, half)));
    TrainConfig rest = config;
    rest.resume_path = path;
    EXPECT_TRUE(SameBits(whole.params, Train(data.train, nullptr, rest).params)) << codec;
    std::filesystem::remove(path);
  }
}

// Free-running adpsgd with compressed exchanges (per-edge public copies, codecs and random
// streams in its state) at 3 workers: the interleaving decides the bits, so the resumed run is
// held to the spread of three uninterrupted runs (or 3e-3 of the objective, when they happen to
// agree closely: under ThreadSanitizer, 3 workers on 2 cores, two runs agreed to 1e-4 and the
// resumed one was 2e-3 off); a resume that lost the edges' copies would restart their
// differences.
TEST(Checkpoint, FreeRunningAdpsgdResumesWithinTheRunToRunSpread) {
  const SyntheticSplit data = TinyProblem();
  TrainConfig config{.algorithm = Algorithm::kAdpsgd, .l2 = 1e-2f, .threads = 3, .epochs = 4,
                     .lr = 0.05f, .seed = 9, .pin = Pin::kNone, .compress = "qsgd:8",
                     .gossip_every = 2};
  const double a = Train(data.train, nullptr, config).history.back().objective;
  const double c = Train(data.train, nullptr, config).history.back().objective;
  const TrainResult whole = Train(data.train, nullptr, config);
  const double b = whole.history.back().objective;
  EXPECT_TRUE(whole.state.mode.arrays.contains("public_copy/0"));
  const double resumed = ResumedAfter(2, data.train, config, "adpsgd").history.back().objective;
  const double spread = std::max({a, b, c}) - std::min({a, b, c});
  const double tolerance = std::max(2 * spread, 3e-3 * b);
  EXPECT_NEAR(resumed, b, tolerance) << "uninterrupted: " << a << ", " << b << ", " << c;
}

// --init: 5 epochs, saved, then 5 more started from that model, end as close to 10 epochs in
// one go as runs with other seeds are to each other (a constant step, so that epochs 6-10 and
// a fresh run's 1-5 take the same steps; 1 thread, so every number here is reproducible).
TEST(Init, FivePlusFiveEpochsEndWithinTheSpreadOfTenEpochRuns) {
  const SyntheticSplit data = testing::SmallProblem();
  const TrainConfig ten{.l2 = 1e-2f, .threads = 1, .epochs = 10, .lr = 0.02f, .lr_decay = 1.0f,
                        .seed = 1, .pin = Pin::kNone};
  double lowest = 1e9, highest = -1e9;
  for (const std::uint64_t seed : {1, 2, 3, 4}) {
    TrainConfig c = ten;
    c.seed = seed;
    const double objective = Train(data.train, nullptr, c).history.back().objective;
    lowest = std::min(lowest, objective);
    highest = std::max(highest, objective);
  }
  TrainConfig five = ten;
  five.epochs = 5;
  const std::string path = TempPath("init.model");
  const TrainResult first = Train(data.train, nullptr, five);
  SaveModel(path, ToSavedModel(first));
  TrainConfig more = five;
  more.init_path = path;
  const TrainResult continued = Train(data.train, nullptr, more);
  std::filesystem::remove(path);
  ASSERT_EQ(continued.history.front().epoch, 1);  // a fresh run, not a resumed one
  const double objective = continued.history.back().objective;
  EXPECT_LT(objective, first.history.back().objective);  // it continued, not restarted
  const double spread = highest - lowest;
  EXPECT_GE(objective, lowest - spread) << "ten-epoch runs: " << lowest << " .. " << highest;
  EXPECT_LE(objective, highest + spread) << "ten-epoch runs: " << lowest << " .. " << highest;
}

// --init from a model of another size: refused before training, naming both sizes.
TEST(Init, ADimensionMismatchNamesBothSizes) {
  const SyntheticSplit small = MakeSyntheticClassification(
      {.rows = 300, .features = 40, .nnz_per_row = 6, .seed = 3}, 0);
  const SyntheticSplit large = testing::SmallProblem();
  const TrainConfig config{.threads = 1, .epochs = 1, .lr = 0.05f, .pin = Pin::kNone};
  const TrainResult trained = Train(small.train, nullptr, config);
  const std::string path = TempPath("init_small.model");
  SaveModel(path, ToSavedModel(trained));
  TrainConfig init = config;
  init.init_path = path;
  try {
    Train(large.train, nullptr, init);
    ADD_FAILURE() << "expected kBadInput";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadInput);
    const std::string why = e.what();
    const std::size_t wanted = Train(large.train, nullptr, config).params.size();
    EXPECT_NE(why.find(path + ": --init needs a logistic model with " + std::to_string(wanted) +
                       " parameters"), std::string::npos) << why;
    EXPECT_NE(why.find("the file holds a logistic model with " + std::to_string(trained.params.size())),
              std::string::npos) << why;
  }
  std::filesystem::remove(path);
}

// A checkpoint of another worker count is refused naming it; one whose mode state does not
// fit the run (here: a replica lost) is refused naming the entry.
TEST(Checkpoint, AnotherWorkerCountOrAMissingReplicaIsRefused) {
  const SyntheticSplit data = TinyProblem();
  const TrainConfig config{.algorithm = Algorithm::kDpsgd, .threads = 3, .epochs = 1, .lr = 0.05f,
                           .pin = Pin::kNone, .gossip_every = 2};
  SavedModel saved = ToSavedModel(Train(data.train, nullptr, config));
  const std::string path = TempPath("refused.model");
  const auto resume = [&](TrainConfig c) -> std::string {
    c.resume_path = path;
    c.epochs = 2;
    try {
      Train(data.train, nullptr, c);
      return "";
    } catch (const Error& e) {
      EXPECT_TRUE(e.code() == ErrorCode::kBadConfig || e.code() == ErrorCode::kBadInput) << e.what();
      return e.what();
    }
  };
  SaveModel(path, saved);
  TrainConfig four = config;
  four.threads = 4;
  EXPECT_NE(resume(four).find("--threads 3 (this run: 4)"), std::string::npos);
  ASSERT_TRUE(saved.training->mode.arrays.erase("x/1"));
  SaveModel(path, saved);
  const std::string why = resume(config);
  EXPECT_NE(why.find(path + ": the checkpoint's training state does not fit this run: it lacks 'x/1'"),
            std::string::npos) << why;
  std::filesystem::remove(path);
}

// A deterministic run of mode `a` under optimizer `o` (issue 20): AdaGrad on the linear
// model (hogwild at 1 thread, batch 1: the only place it runs), momentum on a small MLP
// (hogwild and locked at 1 thread, dpsgd and local at 2 workers with a round every 3 steps).
TrainConfig OptimizerConfig(Algorithm a, Optimizer o) {
  TrainConfig config = DeterministicConfig(a);
  config.threads = a == Algorithm::kDpsgd || a == Algorithm::kLocal ? 2 : 1;
  config.optimizer = o;
  if (o == Optimizer::kMomentum) {
    config.model = ModelKind::kMlp;
    config.hidden = {8};
    config.batch = 4;
    config.lr = 0.02f;
  }
  return config;
}

// The optimizer's state is in the checkpoint: E/2 epochs saved and resumed end bit for bit
// where E epochs in one go do, accumulators and velocities included. Resumed from zeroed ones
// (as before they were saved) the runs part.
TEST(Checkpoint, OptimizerStateResumesBitForBit) {
  const SyntheticSplit data = TinyProblem();
  const std::pair<Algorithm, Optimizer> runs[] = {
      {Algorithm::kHogwild, Optimizer::kAdaGrad}, {Algorithm::kHogwild, Optimizer::kMomentum},
      {Algorithm::kLocked, Optimizer::kMomentum}, {Algorithm::kDpsgd, Optimizer::kMomentum},
      {Algorithm::kLocal, Optimizer::kMomentum}};
  for (const auto& [a, o] : runs) {
    SCOPED_TRACE(std::string(ToString(a)) + " " + std::string(ToString(o)));
    const TrainConfig config = OptimizerConfig(a, o);
    const TrainResult whole = Train(data.train, nullptr, config);
    ASSERT_EQ(whole.state.optimizer, o);
    const std::string kept = o == Optimizer::kAdaGrad ? "sum_sq" : "velocity/0";
    ASSERT_TRUE(whole.state.mode.arrays.contains(kept));
    const TrainResult resumed = ResumedAfter(config.epochs / 2, data.train, config,
                                             "optimizer_" + std::string(ToString(a)));
    ASSERT_EQ(resumed.state.epochs_done, config.epochs);
    EXPECT_TRUE(SameBits(whole.params, resumed.params));
    ExpectSameState(whole, resumed);

    // The same checkpoint with its optimizer state zeroed: another run.
    TrainConfig first = config;
    first.epochs = config.epochs / 2;
    SavedModel saved = ToSavedModel(Train(data.train, nullptr, first));
    for (auto& [name, values] : saved.training->mode.arrays) {
      if (name == "sum_sq" || name.starts_with("velocity/")) {
        std::fill(values.begin(), values.end(), 0.0f);
      }
    }
    const std::string path = TempPath("zeroed.model");
    SaveModel(path, saved);
    TrainConfig rest = config;
    rest.resume_path = path;
    EXPECT_FALSE(SameBits(whole.params, Train(data.train, nullptr, rest).params));
    std::filesystem::remove(path);
  }
}

// What `config` resuming `path` throws ("" if it trains).
std::string ResumeError(const Dataset& train, TrainConfig config, const std::string& path) {
  config.resume_path = path;
  try {
    Train(train, nullptr, config);
    return "";
  } catch (const Error& e) {
    const char* code = e.code() == ErrorCode::kBadConfig  ? "bad config: "
                       : e.code() == ErrorCode::kBadInput ? "bad input: "
                                                          : "another error: ";
    return code + std::string(e.what());
  }
}

// A checkpoint resumes under the --optimizer that wrote it: another one is refused naming the
// flag both ways. A file from before the optimizer was recorded (no "optimizer" field) holds no
// optimizer state: it resumes under sgd as it always did, bit for bit, and is refused under
// adagrad or momentum.
TEST(Checkpoint, AnotherOptimizerOrAFileWithoutOneIsRefused) {
  const SyntheticSplit data = TinyProblem();
  const std::string path = TempPath("optimizer.model");
  TrainConfig adagrad = OptimizerConfig(Algorithm::kHogwild, Optimizer::kAdaGrad);
  TrainConfig sgd = adagrad;
  sgd.optimizer = Optimizer::kSgd;
  adagrad.epochs = sgd.epochs = 1;
  SaveModel(path, ToSavedModel(Train(data.train, nullptr, adagrad)));
  adagrad.epochs = sgd.epochs = 2;
  EXPECT_THAT(ResumeError(data.train, sgd, path),
              ::testing::HasSubstr("bad config: " + path + ": cannot resume: the checkpoint was "
                                   "written with --optimizer adagrad (this run: sgd)"));

  sgd.epochs = 1;
  SavedModel saved = ToSavedModel(Train(data.train, nullptr, sgd));
  SaveModel(path, saved);
  sgd.epochs = 2;
  EXPECT_THAT(ResumeError(data.train, adagrad, path),
              ::testing::HasSubstr("--optimizer sgd (this run: adagrad)"));
  const TrainConfig momentum = OptimizerConfig(Algorithm::kHogwild, Optimizer::kMomentum);
  SaveModel(path, ToSavedModel(Train(data.train, nullptr, momentum)));
  TrainConfig mlp_sgd = OptimizerConfig(Algorithm::kHogwild, Optimizer::kSgd);
  mlp_sgd.model = ModelKind::kMlp;
  mlp_sgd.hidden = {8};
  mlp_sgd.batch = 4;
  mlp_sgd.epochs = 5;
  EXPECT_THAT(ResumeError(data.train, mlp_sgd, path),
              ::testing::HasSubstr("--optimizer momentum (this run: sgd)"));

  SaveModel(path, saved);
  saved.training->optimizer.reset();  // as files written before it was recorded
  SaveModel(path, saved);
  EXPECT_FALSE(LoadModel(path).training->optimizer.has_value());
  EXPECT_THAT(ResumeError(data.train, adagrad, path),
              ::testing::HasSubstr("written with no optimizer state (a file from before corral "
                                   "saved it; this run: --optimizer adagrad)"));
  TrainConfig resumed = sgd;
  resumed.resume_path = path;
  EXPECT_TRUE(SameBits(Train(data.train, nullptr, sgd).params,
                       Train(data.train, nullptr, resumed).params));
  std::filesystem::remove(path);
}

// A damaged optimizer state is refused naming the file and the entry: accumulators of another
// length, a missing velocity, a velocity the run does not keep.
TEST(Checkpoint, DamagedOptimizerStateIsRefused) {
  const SyntheticSplit data = TinyProblem();
  const std::string path = TempPath("damaged_optimizer.model");
  const auto refused = [&](TrainConfig config, SavedModel saved) {
    SaveModel(path, saved);
    config.epochs = 2;
    return ResumeError(data.train, config, path);
  };
  TrainConfig adagrad = OptimizerConfig(Algorithm::kHogwild, Optimizer::kAdaGrad);
  adagrad.epochs = 1;
  SavedModel saved = ToSavedModel(Train(data.train, nullptr, adagrad));
  const std::size_t d = saved.params.size();
  saved.training->mode.arrays.at("sum_sq").pop_back();
  EXPECT_THAT(refused(adagrad, saved),
              ::testing::HasSubstr("bad input: " + path + ": the checkpoint's training state "
                                   "does not fit this run: its array 'sum_sq' holds " +
                                   std::to_string(d - 1) + " floats, this run keeps " +
                                   std::to_string(d)));
  saved.training->mode.arrays.erase("sum_sq");
  EXPECT_THAT(refused(adagrad, saved), ::testing::HasSubstr("it lacks 'sum_sq'"));

  TrainConfig momentum = OptimizerConfig(Algorithm::kDpsgd, Optimizer::kMomentum);
  momentum.epochs = 1;
  saved = ToSavedModel(Train(data.train, nullptr, momentum));
  saved.training->mode.arrays["velocity/2"] = std::vector<float>(saved.params.size());
  EXPECT_THAT(refused(momentum, saved),
              ::testing::HasSubstr("it holds the array 'velocity/2', which this run does not keep"));
  saved.training->mode.arrays.erase("velocity/2");
  saved.training->mode.arrays.erase("velocity/1");
  EXPECT_THAT(refused(momentum, saved), ::testing::HasSubstr("it lacks 'velocity/1'"));
  std::filesystem::remove(path);
}

TEST(Checkpoint, AHogwildPPTokenNoGroupCanHoldIsRefused) {
  const SyntheticSplit data = TinyProblem();
  const TrainConfig config{.algorithm = Algorithm::kHogwildPP, .threads = 2, .epochs = 1,
                           .lr = 0.05f, .pin = Pin::kNone, .group_size = 1};
  SavedModel saved = ToSavedModel(Train(data.train, nullptr, config));
  ASSERT_TRUE(saved.training->mode.counters.contains("token"));
  saved.training->mode.counters["token"] = 7;  // odd: a group mid-mix; and past the 2 groups
  const std::string path = TempPath("token.model");
  SaveModel(path, saved);
  TrainConfig resumed = config;
  resumed.resume_path = path;
  resumed.epochs = 2;
  try {
    Train(data.train, nullptr, resumed);
    ADD_FAILURE() << "a token no group can hold was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find(path + ": the checkpoint's training state does not fit "
                                                "this run: its token 7"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace corral
