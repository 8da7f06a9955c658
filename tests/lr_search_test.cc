// The step-size search (engine/src/runtime/lr_search.h): what it scores, how it walks, and that
// neither its lanes nor a run across ranks change what it picks.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <span>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include <corral/corral.h>

#include "engine/src/modes/adagrad_steps.h"
#include "engine/src/modes/linear_step.h"
#include "engine/src/runtime/lr_search.h"
#include "test_data.h"

namespace corral::internal {
namespace {

// The winner's objective, recomputed from its definition: the sampled rows gathered into a copy,
// one fused pass over it at the winner's step, one Evaluate.
TEST(StepSizeSearch, ScoresTheWinnerByOnePassOverTheSampleBitForBit) {
  const Dataset train = testing::SmallProblem().train;  // 3000 rows
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
    LinearStep(model, Params(w), sample.Row(r), sample.Label(r), sample.Weight(r), eta, shrink.data(), w.size());
  }
  const EvalSums sums = model.Evaluate(w, sample, 0, sample.rows());
  EXPECT_EQ(found.objective, sums.loss / sums.rows + model.Regularizer(w));
}

// Under --optimizer adagrad the search scores each candidate 2^k by one pass of AdaGrad steps
// (accumulators from zero) over the sample, judged on a second sample (stream 0x5eed + 1), and
// returns the best itself. Recomputed here for every k of the grid, independently of the walk:
// the pick is their argmin, and it differs from plain SGD's pick on this problem.
TEST(StepSizeSearch, AdaGradPicksTheArgminOfItsOwnScores) {
  const Dataset train = testing::SmallProblem().train;
  const LogisticModel model(train, 1e-3f);
  const std::uint64_t seed = 11;
  const StepSizeSearch found =
      SearchStepSize(model, train, 1, seed, {.optimizer = Optimizer::kAdaGrad});
  const StepSizeSearch sgd = SearchStepSize(model, train, 1, seed);

  Rng rng(seed, 0x5eed);
  std::vector<std::size_t> picks(train.rows());
  for (auto& r : picks) r = rng.Below(train.rows());
  Rng scored_rng(seed, 0x5eed + 1);
  std::vector<std::size_t> scored(train.rows());
  for (auto& r : scored) r = scored_rng.Below(train.rows());
  const Dataset sample = train.Gather(picks);
  const Dataset judged = train.Gather(scored);
  int best_k = 0;
  double best = std::numeric_limits<double>::infinity();
  for (int k = -12; k <= 6; ++k) {
    std::vector<float> w(model.NumParams(), 0.0f);
    std::vector<float> sum_sq(model.NumParams(), 0.0f);
    for (std::size_t r = 0; r < sample.rows(); ++r) {
      AdaGradLinearStep(model, Params(w), Params(sum_sq), sample.Row(r), sample.Label(r), sample.Weight(r),
                        std::ldexp(1.0f, k), w.size());
    }
    const EvalSums sums = model.Evaluate(w, judged, 0, judged.rows());
    const double objective = sums.loss / sums.rows + model.Regularizer(w);
    if (objective < best) {
      best = objective;
      best_k = k;
    }
  }
  EXPECT_EQ(found.lr, std::ldexp(1.0f, best_k));
  EXPECT_EQ(found.objective, best);
  EXPECT_NE(found.lr, sgd.lr);  // the problem tells the two optimizers apart
}

// Across ranks each rank gathers the drawn rows from the ranks holding them into one copy, in
// draw order (picks, then AdaGrad's scored rows), and searches on it (coordinator.h, PlanRun):
// the same step and objective as the search on the whole set, bit for bit, also for a sample
// of 200 of 3000 rows and for a model the fused step does not take (softmax).
TEST(StepSizeSearch, OnTheGatheredDrawnRowsIsTheSearchOnTheWholeSet) {
  const Dataset train = testing::SmallProblem().train;
  const std::uint64_t seed = 5;
  const auto on_pool = [&](const auto& model, Optimizer optimizer, std::size_t sample) {
    using M = std::remove_cvref_t<decltype(model)>;
    const SearchOptions options{.optimizer = optimizer, .sample_rows = sample};
    const SearchPool pool = PoolOf(DrawSearchRows<M>(train.rows(), seed, options));
    return SearchStepSizeOn(model, train.Gather(pool.wanted), pool.in_pool, 1, seed, options);
  };
  const LogisticModel logistic(train, 1e-3f);
  for (const Optimizer optimizer : {Optimizer::kSgd, Optimizer::kAdaGrad}) {
    for (const std::size_t sample : {std::size_t{200}, std::size_t{10'000}}) {
      const StepSizeSearch whole =
          SearchStepSize(logistic, train, 1, seed, {.optimizer = optimizer, .sample_rows = sample});
      const StepSizeSearch pooled = on_pool(logistic, optimizer, sample);
      EXPECT_EQ(whole.lr, pooled.lr) << sample;
      EXPECT_EQ(whole.objective, pooled.objective) << sample;
    }
  }
  const SoftmaxModel softmax(train, 1e-3f);
  const StepSizeSearch whole = SearchStepSize(softmax, train, 1, seed, {.sample_rows = 200});
  const StepSizeSearch pooled = on_pool(softmax, Optimizer::kSgd, 200);
  EXPECT_EQ(whole.lr, pooled.lr);
  EXPECT_EQ(whole.objective, pooled.objective);
}

// Under --optimizer momentum (the mlp) the search scores each candidate by one pass of
// heavy-ball steps (velocity from zero) over the sample, judged on the sample, and returns the
// best itself (the mlp is not convex). Recomputed here for every k: the walk's pick is the
// argmin of those scores, and smaller than plain SGD's (momentum's effective step is about
// eta / (1 - mu)). A walk from 1, as SGD's, stopped at 2^-1 (0.729) against the argmin 2^-4.
TEST(StepSizeSearch, MomentumPicksTheArgminOfHeavyBallScores) {
  const Dataset train = testing::SmallProblem().train;
  const MlpModel model(train, {8}, 1e-3f);
  const std::uint64_t seed = 5;
  const std::size_t batch = 8;
  const float mu = 0.9f;
  const StepSizeSearch found =
      SearchStepSize(model, train, batch, seed, {.optimizer = Optimizer::kMomentum, .momentum = mu});
  const StepSizeSearch sgd = SearchStepSize(model, train, batch, seed);

  Rng rng(seed, 0x5eed);
  std::vector<std::size_t> picks(train.rows());
  for (auto& r : picks) r = rng.Below(train.rows());
  const Dataset sample = train.Gather(picks);
  std::vector<float> initial(model.NumParams());
  Rng init_rng(seed, 0);
  model.Init(std::span(initial), init_rng);
  std::vector<std::uint32_t> order(sample.rows());
  for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  auto grad = model.MakeGrad(sample, batch);
  auto workspace = model.MakeWorkspace(batch);
  int best_k = 0;
  double best = std::numeric_limits<double>::infinity();
  for (int k = -12; k <= 6; ++k) {
    std::vector<float> w = initial;
    std::vector<float> velocity(w.size(), 0.0f);
    for (std::size_t i = 0; i < order.size(); i += batch) {
      const std::size_t count = std::min(batch, order.size() - i);
      model.Gradient(Params(w), sample, std::span(order).subspan(i, count), grad, workspace);
      ApplyMomentumStep(Params(w), grad, velocity, std::ldexp(1.0f, k), mu);
    }
    const EvalSums sums = model.Evaluate(w, sample, 0, sample.rows());
    const double objective = sums.loss / sums.rows + model.Regularizer(w);
    if (std::isfinite(objective) && objective < best) {
      best = objective;
      best_k = k;
    }
  }
  EXPECT_EQ(found.lr, std::ldexp(1.0f, best_k));
  EXPECT_EQ(found.objective, best);
  EXPECT_LT(found.lr, sgd.lr);
}

// The search scores its walk's candidates `lanes` at a time, in parallel, ahead of the walk. A
// candidate's score depends on its step alone, so every lane count must pick the serial search's
// step with its score, bit for bit: the fused step on a sample of every row and of a fifth, AdaGrad,
// and the generic path (the mlp, with heavy ball and without). A lane count that kept a
// candidate scored past the walk's end, or stopped a round short, would pick another step.
// (Lanes beyond the machine's hardware threads are capped: on 2 cores 3, 4 and 9 run as 2.)
TEST(StepSizeSearch, LanesPickTheSerialSearchsStepBitForBit) {
  const Dataset train = testing::SmallProblem().train;  // 3000 rows
  const LogisticModel linear(train, 1e-3f);
  const MlpModel mlp(train, {8}, 1e-3f);
  struct Case {
    const char* name;
    std::function<StepSizeSearch(std::size_t)> search;
  };
  const std::vector<Case> cases = {
      {"linear, a sample of every row", [&](std::size_t lanes) { return SearchStepSize(linear, train, 1, 11, {.lanes = lanes}); }},
      {"linear, a fifth",  // 600 sampled rows of 3000
       [&](std::size_t lanes) { return SearchStepSize(linear, train, 1, 11, {.sample_rows = 600, .lanes = lanes}); }},
      {"linear, adagrad",
       [&](std::size_t lanes) {
         return SearchStepSize(linear, train, 1, 11, {.optimizer = Optimizer::kAdaGrad, .lanes = lanes});
       }},
      {"mlp, batch 8", [&](std::size_t lanes) { return SearchStepSize(mlp, train, 8, 5, {.lanes = lanes}); }},
      {"mlp, momentum",
       [&](std::size_t lanes) {
         return SearchStepSize(mlp, train, 8, 5,
                               {.optimizer = Optimizer::kMomentum, .momentum = 0.9f, .lanes = lanes});
       }},
  };
  for (const Case& c : cases) {
    const StepSizeSearch serial = c.search(1);
    ASSERT_GT(serial.lr, 0.0f) << c.name;
    for (const std::size_t lanes : {2u, 3u, 4u, 9u}) {  // 9: more than kMaxSearchLanes
      const StepSizeSearch parallel = c.search(lanes);
      EXPECT_EQ(parallel.lr, serial.lr) << c.name << ", " << lanes << " lanes";
      EXPECT_EQ(parallel.objective, serial.objective) << c.name << ", " << lanes << " lanes";
    }
  }
}

// The pick is the pass's winner times sqrt(S / T), S the sample's rows and T the samples one
// model steps through, rounded to a power of 2 (docs/algorithms.md, "The step-size search's
// scale"): T = epochs x rows for hogwild, divided by the workers for a replica mode.
TEST(StepSizeSearch, ScalesThePickToTheRunsLength) {
  EXPECT_EQ(RunLengthShift(5'000, 10'000), 0);  // never above the winner
  EXPECT_EQ(RunLengthShift(10'000, 10'000), 0);
  EXPECT_EQ(RunLengthShift(40'000, 10'000), 1);  // the old factor 1/2
  EXPECT_EQ(RunLengthShift(325'610, 10'000), 3);  // a9a, 10 epochs: log2(32.6) / 2 = 2.5
  EXPECT_EQ(RunLengthShift(499'900, 10'000), 3);  // ijcnn1
  EXPECT_EQ(RunLengthShift(2'000'000, 10'000), 4);  // the Zipf set

  const Dataset train = testing::SmallProblem().train;  // 3000 rows: S = 3000
  const auto lr = [&](Algorithm algorithm, int threads, int epochs) {
    return Train(train, nullptr,
                 {.algorithm = algorithm, .l2 = 1e-3f, .threads = threads, .epochs = epochs,
                  .batch = 1, .seed = 5, .gossip_every = 1})
        .lr;
  };
  const float one_epoch = lr(Algorithm::kHogwild, 1, 1);  // T = S: the winner itself
  ASSERT_GT(one_epoch, 0.0f);
  // 12 epochs: T / S = 12, two halvings, whatever the threads of the shared model.
  EXPECT_EQ(lr(Algorithm::kHogwild, 1, 12), one_epoch / 4);
  EXPECT_EQ(lr(Algorithm::kHogwild, 2, 12), one_epoch / 4);
  // 4 replicas: each steps through 12 x 3000 / 4 samples, T / S = 3, one halving.
  EXPECT_EQ(lr(Algorithm::kDpsgd, 4, 12), one_epoch / 2);
}

// Least squares on unscaled features, as scikit-learn's estimator checks fit them (two columns
// near 100, |x|^2 ~ 2e4): plain SGD is stable only for eta |x|^2 < 2, so every candidate of the
// walk down to its lowest, 2^-12, diverges. Without the cap the search returned 2^-12 and the
// run diverged; with it the pick is the largest 2^k at or below 1 / max s |x|^2 over the
// sample, on a dense and a sparse set alike, and weights lower it.
TEST(StepSizeSearch, CapsLeastSquaresAtTheLargestStableStep) {
  Rng rng(3, 0);
  const std::size_t rows = 100;
  std::vector<float> values(2 * rows), labels(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    values[2 * r] = 99.0f + 2.0f * static_cast<float>(rng.Below(1000)) / 1000.0f;  // 99 .. 101
    values[2 * r + 1] = 99.0f + 2.0f * static_cast<float>(rng.Below(1000)) / 1000.0f;
    labels[r] = 0.04f * values[2 * r] - 0.02f * values[2 * r + 1];
  }
  std::vector<std::uint64_t> row_ptr(rows + 1);
  std::vector<std::uint32_t> index(2 * rows);
  for (std::size_t r = 0; r <= rows; ++r) row_ptr[r] = 2 * r;
  for (std::size_t i = 0; i < index.size(); ++i) index[i] = static_cast<std::uint32_t>(i % 2);
  const Dataset dense = Dataset::Dense(values, labels, 2);
  const Dataset sparse(row_ptr, index, values, labels, 2);
  // |x|^2 lies in [19602, 20402]: 1 / |x|^2 within [2^-15, 2^-14) for every row.
  for (const Dataset* train : {&dense, &sparse}) {
    const SquaredModel model(*train, 0.01f);
    EXPECT_EQ(SearchStepSize(model, *train, 1, 5).lr, std::ldexp(1.0f, -15)) << train->is_dense();
    // Weight 4 on every row: 1 / (4 |x|^2) within [2^-17, 2^-16).
    const Dataset heavy = train->WithWeights(std::vector<float>(rows, 4.0f), "weights");
    EXPECT_EQ(SearchStepSize(SquaredModel(heavy, 0.01f), heavy, 1, 5).lr, std::ldexp(1.0f, -17));
    const TrainResult run = Train(*train, nullptr, {.model = ModelKind::kSquared, .l2 = 0.01f,
                                                    .threads = 1, .epochs = 10, .seed = 5});
    EXPECT_EQ(run.lr, std::ldexp(1.0f, -15));
    EXPECT_TRUE(std::isfinite(run.history.back().objective));
  }
  // A logistic model's pick is not capped (its steps are bounded by the loss's slope).
  const LogisticModel logistic(sparse, 0.01f);
  EXPECT_GT(SearchStepSize(logistic, sparse, 1, 5).lr, std::ldexp(1.0f, -15));
}

}  // namespace
}  // namespace corral::internal
