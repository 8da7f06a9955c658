// --lr-schedule and --warmup: the step of each epoch exactly, each schedule converging to the
// full-batch optimum, the metrics' step the schedule's, and every bad setting refused.
#include <cmath>
#include <numbers>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <corral/corral.h>

#include "logistic_oracle.h"
#include "expect_bad_config.h"
#include "test_data.h"

namespace corral {
namespace {

TrainConfig Schedule(LrSchedule schedule, int epochs, double warmup = 0) {
  return {.epochs = epochs, .lr_schedule = schedule, .warmup = warmup};
}

// Epoch -> step, written out from the definitions (train.h); exact where the value is a
// float, to the float's rounding where it is irrational.
TEST(LrSchedule, StepOfEachEpoch) {
  TrainConfig exp = Schedule(LrSchedule::kExp, 4);
  exp.lr_decay = 0.5f;
  EXPECT_EQ(EpochStepSize(exp, 2.0f, 0), 2.0f);
  EXPECT_EQ(EpochStepSize(exp, 2.0f, 1), 1.0f);
  EXPECT_EQ(EpochStepSize(exp, 2.0f, 3), 0.25f);

  const TrainConfig inv_sqrt = Schedule(LrSchedule::kInvSqrt, 10);
  EXPECT_EQ(EpochStepSize(inv_sqrt, 2.0f, 0), 2.0f);
  EXPECT_FLOAT_EQ(EpochStepSize(inv_sqrt, 2.0f, 1), 2.0f / std::sqrt(2.0f));
  EXPECT_EQ(EpochStepSize(inv_sqrt, 2.0f, 3), 1.0f);
  EXPECT_EQ(EpochStepSize(inv_sqrt, 2.0f, 8), 2.0f / 3.0f);

  const TrainConfig cosine = Schedule(LrSchedule::kCosine, 4);
  EXPECT_EQ(EpochStepSize(cosine, 2.0f, 0), 2.0f);
  EXPECT_FLOAT_EQ(EpochStepSize(cosine, 2.0f, 1), 1.0f + std::cos(std::numbers::pi_v<float> / 4));
  EXPECT_FLOAT_EQ(EpochStepSize(cosine, 2.0f, 2), 1.0f);
  EXPECT_FLOAT_EQ(EpochStepSize(cosine, 2.0f, 3), 1.0f - std::cos(std::numbers::pi_v<float> / 4));
  EXPECT_GT(EpochStepSize(cosine, 2.0f, 3), 0.0f);  // the last epoch still moves

  // Warm-up over W = 3 epochs: (e + 1) / 4 of the schedule's step, then the schedule alone.
  TrainConfig warm = Schedule(LrSchedule::kExp, 8, 3);
  warm.lr_decay = 1.0f;
  EXPECT_EQ(WarmupEpochs(warm), 3.0);
  EXPECT_EQ(EpochStepSize(warm, 2.0f, 0), 0.5f);
  EXPECT_EQ(EpochStepSize(warm, 2.0f, 1), 1.0f);
  EXPECT_EQ(EpochStepSize(warm, 2.0f, 2), 1.5f);
  EXPECT_EQ(EpochStepSize(warm, 2.0f, 3), 2.0f);
  // A fraction of the run: 0.25 of 8 epochs is 2; with cosine the factor multiplies its step.
  const TrainConfig fraction = Schedule(LrSchedule::kCosine, 8, 0.25);
  EXPECT_EQ(WarmupEpochs(fraction), 2.0);
  EXPECT_FLOAT_EQ(EpochStepSize(fraction, 2.0f, 1),
                  2.0f / 3.0f * (1.0f + std::cos(std::numbers::pi_v<float> / 8)));
  EXPECT_EQ(LrScheduleSpec(fraction), "cosine over 8 epochs, warm-up 2 epochs");
  EXPECT_EQ(LrScheduleSpec(TrainConfig{}), "exp, decay 0.9 per epoch");
}

// Every schedule, at one thread, ends within 1% of the full-batch optimum; the metrics' step
// of each epoch is the schedule's.
TEST(LrSchedule, EachScheduleReachesTheFullBatchOptimum) {
  const SyntheticSplit data = testing::SmallProblem();
  const double optimum = testing::OptimalObjective(data.train, 1e-2);
  for (const LrSchedule s : {LrSchedule::kExp, LrSchedule::kInvSqrt, LrSchedule::kCosine}) {
    TrainConfig c = Schedule(s, 12, 2);
    c.l2 = 1e-2f;
    c.threads = 1;
    c.lr = 0.5f;
    c.seed = 3;
    const TrainResult r = Train(data.train, nullptr, c);
    const double reached = r.history.back().objective;
    EXPECT_GE(reached, optimum - 1e-6) << ToString(s);
    EXPECT_LE(reached, optimum * 1.01) << ToString(s) << ", optimum " << optimum;
    for (const EvalPoint& p : r.history) {
      EXPECT_EQ(p.lr, EpochStepSize(c, 0.5f, p.epoch - 1)) << ToString(s) << " epoch " << p.epoch;
    }
  }
}

TEST(LrSchedule, BadSettingsAreRefusedNamingTheFlag) {
  EXPECT_EQ(ParseLrSchedule("inv-sqrt"), LrSchedule::kInvSqrt);
  EXPECT_EQ(ToString(LrSchedule::kCosine), "cosine");
  try {
    ParseLrSchedule("linear");
    ADD_FAILURE() << "parsed";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("--lr-schedule"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("exp, inv-sqrt, cosine"));
  }
  testing::ExpectBadConfig(Schedule(LrSchedule::kExp, 10, -1), "--warmup must be a number >= 0");
  testing::ExpectBadConfig(Schedule(LrSchedule::kExp, 10, NAN), "--warmup must be a number >= 0");
  testing::ExpectBadConfig(Schedule(LrSchedule::kExp, 4, 4), "--warmup of 4 epochs leaves no epoch");
  TrainConfig decayed = Schedule(LrSchedule::kCosine, 4);
  decayed.lr_decay = 0.5f;
  testing::ExpectBadConfig(decayed, "--lr-decay applies to --lr-schedule exp only, not --lr-schedule cosine");
  Schedule(LrSchedule::kInvSqrt, 10, 0.5).Validate();  // 5 epochs of warm-up: fine
}

}  // namespace
}  // namespace corral
