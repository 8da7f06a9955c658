// The MPI transport between two ranks against the shared-memory channel between two threads,
// in one run (issue #18's bench):
//
//   mpiexec -n 2 build/bench/corral_mpi_channel_bench [seconds per case, default 0.5]
//   (as root add --allow-run-as-root; on 2 cores add --oversubscribe)
//
// Stream: worker 0 sends messages of 1 KiB, 64 KiB and 1 MiB to worker 1, which copies each
// payload out (a decoder's minimum) and releases it; 4 buffers per edge. Ping-pong: 64 bytes
// there and back (the floor of one gossip round). With MPI, worker 0 lives on rank 0 and worker 1
// on rank 1 (one thread each, beside each rank's progress thread); with shared memory both are
// threads of rank 0 while rank 1 waits, asleep (MPI's own barrier polls, which on a machine with
// few cores would take one from the two threads measured). Rank 0 prints messages/s, GB/s and
// the ratio MPI/shm.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/src/channel/mpi_transport.h"
#include "engine/src/channel/shm_transport.h"

namespace {

using corral::internal::Message;
using corral::internal::Transport;
using Clock = std::chrono::steady_clock;

corral::internal::ShmTransportConfig Pair(std::uint32_t payload) {
  return {.workers = 2, .edges = {{0, 1}, {1, 0}}, .max_payload_bytes = payload, .slots_per_edge = 4};
}

// What worker w does in one case; returns messages moved (stream) or round trips (ping-pong).
// Worker 0 decides when to stop (after `seconds`) and tells worker 1 through the message's round
// field (round 0 ends), so both ends stop together without another channel.
std::uint64_t Work(Transport& transport, int w, std::size_t bytes, bool ping_pong, double seconds) {
  std::vector<std::byte> payload(bytes, std::byte{1});
  std::vector<std::byte> sink(bytes);
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  std::uint64_t count = 0;
  if (w == 0) {
    for (std::uint64_t sequence = 1;; ++sequence) {
      const bool last = Clock::now() >= end;
      if (!transport.Send(0, 1, {.round = last ? 0 : sequence}, payload)) return count;
      if (ping_pong) {
        std::optional<Message> reply = transport.Receive(0, 1, last ? 0 : sequence);
        if (!reply) return count;
        transport.Release(0, *reply);
      }
      if (last) return count;
      ++count;
    }
  }
  while (true) {
    std::optional<Message> message = transport.TryReceive(1, 0);
    if (!message) {
      std::this_thread::yield();
      continue;
    }
    const std::uint64_t round = message->header.round;
    std::memcpy(sink.data(), message->payload.data(), message->payload.size());
    transport.Release(1, *message);
    if (ping_pong && !transport.Send(1, 0, {.round = round}, {})) return count;
    if (round == 0) return count;
    ++count;
  }
}

struct Result {
  double per_second = 0;
  double gb_per_second = 0;
};

Result Measure(Transport& transport, std::span<const int> here, std::size_t bytes, bool ping_pong,
               double seconds) {
  std::uint64_t moved = 0;
  double elapsed = 0;
  std::vector<std::thread> threads;
  for (int w : here) {
    threads.emplace_back([&, w] {
      transport.Bind(w);
      const auto start = Clock::now();
      const std::uint64_t count = Work(transport, w, bytes, ping_pong, seconds);
      if (w == 0) {
        moved = count;
        elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const double rate = elapsed > 0 ? static_cast<double>(moved) / elapsed : 0;
  return {rate, rate * static_cast<double>(bytes) / 1e9};
}

// MPI_Barrier, waited for with sleeps instead of MPI's polling.
void SleepingBarrier() {
  MPI_Request barrier = MPI_REQUEST_NULL;
  MPI_Ibarrier(MPI_COMM_WORLD, &barrier);
  for (int done = 0; MPI_Test(&barrier, &done, MPI_STATUS_IGNORE), done == 0;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

int main(int argc, char** argv) {
  corral::internal::MpiSession session(&argc, &argv);
  if (session.ranks() != 2) {
    if (session.rank() == 0) std::fprintf(stderr, "run with mpiexec -n 2\n");
    return 2;
  }
  const double seconds = argc > 1 ? std::atof(argv[1]) : 0.5;
  const int rank = session.rank();
  if (rank == 0) {
    std::printf("%-10s %9s | %12s %9s | %12s %9s | %9s\n", "case", "payload", "MPI msgs/s",
                "MPI GB/s", "shm msgs/s", "shm GB/s", "MPI/shm");
  }
  struct Case {
    const char* name;
    std::size_t bytes;
    bool ping_pong;
  };
  for (const Case c : {Case{"stream", 1 << 10, false}, Case{"stream", 64 << 10, false},
                       Case{"stream", 1 << 20, false}, Case{"ping-pong", 64, true}}) {
    Result mpi;
    {
      corral::internal::MpiTransport transport(Pair(static_cast<std::uint32_t>(c.bytes)),
                                               std::vector<int>{0, 1}, MPI_COMM_WORLD);
      const int mine[] = {rank};
      mpi = Measure(transport, mine, c.bytes, c.ping_pong, seconds);
    }
    Result shm;
    if (rank == 0) {
      corral::internal::ShmTransport transport(Pair(static_cast<std::uint32_t>(c.bytes)));
      const int both[] = {0, 1};
      shm = Measure(transport, both, c.bytes, c.ping_pong, seconds);
      std::printf("%-10s %8zuB | %12.0f %9.3f | %12.0f %9.3f | %9.3f\n", c.name, c.bytes,
                  mpi.per_second, mpi.gb_per_second, shm.per_second, shm.gb_per_second,
                  shm.per_second > 0 ? mpi.per_second / shm.per_second : 0.0);
      std::fflush(stdout);
    }
    SleepingBarrier();
  }
  return 0;
}
