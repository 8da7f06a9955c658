// The divergence rule (engine/src/divergence.h): NaN, a blow-up far above the start, steady
// growth; and histories of runs that converge, however noisily, never trip it.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include <corral/train.h>

#include "engine/src/runtime/divergence.h"

namespace corral {
namespace {

using internal::DivergenceGuard;

// The reason the guard gives at the last of `objectives`, the others coming before it.
std::string Verdict(double start, const std::vector<double>& objectives) {
  std::vector<EvalPoint> points;
  for (const double o : objectives) {
    EvalPoint p;
    p.epoch = static_cast<int>(points.size()) + 1;
    p.objective = o;
    p.diverged = !std::isfinite(o);
    points.push_back(p);
  }
  const EvalPoint now = points.back();
  points.pop_back();
  return DivergenceGuard(start).Check(points, now);
}

TEST(DivergenceGuard, ANonFiniteLossIsDivergence) {
  EXPECT_EQ(Verdict(0.69, {0.5, std::numeric_limits<double>::quiet_NaN()}), "the loss is not finite");
  EXPECT_EQ(Verdict(0.69, {std::numeric_limits<double>::infinity()}), "the loss is not finite");
}

TEST(DivergenceGuard, AnObjectiveFarAboveTheStartIsDivergence) {
  const std::string why = Verdict(0.6931, {2.9e45});
  EXPECT_NE(why.find("the objective 2.9e+45 is over 1000 times the starting one (0.6931)"),
            std::string::npos) << why;
  // The floor of 1: a start near 0 does not make a small objective a blow-up...
  EXPECT_EQ(Verdict(1e-9, {0.5}), "");
  // ...but 1000 is still far too much.
  EXPECT_NE(Verdict(1e-9, {1001}), "");
  // A large start (squared loss on big labels) scales the bound.
  EXPECT_EQ(Verdict(2e6, {5e8}), "");
  EXPECT_NE(Verdict(2e6, {2.1e9}), "");
}

TEST(DivergenceGuard, SteadyGrowthAboveTheStartIsDivergence) {
  const std::string why = Verdict(0.69, {0.6, 1.0, 1.8, 3.2, 5.0, 7.1});
  EXPECT_NE(why.find("grew at each of the last 5 epochs, from 0.6 to 7.1"), std::string::npos) << why;
}

TEST(DivergenceGuard, GrowthThatIsNotSteadyOrNotAboveTheStartIsNot) {
  // One dip in the last five: not steady.
  EXPECT_EQ(Verdict(0.69, {0.6, 1.0, 0.9, 3.2, 5.0, 7.1}), "");
  // Rising five times but less than tenfold.
  EXPECT_EQ(Verdict(0.69, {0.8, 1.0, 1.5, 2.0, 3.0, 7.9}), "");
  // Rising tenfold, but still below where the run started.
  EXPECT_EQ(Verdict(5.0, {0.01, 0.02, 0.04, 0.08, 0.16, 0.32}), "");
  // Too few epochs to tell.
  EXPECT_EQ(Verdict(0.69, {0.6, 1.0, 1.8, 3.2, 7.1}), "");
}

TEST(DivergenceGuard, ConvergingRunsNeverTrip) {
  // A run that converges with noise around its optimum, for 200 epochs.
  std::vector<double> objectives;
  const DivergenceGuard guard(0.6931);
  std::vector<EvalPoint> before;
  for (int e = 0; e < 200; ++e) {
    EvalPoint p;
    p.epoch = e + 1;
    p.objective = 0.3 + 0.4 * std::exp(-0.3 * e) + 0.01 * std::sin(1.7 * e);
    EXPECT_EQ(guard.Check(before, p), "") << "epoch " << p.epoch;
    before.push_back(p);
  }
}

}  // namespace
}  // namespace corral
