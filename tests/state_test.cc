// Reproducible runs and the whole training state (issue 17): the round-based modes repeat bit
// for bit whatever the thread scheduling (8 workers on 2 cores), and every mode resumes a
// checkpoint where it stopped.
#include <cstring>
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

}  // namespace
}  // namespace corral
