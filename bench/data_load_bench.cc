// Loading speed: ijcnn1.t (13.6 MB of LIBSVM text) parsed with 1 and 2 threads, and the same
// data loaded from the binary cache; MB/s of text for both (the cache row's rate is "text MB
// served per second", so the two rows' ratio is the cache's speedup).
//
//   build/bench/corral_data_bench --benchmark_counters_tabular=true
//   bench/data_load.py          # adds scikit-learn's load_svmlight_file and peak memory
//
// $CORRAL_DATA_DIR overrides ../shared/data; a missing file skips the benchmarks.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <corral/cache.h>
#include <corral/load.h>

namespace {

std::string DataFile() {
  const char* env = std::getenv("CORRAL_DATA_DIR");
  const std::filesystem::path dir =
      env != nullptr && *env != '\0' ? env : CORRAL_SOURCE_DIR "/../shared/data";
  return (dir / "ijcnn1" / "ijcnn1.t").string();
}

void BM_LoadLibsvm(benchmark::State& state) {
  const std::string path = DataFile();
  if (!std::filesystem::exists(path)) {
    state.SkipWithError((path + " not present").c_str());
    return;
  }
  const auto bytes = static_cast<double>(std::filesystem::file_size(path));
  const int threads = static_cast<int>(state.range(0));
  for (auto _ : state) {
    const corral::Dataset d =
        corral::LoadDataset(path, {.format = corral::DataFormat::kLibsvm, .threads = threads});
    benchmark::DoNotOptimize(d.nnz());
  }
  state.counters["MB/s"] = benchmark::Counter(bytes * 1e-6, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_LoadLibsvm)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime()
    ->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);

void BM_LoadCache(benchmark::State& state) {
  const std::string path = DataFile();
  if (!std::filesystem::exists(path)) {
    state.SkipWithError((path + " not present").c_str());
    return;
  }
  const std::string cache =
      (std::filesystem::temp_directory_path() / "corral_bench_ijcnn1.t.cache").string();
  corral::WriteCache(corral::LoadDataset(path), cache);
  const auto bytes = static_cast<double>(std::filesystem::file_size(path));
  const int threads = static_cast<int>(state.range(0));
  for (auto _ : state) {
    const corral::Dataset d = corral::ReadCache(cache, threads);
    benchmark::DoNotOptimize(d.nnz());
  }
  state.counters["MB/s"] = benchmark::Counter(bytes * 1e-6, benchmark::Counter::kIsIterationInvariantRate);
  std::filesystem::remove(cache);
}
BENCHMARK(BM_LoadCache)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime()
    ->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
