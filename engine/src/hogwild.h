// HOGWILD! (Niu et al. 2011): workers update one shared model without locks.
//
// Each worker owns a contiguous shard of the rows, copied by the worker itself after pinning
// (first touch puts it on the worker's NUMA node), visits it in a fresh random order every
// epoch, and applies each sample's sparse gradient to the shared model through Params'
// relaxed loads and stores. The step size decays by lr_decay after every epoch.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <corral/error.h>
#include <corral/rng.h>
#include <corral/train.h>

#include "engine/src/crew.h"
#include "engine/src/evaluate.h"
#include "engine/src/lr_search.h"
#include "engine/src/metrics.h"
#include "engine/src/placement.h"
#include <corral/step.h>

namespace corral::internal {

double PeakRssMb();

// Per-worker state, built and owned by the worker's thread.
template <typename M>
struct alignas(kCacheLine) HogwildWorker {
  Dataset shard;
  std::vector<std::uint32_t> order;
  std::optional<typename M::Grad> grad;
  std::optional<typename M::Workspace> workspace;
  Rng rng;
  std::uint64_t steps = 0;
};

// Mean loss, objective and accuracy or RMSE of a snapshot, as an evaluation point's fields.
template <typename M>
void EvaluateInto(const M& model, std::span<const float> w, const Dataset& train,
                  const Dataset* test, EvalPoint& p) {
  const EvalResult on_train = Evaluate(model, w, train);
  p.train_loss = on_train.loss;
  p.objective = on_train.loss + model.Regularizer(w);
  bool finite = std::isfinite(p.objective);
  if constexpr (M::kTask == Task::kRegression) {
    p.train_rmse = on_train.rmse;
  } else {
    p.train_acc = on_train.accuracy;
  }
  if (test != nullptr) {
    const EvalResult on_test = Evaluate(model, w, *test);
    p.test_loss = on_test.loss;
    finite = finite && std::isfinite(on_test.loss);
    if constexpr (M::kTask == Task::kRegression) {
      p.test_rmse = on_test.rmse;
    } else {
      p.test_acc = on_test.accuracy;
    }
  }
  p.diverged = !finite;
}

template <typename M>
TrainResult RunHogwild(const M& model, const Dataset& train, const Dataset* test,
                       const TrainConfig& config, int threads, float l2,
                       const TrainObserver& observer) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };

  MetricsWriter metrics(config.metrics_path);
  TrainResult result;
  result.threads = threads;
  result.l2 = l2;
  result.lr = config.lr;
  const auto batch = static_cast<std::size_t>(config.batch);
  if (config.lr <= 0) {
    result.lr = SearchStepSize(model, train, batch, config.seed).lr;
    result.lr_searched = true;
  }

  std::vector<float> storage(model.NumParams(), 0.0f);
  Rng init_rng(config.seed, 0);
  model.Init(std::span(storage), init_rng);
  const Params w(storage);
  std::vector<float> snapshot(storage.size());
  std::vector<HogwildWorker<M>> state(static_cast<std::size_t>(threads));
  const std::size_t rows = train.rows();

  const auto setup = [&](int i) {
    HogwildWorker<M>& self = state[static_cast<std::size_t>(i)];
    const std::size_t begin = rows * static_cast<std::size_t>(i) / threads;
    const std::size_t end = rows * static_cast<std::size_t>(i + 1) / threads;
    self.shard = train.Slice(begin, end);
    self.order.resize(self.shard.rows());
    std::iota(self.order.begin(), self.order.end(), 0u);
    self.grad.emplace(model.MakeGrad(self.shard, batch));
    self.workspace.emplace(model.MakeWorkspace(batch));
    self.rng = Rng(config.seed, static_cast<std::uint64_t>(i) + 1);
  };
  const auto epoch = [&](int i, int e, std::atomic<std::uint64_t>& steps) {
    HogwildWorker<M>& self = state[static_cast<std::size_t>(i)];
    const float eta = result.lr * std::pow(config.lr_decay, static_cast<float>(e));
    self.rng.Shuffle(std::span(self.order));
    const std::span<const std::uint32_t> order(self.order);
    constexpr std::uint64_t kReportEvery = 256;
    for (std::size_t k = 0; k < order.size(); k += batch) {
      const std::size_t count = std::min(batch, order.size() - k);
      model.Gradient(w, self.shard, order.subspan(k, count), *self.grad, *self.workspace);
      ApplyStep(w, *self.grad, eta);
      const std::uint64_t before = self.steps;
      self.steps += count;
      // Publish progress about every kReportEvery samples (a relaxed store: a display only).
      if (self.steps / kReportEvery != before / kReportEvery) {
        steps.store(self.steps, std::memory_order_relaxed);
      }
    }
    steps.store(self.steps, std::memory_order_relaxed);
  };

  Placement placement(config.pin, threads);
  Crew crew(threads, placement, setup, epoch);
  result.placement = placement.report();
  if (crew.pinned_workers() < threads) result.placement.pinned = false;

  double train_s = 0;
  bool diverged = false;
  for (int e = 0; e < config.epochs; ++e) {
    const auto epoch_start = Clock::now();
    const std::uint64_t steps_before = crew.steps();
    const auto tick = [&](std::uint64_t steps) {
      if (!observer.on_progress) return;
      const double elapsed = seconds_since(epoch_start);
      const auto done = static_cast<double>(steps - steps_before);
      observer.on_progress({.epoch = e + 1,
                            .epochs = config.epochs,
                            .epoch_fraction = std::min(1.0, done / static_cast<double>(rows)),
                            .step = steps,
                            .wall_s = seconds_since(start),
                            .samples_per_s = elapsed > 0 ? done / elapsed : 0});
    };
    crew.RunEpoch(e, tick);
    const double epoch_s = seconds_since(epoch_start);
    train_s += epoch_s;

    EvalPoint p;
    p.epoch = e + 1;
    p.step = crew.steps();
    p.train_s = train_s;
    p.lr = result.lr * std::pow(config.lr_decay, static_cast<float>(e));
    p.samples_per_s = static_cast<double>(p.step - steps_before) / epoch_s;
    w.CopyTo(snapshot);  // workers are parked: this is a consistent copy
    EvaluateInto(model, std::span<const float>(snapshot), train, test, p);
    p.wall_s = seconds_since(start);
    metrics.Write(p);
    result.history.push_back(p);
    if (p.diverged) {
      diverged = true;
      break;
    }
    if (observer.on_eval && !observer.on_eval(p)) break;
  }

  result.samples = crew.steps();
  result.train_s = train_s;
  result.wall_s = seconds_since(start);
  result.samples_per_s = train_s > 0 ? static_cast<double>(result.samples) / train_s : 0;
  result.peak_rss_mb = PeakRssMb();
  if (diverged) {
    char lr[32];
    std::snprintf(lr, sizeof lr, "%g", static_cast<double>(result.lr));
    throw Error(ErrorCode::kDiverged,
                "training diverged at epoch " + std::to_string(result.history.back().epoch) +
                    ": the loss is not finite; try a smaller --lr (this run started at " + lr +
                    ")");
  }
  result.params = std::move(storage);
  metrics.WriteSummary(config, result);
  return result;
}

}  // namespace corral::internal
