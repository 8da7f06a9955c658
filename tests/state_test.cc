// Reproducible runs and the whole training state (issue 17): the round-based modes repeat bit
// for bit whatever the thread scheduling (8 workers on 2 cores), and every mode resumes a
// checkpoint where it stopped.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <corral/corral.h>

#include "test_data.h"

namespace corral {
namespace {

std::string Name(const ::testing::TestParamInfo<Algorithm>& info) {
  std::string name(ToString(info.param));
  for (char& c : name) {
    if (c == '+') c = 'P';
  }
  return name;
}

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
  const SyntheticSplit data = testing::SmallProblem();
  TrainConfig config{.algorithm = GetParam(), .l2 = 1e-2f, .threads = 8, .epochs = 2,
                     .batch = GetParam() == Algorithm::kEcd ? 8 : 1, .lr = 0.05f, .seed = 11,
                     .pin = Pin::kNone};
  if (GetParam() != Algorithm::kEcd) config.gossip_every = 4;
  const TrainResult first = Train(data.train, nullptr, config);
  for (int run = 0; run < 2; ++run) {
    const TrainResult again = Train(data.train, nullptr, config);
    EXPECT_TRUE(SameBits(first.params, again.params)) << "run " << run + 2;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, RoundBased, ::testing::ValuesIn(kRoundBased), Name);

constexpr Algorithm kAll[] = {
    Algorithm::kHogwild, Algorithm::kBuckwild, Algorithm::kLocked, Algorithm::kSync,
    Algorithm::kQsgd,    Algorithm::kDpsgd,    Algorithm::kLocal,  Algorithm::kDcd,
    Algorithm::kEcd,     Algorithm::kChoco,    Algorithm::kAdpsgd, Algorithm::kHogwildPP,
};

bool RoundBasedMode(Algorithm a) {
  return std::find(std::begin(kRoundBased), std::end(kRoundBased), a) != std::end(kRoundBased);
}

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("corral_state_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// A deterministic run of mode `a`: the round-based modes at 3 workers (their result does not
// depend on scheduling), the asynchronous ones at 1 (with more, the interleaving decides).
// Local steps between rounds (gossip every 3) where the mode takes them, so that the saved
// state has rounds in flight across the epoch boundary.
TrainConfig DeterministicConfig(Algorithm a) {
  TrainConfig config{.algorithm = a, .l2 = 1e-2f, .threads = RoundBasedMode(a) ? 3 : 1,
                     .epochs = 4, .lr = 0.05f, .seed = 9, .pin = Pin::kNone};
  if (a == Algorithm::kEcd) {
    config.batch = 8;
  } else if (a != Algorithm::kHogwildPP) {
    config.gossip_every = 3;
  }
  return config;
}

// The state's entries that are measurements (virtual clocks: CPU time), not training state.
ModeState WithoutClocks(ModeState s) {
  std::erase_if(s.counters, [](const auto& c) { return c.first.starts_with("clock/"); });
  return s;
}

class EveryMode : public ::testing::TestWithParam<Algorithm> {};

// E epochs in one go, and E/2, saved to a file, loaded and resumed to E: the same parameters
// and the same whole state (every replica, copy, estimate, counter) bit for bit.
TEST_P(EveryMode, ResumesBitForBitFromACheckpoint) {
  const SyntheticSplit data = testing::SmallProblem();
  const TrainConfig config = DeterministicConfig(GetParam());
  const TrainResult whole = Train(data.train, nullptr, config);

  TrainConfig first_half = config;
  first_half.epochs = config.epochs / 2;
  const std::string path = TempPath(Name({GetParam(), 0}) + ".model");
  SaveModel(path, ToSavedModel(Train(data.train, nullptr, first_half)));
  TrainConfig second_half = config;
  second_half.resume_path = path;
  const TrainResult resumed = Train(data.train, nullptr, second_half);
  std::filesystem::remove(path);

  ASSERT_EQ(resumed.state.epochs_done, config.epochs);
  EXPECT_TRUE(SameBits(whole.params, resumed.params));
  const ModeState a = WithoutClocks(whole.state.mode);
  const ModeState b = WithoutClocks(resumed.state.mode);
  EXPECT_EQ(a.counters, b.counters);
  ASSERT_EQ(a.arrays.size(), b.arrays.size());
  for (const auto& [name, values] : a.arrays) {
    ASSERT_TRUE(b.arrays.contains(name)) << name;
    EXPECT_TRUE(SameBits(values, b.arrays.at(name))) << name;
  }
  // The replica modes' state is more than their mean: every replica is in it.
  if (GetParam() == Algorithm::kDpsgd || GetParam() == Algorithm::kChoco) {
    EXPECT_TRUE(a.arrays.contains("x/2"));
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, EveryMode, ::testing::ValuesIn(kAll), Name);

}  // namespace
}  // namespace corral
