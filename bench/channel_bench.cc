// The shared-memory channel (engine/src/channel/shm_transport.h) between two pinned threads:
//   BM_Stream:   thread 0 sends, thread 1 receives, copies the payload out (a decoder's
//                minimum) and releases; messages/s and GB/s for 64 B, 4 KiB and 1 MiB payloads.
//   BM_PingPong: a 64 B message there and back; round trips/s.
//   BM_Exchange: both threads send their vector and mix in the other's every iteration, as a
//                D-PSGD round on a ring of 2 does (2 slots per edge); rounds/s for 124 floats
//                (a9a's model: the floor of `dpsgd --gossip-every 1` there) and 4 KiB.
//
//   build/bench/corral_channel_bench --benchmark_counters_tabular=true
//
// Threads are pinned with Placement (scatter: separate cores where there are any). Uses the
// engine's internal headers: this measures a part, not the public API.
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "engine/src/channel/shm_transport.h"
#include "engine/src/runtime/placement.h"

namespace {

using corral::internal::Message;
using corral::internal::ShmTransport;

// Made before a run's threads start and freed after they end (Setup/Teardown run once per run).
std::unique_ptr<ShmTransport> transport;
std::unique_ptr<corral::internal::Placement> placement;

void MakeTransport(const benchmark::State& state, std::uint32_t slots) {
  transport = std::make_unique<ShmTransport>(corral::internal::ShmTransportConfig{
      .workers = 2,
      .edges = {{0, 1}, {1, 0}},
      .max_payload_bytes = static_cast<std::uint32_t>(state.range(0)),
      .slots_per_edge = slots});
  placement = std::make_unique<corral::internal::Placement>("", corral::Pin::kScatter, 2);
}
void StreamSetup(const benchmark::State& state) { MakeTransport(state, 4); }
void ExchangeSetup(const benchmark::State& state) { MakeTransport(state, 2); }
void PingPongSetup(const benchmark::State& state) { MakeTransport(state, 1); }
void Teardown(const benchmark::State&) {
  transport.reset();
  placement.reset();
}

void BM_Stream(benchmark::State& state) {
  const int self = state.thread_index();
  if (!placement->Bind(self) && self == 0) state.SetLabel("unpinned");
  transport->Bind(self);
  const auto bytes = static_cast<std::size_t>(state.range(0));
  std::vector<std::byte> buffer(bytes, std::byte{1});  // the encoded message, or the decoded one
  std::uint64_t round = 0;
  for (auto _ : state) {
    if (self == 0) {
      if (!transport->Send(0, 1, {.round = round}, buffer)) {
        state.SkipWithError("aborted");
        break;
      }
    } else {
      const std::optional<Message> m = transport->Receive(1, 0, round);
      if (!m) {
        state.SkipWithError("aborted");
        break;
      }
      std::memcpy(buffer.data(), m->payload.data(), m->payload.size());
      benchmark::DoNotOptimize(buffer.data());
      transport->Release(1, *m);
    }
    ++round;
  }
  if (self == 0) {
    state.SetItemsProcessed(state.iterations());
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes));
  }
}
BENCHMARK(BM_Stream)
    ->Setup(StreamSetup)
    ->Teardown(Teardown)
    ->Threads(2)
    ->Arg(64)
    ->Arg(4 << 10)
    ->Arg(1 << 20)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

void BM_PingPong(benchmark::State& state) {
  const int self = state.thread_index();
  const int peer = 1 - self;
  if (!placement->Bind(self) && self == 0) state.SetLabel("unpinned");
  transport->Bind(self);
  std::vector<std::byte> payload(static_cast<std::size_t>(state.range(0)));
  std::uint64_t round = 0;
  for (auto _ : state) {
    // Thread 0 serves, thread 1 answers; each round trip is one iteration of both.
    for (int turn = 0; turn < 2; ++turn) {
      if ((turn == 0) == (self == 0)) {
        if (!transport->Send(self, peer, {.round = round}, payload)) return state.SkipWithError("aborted");
      } else {
        const std::optional<Message> m = transport->Receive(self, peer, round);
        if (!m) return state.SkipWithError("aborted");
        transport->Release(self, *m);
      }
    }
    ++round;
  }
  if (self == 0) state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PingPong)
    ->Setup(PingPongSetup)
    ->Teardown(Teardown)
    ->Threads(2)
    ->Arg(64)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

void BM_Exchange(benchmark::State& state) {
  const int self = state.thread_index();
  const int peer = 1 - self;
  if (!placement->Bind(self) && self == 0) state.SetLabel("unpinned");
  transport->Bind(self);
  const auto floats = static_cast<std::size_t>(state.range(0)) / sizeof(float);
  std::vector<float> x(floats, static_cast<float>(self));
  std::uint64_t round = 0;
  for (auto _ : state) {
    if (!transport->Send(self, peer, {.round = round}, std::as_bytes(std::span<const float>(x)))) {
      return state.SkipWithError("aborted");
    }
    const std::optional<Message> m = transport->Receive(self, peer, round);
    if (!m) return state.SkipWithError("aborted");
    const auto* y = reinterpret_cast<const float*>(m->payload.data());
    for (std::size_t u = 0; u < floats; ++u) x[u] = 0.5f * x[u] + 0.5f * y[u];
    transport->Release(self, *m);
    ++round;
  }
  benchmark::DoNotOptimize(x.data());
  if (self == 0) state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Exchange)
    ->Setup(ExchangeSetup)
    ->Teardown(Teardown)
    ->Threads(2)
    ->Arg(124 * sizeof(float))
    ->Arg(4 << 10)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

}  // namespace

BENCHMARK_MAIN();
