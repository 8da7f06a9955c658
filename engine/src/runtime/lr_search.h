// Picking the initial step size when the user gives none (after Bottou's SGD, "determineEta0").
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include <tbb/info.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <corral/dataset.h>
#include <corral/kinds.h>
#include <corral/model.h>
#include <corral/rng.h>
#include <corral/step.h>

#include "engine/src/modes/adagrad_steps.h"
#include "engine/src/modes/linear_step.h"
#include "engine/src/runtime/tsan_handoff.h"

namespace corral::internal {

struct StepSizeSearch {
  float lr = 0;
  // On the sample (AdaGrad: the scored sample), after one pass at the walk's best step size
  // (before the run-length scale and least squares' cap; see below).
  double objective = 0;
};

// Tries step sizes 2^k by one serial SGD pass (mini-batches of `batch`) over a random sample of
// up to SearchOptions::sample_rows rows, each from the model's initial parameters, and scores
// each by the objective on the sample. Like Bottou's SGD it starts at 1 and walks up while the
// objective improves, else down, so it usually tries 3-6 step sizes (within 2^-12 .. 2^6).
// For convex models returns the best scaled down to the run's length (RunLengthShift): the
// best itself for models that declare kConvex = false, and under AdaGrad.
// Deterministic for a seed.
//
// Why scaled by the run's length: the step that wins a single short pass is biased towards large
// steps, while a run ends at a noise floor proportional to its step, and the longer the run the
// more that floor weighs against the progress a large step buys (for a fixed budget of T steps,
// the best constant step of convex SGD falls like 1 / sqrt(T)). So the pass's winner, scored on
// S = the sample's rows, is scaled by sqrt(S / T), T the run's samples (epochs x rows), rounded
// to a power of 2 and never above the winner. Measured (docs/algorithms.md, "The step-size
// search's scale"; bench/step_defaults.py, 2 threads, 10 epochs, grid 2^-6 .. 2^3): no fixed
// factor lands within 1% of the best fixed step on all six sets (ijcnn1 needs 1/8 or less,
// rcv1_subset and sector 1/4 or more), the rule does. The old factor 1/2 is the rule at T = 4S.
//
// `optimizer` is the step the run will take, and the candidates are scored with it: under
// kAdaGrad (a linear model at batch 1, TrainConfig::Validate) each pass takes AdaGrad's steps
// (AdaGradLinearStep) with the accumulators starting at zero, as the run's do, over the same
// walk of 2^k; it returns the best itself, not half (docs/algorithms.md, "AdaGrad": AdaGrad's
// steps shrink on their own, so the noise-floor argument for halving does not hold). Under
// kMomentum (the mlp: dense gradients) each pass takes heavy-ball steps (ApplyMomentumStep,
// factor `momentum`) with the velocity starting at zero, as each worker's does: their
// effective step is about eta / (1 - momentum), which plain SGD's scoring would not see; its
// walk starts at 2^round(log2(1 - momentum)) instead of 1 (below).
//
// Least squares under plain SGD caps the pick at SquaredStableStep over the sample: past it one
// sample's step overshoots and the run diverges, whatever the walk scored (below).
//
// The rows are drawn from a set of `rows` rows (SearchRows); SearchStepSizeOn runs the search on
// `train` given the picked row ids in it, so that a run across ranks can gather the same rows
// from the ranks that hold them and search on the gathered copy (coordinator.h, PlanRun).
constexpr std::uint64_t kSearchStream = 0x5eed;

// What a search steps with: the run's optimizer (and heavy ball's factor under kMomentum), how
// many rows it samples, and how many candidates it may score at once (the run's threads on this
// process: the search runs before they start; at most kMaxSearchLanes). The lanes change how
// long a search takes, never what it picks.
inline constexpr std::size_t kMaxSearchLanes = 4;
struct SearchOptions {
  Optimizer optimizer = Optimizer::kSgd;
  float momentum = 0;
  std::size_t sample_rows = 10'000;
  std::size_t lanes = 1;
  // The samples the run will visit (epochs x rows), which scales a convex model's pick; 0:
  // four samples' worth (a factor 1/2).
  double run_samples = 0;
};

// How many halvings take the best step of one pass over `sample` rows to a run of `run`
// samples: round(log2(run / sample) / 2), at least 0 (see SearchStepSizeOn).
inline int RunLengthShift(double run, std::size_t sample) {
  const double ratio = run / static_cast<double>(std::max<std::size_t>(sample, 1));
  return ratio <= 1 ? 0 : static_cast<int>(std::lround(std::log2(ratio) / 2));
}

// The search's rows of a set of `rows` rows: the sample it steps on and, under AdaGrad, the
// second sample it scores on (empty otherwise). Depends only on (rows, seed, optimizer, model).
struct SearchRows {
  std::vector<std::size_t> picks;
  std::vector<std::size_t> scored;
};
template <typename M>
SearchRows DrawSearchRows(std::size_t rows, std::uint64_t seed, const SearchOptions& options = {}) {
  SearchRows out;
  Rng rng(seed, kSearchStream);
  out.picks.resize(std::min(options.sample_rows, rows));
  for (auto& r : out.picks) r = rng.Below(rows);
  const bool adagrad = kIsLinear<M> && options.optimizer == Optimizer::kAdaGrad;
  out.scored.resize(adagrad ? out.picks.size() : 0);
  Rng scored_rng(seed, kSearchStream + 1);
  for (auto& r : out.scored) r = scored_rng.Below(rows);
  return out;
}

// The drawn rows gathered into one copy: `wanted`, the rows to gather in draw order (picks, then
// scored), and `in_pool`, the same draw as row ids in that copy.
struct SearchPool {
  std::vector<std::size_t> wanted;
  SearchRows in_pool;
};
inline SearchPool PoolOf(const SearchRows& drawn) {
  SearchPool pool;
  pool.wanted = drawn.picks;
  pool.wanted.insert(pool.wanted.end(), drawn.scored.begin(), drawn.scored.end());
  pool.in_pool.picks.resize(drawn.picks.size());
  pool.in_pool.scored.resize(drawn.scored.size());
  std::iota(pool.in_pool.picks.begin(), pool.in_pool.picks.end(), std::size_t{0});
  std::iota(pool.in_pool.scored.begin(), pool.in_pool.scored.end(), drawn.picks.size());
  return pool;
}

// The largest step 2^k at or below 1 / max_r s_r c_r |x_r|^2 over `rows` of `data` (s the
// sample's weight, c its class's): least squares' plain SGD step on row r scales that row's
// residual by 1 - eta s_r c_r |x_r|^2, so it is stable only for eta s_r c_r |x_r|^2 < 2
// (normalized LMS; 1 / |x|^2 fits the row exactly), and the L2 shrink and mini-batches (their
// mean of rows) only make it more stable. On unscaled features (mean 100: |x|^2 ~ 2e4) every
// candidate of the walk down to 2^-12 diverges, which left the search at 2^-12 and the run
// diverging; there this gives 2^-15. Infinite when every row is 0 (nothing to bound).
template <typename Rows>
float SquaredStableStep(const SquaredModel& model, const Dataset& data, const Rows& rows) {
  double most = 0;
  for (const auto r : rows) {
    const SparseRow x = data.Row(r);
    double sq = 0;
    for (std::size_t k = 0; k < x.nnz(); ++k) sq += double{x.value[k]} * x.value[k];
    most = std::max(most, sq * model.ClassWeight(data.Label(r)) * data.Weight(r));
  }
  if (!(most > 0)) return std::numeric_limits<float>::infinity();
  // Finite: each value is a finite float, so |x|^2 stays far below double's range.
  const int k = static_cast<int>(std::floor(-std::log2(most)));
  return std::ldexp(1.0f, std::clamp(k, -126, 127));
}

template <typename M>
StepSizeSearch SearchStepSizeOn(const M& model, const Dataset& train, const SearchRows& rows,
                                std::size_t batch, std::uint64_t seed,
                                const SearchOptions& options = {}) {
  const Optimizer optimizer = options.optimizer;
  const float momentum = options.momentum;
  const std::vector<std::size_t>& picks = rows.picks;
  // A linear model stepping one sample at a time takes the workers' fused step
  // (linear_step.h; on dense rows its wide kernels), about three times the generic path's rate:
  // the step the run itself takes. AdaGrad's rows step one at a time whatever the layout (the
  // run's AdaGradSteps).
  const bool adagrad = kIsLinear<M> && optimizer == Optimizer::kAdaGrad;
  const bool fused = kIsLinear<M> && batch == 1;
  // The sampled rows are gathered into one copy first, which every candidate's pass and scoring
  // then stream through in order. Reading them where they lie instead (a9a's 10,000 picks of
  // 32,561 rows, one random row per step) measured 0.9x the copy's search time on one VM and
  // 1.9x on another, where the candidates' passes ran at half the copy's rate (docs/algorithms.md,
  // "Reading the sampled rows in place, reverted").
  const Dataset sample = train.Gather(picks);
  std::vector<std::uint32_t> order(sample.rows());
  std::iota(order.begin(), order.end(), 0u);

  // AdaGrad's candidates are scored on a second sample of the set, drawn apart from the rows
  // they stepped on: on a set much wider than the sample (the Zipf set: 100,000 features,
  // 10,000 rows) the sample's own objective rewards the large steps that fit its rare
  // features, whose first AdaGrad steps are eta / |g| whatever their frequency (measured in
  // docs/algorithms.md, "AdaGrad"). Gathered into a copy as the picks are: summed over the copy
  // in draw order, the same double sum as row by row where they lie.
  const Dataset scored = rows.scored.empty() ? Dataset() : train.Gather(rows.scored);

  std::vector<float> initial(model.NumParams());
  Rng init_rng(seed, 0);
  model.Init(std::span(initial), init_rng);
  constexpr bool kDense = std::is_same_v<typename M::Grad, DenseGrad>;
  const bool heavy_ball = kDense && optimizer == Optimizer::kMomentum;
  // What one candidate's pass writes. A pass starts every buffer afresh, so candidates on
  // different lanes share only what they read: `initial`, the rows, the model.
  struct Lane {
    std::vector<float> storage;
    std::vector<float> shrink;
    std::vector<float> sum_sq;    // AdaGrad's accumulators
    std::vector<float> velocity;  // heavy ball's
    decltype(model.MakeGrad(sample, batch)) grad;
    decltype(model.MakeWorkspace(batch)) workspace;
  };
  const auto make_lane = [&] {
    return Lane{.storage = std::vector<float>(initial.size()),
                .shrink = {},
                .sum_sq = std::vector<float>(adagrad ? initial.size() : 0),
                .velocity = std::vector<float>(heavy_ball ? initial.size() : 0),
                .grad = model.MakeGrad(sample, batch),
                .workspace = model.MakeWorkspace(batch)};
  };
  const auto objective_after_pass = [&](Lane& lane, int k) {
    const float eta = std::ldexp(1.0f, k);
    std::vector<float>& storage = lane.storage;
    std::copy(initial.begin(), initial.end(), storage.begin());
    std::ranges::fill(lane.sum_sq, 0.0f);
    std::ranges::fill(lane.velocity, 0.0f);
    const Params w(storage);
    const Params accumulators(lane.sum_sq);
    if constexpr (kIsLinear<M>) {
      if (fused) {
        if (!adagrad) ComputeShrink(model, eta, lane.shrink);
        std::ranges::for_each(order, [&](std::size_t r) {
          if (adagrad) {
            AdaGradLinearStep(model, w, accumulators, sample.Row(r), sample.Label(r), sample.Weight(r), eta,
                              storage.size());
          } else {
            LinearStepRow(model, w, sample, r, r, eta, lane.shrink.data(), storage.size());
          }
        });
      }
    }
    for (std::size_t i = 0; !fused && i < order.size(); i += batch) {
      const std::size_t count = std::min(batch, order.size() - i);
      model.Gradient(w, sample, std::span(order).subspan(i, count), lane.grad, lane.workspace);
      if constexpr (kDense) {
        if (heavy_ball) {
          ApplyMomentumStep(w, lane.grad, lane.velocity, eta, momentum);
          continue;
        }
      }
      ApplyStep(w, lane.grad, eta);
    }
    const Dataset& judged = adagrad ? scored : sample;
    const EvalSums sums = model.Evaluate(storage, judged, 0, judged.rows());
    const double objective = sums.loss / sums.rows + model.Regularizer(storage);
    return std::isfinite(objective) ? objective : std::numeric_limits<double>::infinity();
  };

  // The walk's candidates are scored `lanes` at a time, one per thread of the run (it has not
  // started yet), ahead of the walk: each candidate's objective depends on its step alone, so
  // the walk below reads the same numbers in the same order as a serial one and picks the same
  // step, and a candidate scored past the walk's end is discarded. On a9a at 2 threads: 4
  // rounds instead of 8 passes.
  // Never more lanes than oneTBB runs at once on this machine (it warns and runs fewer).
  const std::size_t width = std::clamp<std::size_t>(
      std::min(options.lanes, static_cast<std::size_t>(std::max(tbb::info::default_concurrency(), 1))), 1,
      kMaxSearchLanes);
  std::optional<tbb::task_arena> arena;
  if (width > 1) arena.emplace(static_cast<int>(width));
  std::vector<Lane> lanes;
  lanes.reserve(width);
  lanes.push_back(make_lane());
  // Scores candidates `ks` into `out`: in parallel when there are several and `width` allows,
  // else one after another on the first lane.
  const auto score = [&](std::span<const int> ks, std::span<double> out) {
    if (ks.size() == 1 || width == 1) {
      for (std::size_t i = 0; i < ks.size(); ++i) out[i] = objective_after_pass(lanes[0], ks[i]);
      return;
    }
    while (lanes.size() < ks.size()) lanes.push_back(make_lane());
    // Lane i's buffers and out[i] are written by its task alone; the caller reads out[] after
    // the wait. The hand-offs state oneTBB's (uninstrumented) start and join to TSan.
    TsanHandOff handoff;
    arena->execute([&] {
      tbb::task_group group;
      for (std::size_t i = 1; i < ks.size(); ++i) {
        group.run([&, i] {
          handoff.TaskBegins();
          out[i] = objective_after_pass(lanes[i], ks[i]);
          handoff.TaskEnds();
        });
      }
      out[0] = objective_after_pass(lanes[0], ks[0]);
      group.wait();
    });
    handoff.Joined();
  };

  constexpr int kLowest = -12, kHighest = 6;
  // Heavy ball's walk starts where its effective step eta / (1 - momentum) is about 1, SGD's
  // start: from 1, the first candidates' velocities blow up, and past the stable steps the
  // scores are not unimodal (a collapsed network can score below an unstable one), so a walk
  // from there stops at a false minimum.
  const int start = heavy_ball ? static_cast<int>(std::lround(std::log2(1.0 - momentum))) : 0;
  std::array<double, kMaxSearchLanes> scores{};
  std::array<int, kMaxSearchLanes> ks{};
  ks[0] = start;
  ks[1] = start + 1;
  score(std::span(ks).first(2), std::span(scores).first(2));
  int best_k = start;
  double best = scores[0];
  const double up = scores[1];
  const int direction = up < best ? 1 : -1;
  if (up < best) {
    best_k = start + 1;
    best = up;
  }
  // Keep walking while it improves; when every step so far diverged, keep looking down.
  bool walking = true;
  for (int next = best_k + direction; walking && next >= kLowest && next <= kHighest;) {
    std::size_t n = 0;
    for (; n < width && next >= kLowest && next <= kHighest; ++n, next += direction) ks[n] = next;
    score(std::span(ks).first(n), std::span(scores).first(n));
    for (std::size_t i = 0; i < n; ++i) {
      if (scores[i] >= best && std::isfinite(best)) {
        walking = false;
        break;
      }
      if (scores[i] < best) {
        best = scores[i];
        best_k = ks[i];
      }
    }
  }
  if (!std::isfinite(best)) best_k = kLowest;  // every candidate diverged: be careful
  bool convex = true;
  if constexpr (requires { M::kConvex; }) convex = M::kConvex;
  const double run = options.run_samples > 0 ? options.run_samples : 4.0 * static_cast<double>(picks.size());
  const int shift = convex && !adagrad ? RunLengthShift(run, picks.size()) : 0;
  float lr = std::ldexp(1.0f, std::max(best_k - shift, kLowest));
  // AdaGrad's steps are eta / sqrt(sum g^2), scaled by the gradients themselves: not capped.
  if constexpr (std::is_same_v<M, SquaredModel>) {
    if (!adagrad) {
      lr = std::min(lr, SquaredStableStep(model, sample, order));
    }
  }
  return {lr, best};
}

// The search on `train` itself (one process holds every row).
template <typename M>
StepSizeSearch SearchStepSize(const M& model, const Dataset& train, std::size_t batch,
                              std::uint64_t seed, const SearchOptions& options = {}) {
  return SearchStepSizeOn(model, train, DrawSearchRows<M>(train.rows(), seed, options), batch, seed,
                          options);
}

}  // namespace corral::internal
