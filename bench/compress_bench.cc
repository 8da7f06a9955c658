// The --compress codecs' speed: one Encode plus one Decode of a d = 1M float vector per
// iteration, reported as GB/s of input floats (bytes_per_second = 4 d per iteration), with the
// message size as a fraction of fp32 (wire_ratio). Encode and Decode are also timed apart.
//
//   build/bench/corral_compress_bench --benchmark_counters_tabular=true
//
// Internal code (engine/src/compress/), so this binary includes from the repository root.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <random>
#include <vector>

#include "engine/src/compress/compressor.h"

namespace {

constexpr std::size_t kDim = 1 << 20;

const std::vector<float>& Input() {
  static const std::vector<float> v = [] {
    std::mt19937_64 gen(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(kDim);
    for (float& f : x) f = normal(gen);
    return x;
  }();
  return v;
}

enum class Part { kBoth, kEncode, kDecode };

void BM_Codec(benchmark::State& state, const char* spec, Part part) {
  const std::vector<float>& v = Input();
  auto c = corral::internal::MakeCompressor(spec, kDim);
  corral::Rng rng(1);
  std::vector<std::byte> message(c->WireBytes(kDim));
  std::vector<float> out(kDim);
  c->Encode(v, message, rng);
  for (auto _ : state) {
    if (part != Part::kDecode) benchmark::DoNotOptimize(c->Encode(v, message, rng));
    if (part != Part::kEncode) c->Decode(message, out);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(kDim * sizeof(float)));
  state.counters["wire_ratio"] =
      static_cast<double>(c->WireBytes(kDim)) / static_cast<double>(kDim * sizeof(float));
}

const char* const kSpecs[] = {"none",      "fp16",    "bf16",         "qsgd:2",  "qsgd:4",
                              "qsgd:8",    "qsgd:16", "quant:4",      "quant:8", "randk:0.01",
                              "topk:0.01", "sign",    "ef:topk:0.01", "ef:sign"};

const int kRegistered = [] {
  for (const char* spec : kSpecs) {
    benchmark::RegisterBenchmark((std::string("EncodeDecode/") + spec).c_str(), BM_Codec, spec,
                                 Part::kBoth)
        ->Unit(benchmark::kMicrosecond);
  }
  for (const char* spec : kSpecs) {
    benchmark::RegisterBenchmark((std::string("Encode/") + spec).c_str(), BM_Codec, spec,
                                 Part::kEncode)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark((std::string("Decode/") + spec).c_str(), BM_Codec, spec,
                                 Part::kDecode)
        ->Unit(benchmark::kMicrosecond);
  }
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();
