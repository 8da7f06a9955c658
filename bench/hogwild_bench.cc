// HOGWILD!'s hot path: the sparse gather (dot) and scatter (update) on one shared model, at 1
// and 2 threads, and whole training runs at 1 and 2 workers.
//
//   build/bench/corral_bench --benchmark_counters_tabular=true
//
// Report speedups as the ratio of the threads:2 and threads:1 rows of one run.
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include <corral/corral.h>

namespace {

const corral::SyntheticSplit& Data() {
  static const corral::SyntheticSplit data = corral::MakeSyntheticClassification(
      {.rows = 200'000, .features = 50'000, .nnz_per_row = 20, .seed = 1}, 1000);
  return data;
}

// The shared model of BM_SparseStep, made before its threads start and freed after they end.
std::vector<float> shared_storage;
std::unique_ptr<corral::LogisticModel> shared_model;

void SparseStepSetup(const benchmark::State&) {
  shared_storage.assign(Data().train.num_features(), 0.0f);
  shared_model = std::make_unique<corral::LogisticModel>(Data().train, 1e-5f);
}
void SparseStepTeardown(const benchmark::State&) { shared_model.reset(); }

// One SGD step per sample: gather w at the row's indices, compute the gradient, scatter the
// update. Benchmark threads share one model, each visiting its own contiguous rows.
void BM_SparseStep(benchmark::State& state) {
  const corral::Dataset& train = Data().train;
  const corral::Params w(shared_storage);
  corral::SparseGrad grad = shared_model->MakeGrad(train, 1);
  corral::LogisticModel::Workspace workspace;
  const std::size_t per_thread = train.rows() / static_cast<std::size_t>(state.threads());
  const std::size_t begin = per_thread * static_cast<std::size_t>(state.thread_index());
  const std::size_t end = begin + per_thread;
  std::uint32_t r = static_cast<std::uint32_t>(begin);
  for (auto _ : state) {
    shared_model->Gradient(w, train, std::span(&r, 1), grad, workspace);
    corral::ApplyStep(w, grad, 0.1f);
    if (++r == end) r = static_cast<std::uint32_t>(begin);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SparseStep)->Setup(SparseStepSetup)->Teardown(SparseStepTeardown)
    ->Threads(1)->Threads(2)->UseRealTime();

// Whole HOGWILD! epochs through the public API (evaluation included in wall time, so the
// samples/s counter reports the engine's own training rate).
void BM_TrainHogwild(benchmark::State& state) {
  const corral::SyntheticSplit& data = Data();
  const int threads = static_cast<int>(state.range(0));
  double samples_per_s = 0;
  for (auto _ : state) {
    const corral::TrainResult r = corral::Train(
        data.train, nullptr, {.threads = threads, .epochs = 3, .lr = 0.5f, .seed = 1});
    samples_per_s = r.samples_per_s;
    benchmark::DoNotOptimize(r.params.data());
  }
  state.counters["samples_per_s"] = samples_per_s;
  state.counters["workers"] = threads;
}
BENCHMARK(BM_TrainHogwild)->Arg(1)->Arg(2)->UseRealTime()->MeasureProcessCPUTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
