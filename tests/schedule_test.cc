// --schedule seeded:TAU (engine/src/modes/seeded_schedule.h): the delay queue applies each update
// exactly TAU-bounded steps late, a seeded run repeats bit for bit, TAU 0 is serial SGD over the
// seeded interleaving (checked against a loop written here), and TAU > 0 is another run.
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <corral/corral.h>
#include <corral/linear.h>
#include <corral/params.h>
#include <corral/rng.h>
#include <corral/step.h>

#include "engine/src/modes/seeded_schedule.h"

namespace corral {
namespace {

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Each step t pushes its own number with a seeded delay d_t <= TAU; what Release and Drain
// hand back must be step t at step t + d_t, steps due together oldest first.
TEST(DelayQueue, AppliesEveryUpdateAtItsDueStepOldestFirst) {
  for (const int tau : {0, 1, 5, 64}) {
    internal::DelayQueue<std::uint64_t> queue(tau, 0);
    Rng rng(3, 0);
    constexpr std::uint64_t kSteps = 2000;
    std::vector<std::uint64_t> due(kSteps);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> applied;  // (step computed, applied at)
    std::uint64_t now = 0;
    const auto apply = [&](const std::uint64_t& computed) { applied.emplace_back(computed, now); };
    for (std::uint64_t t = 0; t < kSteps; ++t) {
      now = t;
      queue.Slot(t) = t;
      const std::uint64_t d = rng.Below(static_cast<std::uint64_t>(tau) + 1);
      due[t] = t + d;
      queue.Push(t, d);
      queue.Release(t, apply);
    }
    // Drain: as if the steps after the last ran without computing.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> drained;
    queue.Drain(kSteps, [&](const std::uint64_t& computed) { drained.emplace_back(computed, 0); });
    for (auto& d : drained) d.second = due[d.first];
    applied.insert(applied.end(), drained.begin(), drained.end());

    ASSERT_EQ(applied.size(), kSteps) << "TAU " << tau;
    for (std::size_t k = 0; k < applied.size(); ++k) {
      const auto [computed, at] = applied[k];
      EXPECT_EQ(at, due[computed]) << "TAU " << tau << ", step " << computed;
      if (k > 0) {  // in due order, and oldest first among steps due together
        const auto [before, before_at] = applied[k - 1];
        EXPECT_TRUE(before_at < at || (before_at == at && before < computed))
            << "TAU " << tau << ": step " << before << " then " << computed;
      }
    }
  }
}

SyntheticSplit Problem() {
  return MakeSyntheticClassification({.rows = 800, .features = 50, .nnz_per_row = 6, .seed = 5}, 0);
}

// 4 workers on storage order (--shuffle off, so that each worker's order is its shard as
// stored), a constant step: what the serial reference below can follow.
TrainConfig SeededConfig(int tau) {
  return TrainConfig{.algorithm = Algorithm::kHogwild,
                     .l2 = 1e-2f,
                     .threads = 4,
                     .epochs = 2,
                     .lr = 0.1f,
                     .lr_decay = 1.0f,
                     .seed = 21,
                     .pin = Pin::kNone,
                     .shuffle = Shuffle::kOff,
                     .seeded_tau = tau};
}

// Serial SGD written out: each epoch, the interleaving stream picks the next worker with
// probability (its samples left) / (all samples left), and that worker's next row takes one
// gradient step, applied at once.
std::vector<float> SerialReference(const Dataset& train, const TrainConfig& config) {
  const LogisticModel model(train, *config.l2);
  std::vector<float> w(model.NumParams(), 0.0f);
  const Params params{std::span<float>(w)};
  SparseGrad grad = model.MakeGrad(train, 1);
  LogisticModel::Workspace workspace;
  const auto workers = static_cast<std::size_t>(config.threads);
  for (int epoch = 0; epoch < config.epochs; ++epoch) {
    std::vector<std::uint64_t> next(workers), end(workers);
    std::uint64_t left = 0;
    for (std::size_t v = 0; v < workers; ++v) {
      next[v] = train.rows() * v / workers;
      end[v] = train.rows() * (v + 1) / workers;
      left += end[v] - next[v];
    }
    Rng interleaving = internal::InterleavingRng(config.seed, epoch);
    for (; left > 0; --left) {
      std::uint64_t r = interleaving.Below(left);
      std::size_t v = 0;
      while (r >= end[v] - next[v]) {
        r -= end[v] - next[v];
        ++v;
      }
      const auto row = static_cast<std::uint32_t>(next[v]++);
      model.Gradient(params, train, std::span<const std::uint32_t>(&row, 1), grad, workspace);
      ApplyStep(params, grad, config.lr);
    }
  }
  return w;
}

class Seeded : public ::testing::TestWithParam<int> {};

// Two runs agree bit for bit: the OS interleaves the crew's 4 threads differently each time,
// and the result must not care.
TEST_P(Seeded, TwoRunsAgreeBitForBit) {
  const SyntheticSplit data = Problem();
  TrainConfig config = SeededConfig(GetParam());
  config.shuffle = Shuffle::kEpoch;  // the workers' shuffled orders, re-laid out
  const TrainResult first = Train(data.train, nullptr, config);
  const TrainResult second = Train(data.train, nullptr, config);
  EXPECT_TRUE(SameBits(first.params, second.params));
  EXPECT_EQ(first.samples, 2 * data.train.rows());
}

INSTANTIATE_TEST_SUITE_P(Tau, Seeded, ::testing::Values(0, 8, 64));

// buckwild under the schedule: its steps split into a coefficient read when taken and a
// rounded write when due; repeatable bit for bit (sparse and dense rows), and TAU matters.
TEST(SeededSchedule, BuckwildRepeatsBitForBitAndFeelsTau) {
  const SyntheticSplit sparse = Problem();
  const SyntheticSplit dense =
      MakeSyntheticClassification({.rows = 400, .features = 12, .seed = 8, .dense = true}, 0);
  for (const Dataset* data : {&sparse.train, &dense.train}) {
    TrainConfig config = SeededConfig(8);
    config.algorithm = Algorithm::kBuckwild;
    config.shuffle = Shuffle::kIndex;
    const TrainResult first = Train(*data, nullptr, config);
    const TrainResult second = Train(*data, nullptr, config);
    EXPECT_TRUE(SameBits(first.params, second.params)) << data->name();
    config.seeded_tau = 0;
    EXPECT_FALSE(SameBits(first.params, Train(*data, nullptr, config).params)) << data->name();
  }
}

TEST(SeededSchedule, TauZeroIsSerialSgdOverTheSeededInterleaving) {
  const SyntheticSplit data = Problem();
  const TrainConfig config = SeededConfig(0);
  const TrainResult run = Train(data.train, nullptr, config);
  EXPECT_TRUE(SameBits(run.params, SerialReference(data.train, config)));
}

// Staleness changes the run (the interleaving is the same: only the reads differ), and a larger
// bound changes it again; a test that could not tell TAU apart would pass all of the above.
TEST(SeededSchedule, StaleReadsChangeTheResult) {
  const SyntheticSplit data = Problem();
  const TrainResult fresh = Train(data.train, nullptr, SeededConfig(0));
  const TrainResult stale = Train(data.train, nullptr, SeededConfig(8));
  const TrainResult staler = Train(data.train, nullptr, SeededConfig(64));
  EXPECT_FALSE(SameBits(fresh.params, stale.params));
  EXPECT_FALSE(SameBits(stale.params, staler.params));
  EXPECT_EQ(stale.samples, fresh.samples);
}

// The summary says how the run was scheduled.
TEST(SeededSchedule, TheSummaryNamesTheSchedule) {
  const SyntheticSplit data = Problem();
  const TrainResult run = Train(data.train, nullptr, SeededConfig(8));
  bool found = false;
  for (const auto& [label, text] : run.summary) {
    if (label == "schedule") found = text.find("TAU 8") != std::string::npos;
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(ScheduleSpec(SeededConfig(8)), "seeded:8");
  EXPECT_EQ(ScheduleSpec(TrainConfig{}), "free");
}

std::string ConfigError(const TrainConfig& config) {
  try {
    config.Validate();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
    return e.what();
  }
  return "";
}

TEST(SeededSchedule, SpellingsAndModesWithoutItAreRefusedNamingTheFlag) {
  EXPECT_EQ(ParseSchedule("free"), std::nullopt);
  EXPECT_EQ(ParseSchedule("seeded:0"), 0);
  EXPECT_EQ(ParseSchedule("seeded:64"), 64);
  for (const char* bad : {"seeded", "seeded:", "seeded:-1", "seeded:1.5", "seeded:65537",
                          "seeded:8x", "Seeded:8", "fifo"}) {
    try {
      ParseSchedule(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
      EXPECT_NE(std::string(e.what()).find("--schedule '" + std::string(bad) + "'"),
                std::string::npos)
          << e.what();
    }
  }
  TrainConfig config = SeededConfig(8);
  config.seeded_tau = kMaxSeededTau + 1;
  EXPECT_NE(ConfigError(config).find("--schedule"), std::string::npos);
  config.seeded_tau = 8;
  config.algorithm = Algorithm::kDpsgd;
  EXPECT_NE(ConfigError(config).find("dpsgd is round-based"), std::string::npos)
      << ConfigError(config);
  for (const Algorithm a : {Algorithm::kLocked, Algorithm::kAdpsgd, Algorithm::kHogwildPP}) {
    config.algorithm = a;
    EXPECT_NE(ConfigError(config).find("has no seeded schedule"), std::string::npos) << ToString(a);
  }
}

}  // namespace
}  // namespace corral
