// When a run has diverged: the one rule every mode stops by (README, "Stopping, Ctrl-C and
// resuming"). A run has diverged at an evaluation point when
//   1. a loss is NaN or Inf, or
//   2. the objective is over kBlowUpFactor times max(the starting objective, 1): the model
//      the run started from, evaluated before the first epoch; the floor of 1 keeps a start
//      near 0 (a model that already fits) from making every small wobble a blow-up, or
//   3. the objective rose at each of the last kGrowthEpochs evaluation points, by over
//      kGrowthFactor in all, and is above the starting objective: a slower, steady blow-up
//      caught before it reaches rule 2.
// No converging run meets 2 or 3: SGD with a working step size ends below where it started,
// and its noise does not rise five epochs in a row tenfold.
//
// Thread safety: thread-compatible (the coordinator uses it between epochs).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <span>
#include <string>

#include <corral/train.h>

#include "engine/src/runtime/describe.h"

namespace corral::internal {

class DivergenceGuard {
 public:
  static constexpr double kBlowUpFactor = 1e3;
  static constexpr std::size_t kGrowthEpochs = 5;
  static constexpr double kGrowthFactor = 10;

  explicit DivergenceGuard(double start_objective) : start_(start_objective) {}

  // Why the run has diverged at `now`, following the points `before` it; empty when it has not.
  std::string Check(std::span<const EvalPoint> before, const EvalPoint& now) const {
    if (now.diverged) return "the loss is not finite";
    if (now.objective > kBlowUpFactor * std::max(start_, 1.0)) {
      return "the objective " + Number(now.objective) + " is over " + Number(kBlowUpFactor) +
             " times the starting one (" + Number(start_) + ")";
    }
    if (before.size() < kGrowthEpochs || !(now.objective > start_)) return "";
    const std::span<const EvalPoint> last = before.last(kGrowthEpochs);
    double next = now.objective;
    for (std::size_t k = last.size(); k-- > 0;) {
      if (!(last[k].objective < next)) return "";
      next = last[k].objective;
    }
    if (!(now.objective > kGrowthFactor * last.front().objective)) return "";
    return "the objective grew at each of the last " + std::to_string(kGrowthEpochs) +
           " epochs, from " + Number(last.front().objective) + " to " + Number(now.objective) +
           ", above the starting " + Number(start_);
  }

 private:
  double start_;
};

}  // namespace corral::internal
