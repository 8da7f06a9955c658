// MpiTransport between ranks (run by ctest under `mpiexec -n 2`): every message arrives once, in
// order, with its bytes; backpressure holds with one buffer per edge; the asynchronous calls
// work across ranks; an Abort on one rank stops the workers of the other.
//
// Worker layout in every test: 4 workers, workers 0-1 on rank 0 and 2-3 on rank 1, so a ring
// 0-1-2-3-0 has the cross-rank edges 1 <-> 2 and 3 <-> 0 and the in-rank edges 0 <-> 1, 2 <-> 3.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include <corral/error.h>

#include "engine/src/channel/mpi_transport.h"

namespace corral::internal {
namespace {

constexpr int kWorkers = 4;

int RankOf(int worker) { return worker / 2; }

int Rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

std::vector<int> Layout() {
  std::vector<int> ranks(kWorkers);
  for (int w = 0; w < kWorkers; ++w) ranks[w] = RankOf(w);
  return ranks;
}

ShmTransportConfig Ring(std::uint32_t slots) {
  ShmTransportConfig config{.workers = kWorkers, .max_payload_bytes = 4096, .slots_per_edge = slots};
  for (int w = 0; w < kWorkers; ++w) {
    config.edges.push_back({w, (w + 1) % kWorkers});
    config.edges.push_back({(w + 1) % kWorkers, w});
  }
  return config;
}

// Message `round` from `from`: a length that varies with the round, filled with a pattern that
// names both, so a message delivered twice, out of order or to the wrong worker is caught.
std::vector<std::byte> Payload(int from, std::uint64_t round) {
  std::vector<std::byte> bytes(8 * ((round * 7 + static_cast<std::uint64_t>(from)) % 40));
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<std::byte>((from * 131 + round * 17 + i) & 0xff);
  }
  return bytes;
}

// Runs body(worker) on one thread per worker of this rank, each bound first.
template <class Body>
void OnLocalWorkers(MpiTransport& transport, Body body) {
  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w) {
    if (RankOf(w) != Rank()) continue;
    threads.emplace_back([&transport, &body, w] {
      transport.Bind(w);
      body(w);
    });
  }
  for (auto& thread : threads) thread.join();
}

class Rounds : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(Rounds, EveryMessageArrivesOnceInOrderWithItsBytes) {
  constexpr std::uint64_t kRounds = 300;
  std::atomic<int> failures{0};
  std::atomic<std::uint64_t> bytes_sent{0};
  {
    MpiTransport transport(Ring(GetParam()), Layout(), MPI_COMM_WORLD);
    OnLocalWorkers(transport, [&](int w) {
      const int left = (w + kWorkers - 1) % kWorkers;
      const int right = (w + 1) % kWorkers;
      for (std::uint64_t round = 0; round < kRounds; ++round) {
        const std::vector<std::byte> mine = Payload(w, round);
        for (int to : {left, right}) {
          if (!transport.Send(w, to, {.round = round, .codec = 7, .due = 0.5}, mine)) {
            failures.fetch_add(1);
            return;
          }
          bytes_sent.fetch_add(mine.size());
        }
        for (int from : {left, right}) {
          std::optional<Message> message = transport.Receive(w, from, round);
          if (!message) {
            failures.fetch_add(1);
            return;
          }
          const std::vector<std::byte> expected = Payload(from, round);
          if (message->header.sender != from || message->header.codec != 7 ||
              message->header.due != 0.5 || message->payload.size() != expected.size() ||
              !std::equal(expected.begin(), expected.end(), message->payload.begin())) {
            failures.fetch_add(1);
          }
          transport.Release(w, *message);
        }
      }
    });
    for (int w = 0; w < kWorkers; ++w) {
      if (RankOf(w) != Rank()) continue;
      EXPECT_EQ(transport.sent_by(w).messages, 2 * kRounds) << "worker " << w;
    }
    std::uint64_t counted = 0;
    for (int w = 0; w < kWorkers; ++w) counted += transport.sent_by(w).bytes;
    EXPECT_EQ(counted, bytes_sent.load()) << "bytes counted on rank " << Rank();
    EXPECT_FALSE(transport.aborted());
  }  // collective: both ranks drain and shut down here
  EXPECT_EQ(failures.load(), 0) << "on rank " << Rank();
}

// One buffer per edge: every Send waits for the receiver's Release (backpressure across ranks).
INSTANTIATE_TEST_SUITE_P(Slots, Rounds, ::testing::Values(1u, 3u));

TEST(Async, TrySendAndTryReceiveDeliverASequenceInOrder) {
  constexpr std::uint64_t kMessages = 2000;
  std::atomic<int> failures{0};
  MpiTransport transport(Ring(2), Layout(), MPI_COMM_WORLD);
  OnLocalWorkers(transport, [&](int w) {
    if (w == 1) {  // rank 0 -> rank 1, never blocking
      for (std::uint64_t sequence = 0; sequence < kMessages;) {
        const std::vector<std::byte> bytes = Payload(w, sequence);
        if (transport.TrySend(w, 2, {.round = sequence}, bytes)) {
          ++sequence;
        } else {
          std::this_thread::yield();
        }
      }
    } else if (w == 2) {
      for (std::uint64_t expected = 0; expected < kMessages;) {
        std::optional<Message> message = transport.TryReceive(w, 1);
        if (!message) {
          std::this_thread::yield();
          continue;
        }
        const std::vector<std::byte> bytes = Payload(1, expected);
        if (message->header.round != expected || message->payload.size() != bytes.size() ||
            !std::equal(bytes.begin(), bytes.end(), message->payload.begin())) {
          failures.fetch_add(1);
        }
        transport.Release(w, *message);
        ++expected;
      }
    }
  });
  EXPECT_EQ(failures.load(), 0) << "on rank " << Rank();
}

TEST(Abort, OneRankStopsTheWorkersOfTheOther) {
  std::atomic<int> unwound{0};
  MpiTransport transport(Ring(2), Layout(), MPI_COMM_WORLD);
  OnLocalWorkers(transport, [&](int w) {
    const int left = (w + kWorkers - 1) % kWorkers;
    const int right = (w + 1) % kWorkers;
    for (std::uint64_t round = 0;; ++round) {
      if (w == 3 && round == 20) {
        transport.Abort();  // a worker of rank 1 fails
        unwound.fetch_add(1);
        return;
      }
      bool ok = true;
      for (int to : {left, right}) ok = ok && transport.Send(w, to, {.round = round}, {});
      for (int from : {left, right}) {
        if (!ok) break;
        std::optional<Message> message = transport.Receive(w, from, round);
        ok = message.has_value();
        if (ok) transport.Release(w, *message);
      }
      if (!ok) {
        unwound.fetch_add(1);
        return;
      }
    }
  });
  EXPECT_EQ(unwound.load(), 2) << "on rank " << Rank();
  EXPECT_TRUE(transport.aborted());
  EXPECT_EQ(transport.aborted_by_peer(), Rank() == 0);
}

TEST(Config, AWorkerOnARankOutsideTheCommunicatorIsRefused) {
  std::vector<int> layout = Layout();
  layout[3] = 5;
  try {
    MpiTransport transport(Ring(2), layout, MPI_COMM_WORLD);
    FAIL() << "accepted a worker on rank 5 of 2";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kBadConfig);
    EXPECT_NE(std::string(error.what()).find("worker 3 is placed on rank 5"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace corral::internal

// Every rank runs every test (each prints its own results); every rank exits non-zero if any
// rank's test failed.
int main(int argc, char** argv) {
  corral::internal::MpiSession session(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any_failed;
}
