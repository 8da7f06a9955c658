// The step-size search (engine/src/runtime/lr_search.h): on a small set a linear model reads its
// sampled rows in place, and that must score a candidate exactly as the gathered copy would.
#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include <corral/corral.h>

#include "engine/src/modes/linear_step.h"
#include "engine/src/runtime/lr_search.h"
#include "test_data.h"

namespace corral::internal {
namespace {

// The winner's objective, recomputed the way the search did before it read rows in place: the
// sampled rows gathered into a copy, one fused pass over it, one Evaluate.
TEST(StepSizeSearch, InPlaceRowsScoreAsTheGatheredCopyBitForBit) {
  const Dataset train = testing::SmallProblem().train;  // 3000 rows: read in place
  const LogisticModel model(train, 1e-3f);
  const std::uint64_t seed = 11;
  const StepSizeSearch found = SearchStepSize(model, train, 1, seed);
  ASSERT_GT(found.lr, 0.0f);

  Rng rng(seed, 0x5eed);
  std::vector<std::size_t> picks(train.rows());
  for (auto& r : picks) r = rng.Below(train.rows());
  const Dataset sample = train.Gather(picks);
  const float eta = 2 * found.lr;  // convex: the search returns half the best step
  std::vector<float> w(model.NumParams(), 0.0f);
  std::vector<float> shrink;
  ComputeShrink(model, eta, shrink);
  for (std::size_t r = 0; r < sample.rows(); ++r) {
    LinearStep(model, Params(w), sample.Row(r), sample.Label(r), eta, shrink.data(), w.size());
  }
  const EvalSums sums = model.Evaluate(w, sample, 0, sample.rows());
  EXPECT_EQ(found.objective, sums.loss / sums.rows + model.Regularizer(w));
}

}  // namespace
}  // namespace corral::internal
