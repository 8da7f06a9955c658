// ShmTransport (engine/src/channel/): many workers exchanging many rounds on a ring and a
// complete graph with every message checked (no loss, duplicate or reordering), backpressure
// that never drops (also when messages are given back out of order), Abort waking every waiter,
// counters, realtime holds and misuse errors.
// Workers outnumber the cores on purpose: waits must block, not spin.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <corral/error.h>

#include "engine/src/channel/link.h"
#include "engine/src/channel/shm_transport.h"

namespace corral::internal {
namespace {

using Edges = std::vector<std::pair<int, int>>;

Edges Ring(int n) {
  Edges edges;
  for (int i = 0; i < n; ++i) {
    edges.emplace_back(i, (i + 1) % n);
    edges.emplace_back((i + 1) % n, i);
  }
  return edges;
}

Edges Complete(int n) {
  Edges edges;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i != j) edges.emplace_back(i, j);
    }
  }
  return edges;
}

std::vector<std::vector<int>> OutNeighbours(int n, const Edges& edges) {
  std::vector<std::vector<int>> out(static_cast<std::size_t>(n));
  for (const auto& [from, to] : edges) out[from].push_back(to);
  return out;
}
std::vector<std::vector<int>> InNeighbours(int n, const Edges& edges) {
  std::vector<std::vector<int>> in(static_cast<std::size_t>(n));
  for (const auto& [from, to] : edges) in[to].push_back(from);
  return in;
}

// A payload that says who sent it, for which round, as which message of its channel, and
// whose length and filler bytes follow from those: any mix-up shows.
constexpr std::uint32_t kMaxPayload = 24 + 96;

std::size_t PayloadSize(std::uint64_t sender, std::uint64_t round) {
  return 24 + (sender * 7 + round * 3) % 97;
}

std::byte Filler(std::uint64_t sender, std::uint64_t round, std::size_t k) {
  return static_cast<std::byte>((sender * 131 + round * 31 + k) & 0xFF);
}

std::vector<std::byte> MakePayload(std::uint64_t sender, std::uint64_t round, std::uint64_t seq) {
  std::vector<std::byte> bytes(PayloadSize(sender, round));
  const std::uint64_t stamp[3] = {sender, round, seq};
  std::memcpy(bytes.data(), stamp, sizeof stamp);
  for (std::size_t k = sizeof stamp; k < bytes.size(); ++k) bytes[k] = Filler(sender, round, k);
  return bytes;
}

// Throws (failing the worker, which aborts the transport) unless `message` is exactly what
// `sender` sent as its `seq`-th message on this channel, in `round`.
void Expect(const Message& message, int sender, std::uint64_t round, std::uint64_t seq,
            std::uint16_t codec) {
  auto fail = [&](const std::string& what) {
    throw std::runtime_error("message from " + std::to_string(sender) + " round " +
                             std::to_string(round) + " seq " + std::to_string(seq) + ": " + what);
  };
  if (message.header.sender != sender) fail("header.sender " + std::to_string(message.header.sender));
  if (message.header.round != round) fail("header.round " + std::to_string(message.header.round));
  if (message.header.codec != codec) fail("header.codec");
  if (message.header.due != static_cast<double>(round) + 0.5) fail("header.due");
  if (message.header.bytes != PayloadSize(sender, round) ||
      message.payload.size() != message.header.bytes) {
    fail("payload size " + std::to_string(message.payload.size()));
  }
  if (reinterpret_cast<std::uintptr_t>(message.payload.data()) % kCacheLine != 0) fail("unaligned");
  std::uint64_t stamp[3];
  std::memcpy(stamp, message.payload.data(), sizeof stamp);
  if (stamp[0] != static_cast<std::uint64_t>(sender) || stamp[1] != round || stamp[2] != seq) {
    fail("payload stamp (" + std::to_string(stamp[0]) + ", " + std::to_string(stamp[1]) + ", " +
         std::to_string(stamp[2]) + ")");
  }
  for (std::size_t k = sizeof stamp; k < message.payload.size(); ++k) {
    if (message.payload[k] != Filler(sender, round, k)) fail("filler byte " + std::to_string(k));
  }
}

// Runs fn(w) on n threads. A worker that throws aborts the transport (as an algorithm's worker
// would) so that nobody waits for it; its error becomes a test failure after all joined.
template <class Fn>
void RunWorkers(int n, Transport& transport, Fn fn) {
  std::vector<std::string> errors(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int w = 0; w < n; ++w) {
    threads.emplace_back([&, w] {
      try {
        fn(w);
      } catch (const std::exception& e) {
        errors[w] = e.what();
        transport.Abort();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int w = 0; w < n; ++w) {
    if (!errors[w].empty()) ADD_FAILURE() << "worker " << w << ": " << errors[w];
  }
}

struct RoundsCase {
  const char* name;
  bool complete;  // complete graph, else ring
  int workers;
  std::uint32_t slots;
  int rounds;
};

class SynchronousRounds : public testing::TestWithParam<RoundsCase> {};

// Every worker sends round r to all out-neighbours, then receives round r from all
// in-neighbours (the D-PSGD pattern: no barrier). Each received message must be the next one
// of its channel, unchanged; the counters must equal what was sent.
TEST_P(SynchronousRounds, DeliverEveryMessageOnceInOrder) {
  const RoundsCase& c = GetParam();
  const Edges edges = c.complete ? Complete(c.workers) : Ring(c.workers);
  const auto out = OutNeighbours(c.workers, edges);
  const auto in = InNeighbours(c.workers, edges);
  ShmTransport transport({.workers = c.workers, .edges = edges, .max_payload_bytes = kMaxPayload,
                          .slots_per_edge = c.slots});
  std::atomic<std::uint64_t> received{0};
  RunWorkers(c.workers, transport, [&](int w) {
    transport.Bind(w);
    std::vector<std::uint64_t> sent_seq(static_cast<std::size_t>(c.workers), 0);
    std::vector<std::uint64_t> next_seq(static_cast<std::size_t>(c.workers), 0);
    std::uint64_t got = 0;
    for (std::uint64_t r = 0; r < static_cast<std::uint64_t>(c.rounds); ++r) {
      for (int j : out[w]) {
        const auto payload = MakePayload(static_cast<std::uint64_t>(w), r, sent_seq[j]++);
        const MessageHeader header{.round = r, .codec = 7, .due = static_cast<double>(r) + 0.5};
        if (!transport.Send(w, j, header, payload)) throw std::runtime_error("aborted in Send");
      }
      for (int j : in[w]) {
        const std::optional<Message> m = transport.Receive(w, j, r);
        if (!m) throw std::runtime_error("aborted in Receive");
        Expect(*m, j, r, next_seq[j]++, 7);
        transport.Release(w, *m);
        ++got;
      }
    }
    received.fetch_add(got, std::memory_order_relaxed);
  });
  EXPECT_FALSE(transport.aborted());
  const auto rounds = static_cast<std::uint64_t>(c.rounds);
  EXPECT_EQ(received.load(), edges.size() * rounds);
  for (const auto& [from, to] : edges) {
    std::uint64_t bytes = 0;
    for (std::uint64_t r = 0; r < rounds; ++r) bytes += PayloadSize(static_cast<std::uint64_t>(from), r);
    const ChannelCounters counted = transport.counters(from, to);
    EXPECT_EQ(counted.messages, rounds) << from << " -> " << to;
    EXPECT_EQ(counted.bytes, bytes) << from << " -> " << to;
  }
  for (int w = 0; w < c.workers; ++w) {
    std::uint64_t bytes = 0;
    for (std::uint64_t r = 0; r < rounds; ++r) bytes += PayloadSize(static_cast<std::uint64_t>(w), r);
    EXPECT_EQ(transport.sent_by(w).messages, out[w].size() * rounds);
    EXPECT_EQ(transport.sent_by(w).bytes, out[w].size() * bytes);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Graphs, SynchronousRounds,
    testing::Values(RoundsCase{"Ring8OneSlot", false, 8, 1, 1000},
                    RoundsCase{"Ring16", false, 16, 2, 1000},
                    RoundsCase{"Complete8OneSlot", true, 8, 1, 200},
                    RoundsCase{"Complete12", true, 12, 3, 150}),
    [](const testing::TestParamInfo<RoundsCase>& param) { return param.param.name; });

// Asynchronous use: TrySend / TryReceive only, each worker draining its in-channels between
// sends (a cycle of blocking senders would deadlock). Sequence numbers must arrive complete
// and in order per channel.
TEST(AsynchronousChannels, TryCallsDeliverEverySequenceNumberInOrder) {
  constexpr int kWorkers = 10;
  constexpr std::uint64_t kMessages = 600;
  const Edges edges = Ring(kWorkers);
  const auto out = OutNeighbours(kWorkers, edges);
  const auto in = InNeighbours(kWorkers, edges);
  ShmTransport transport({.workers = kWorkers, .edges = edges, .max_payload_bytes = kMaxPayload,
                          .slots_per_edge = 2});
  RunWorkers(kWorkers, transport, [&](int w) {
    transport.Bind(w);
    std::vector<std::uint64_t> sent(out[w].size(), 0);
    std::vector<std::uint64_t> got(in[w].size(), 0);
    for (bool done = false; !done;) {
      bool progress = false;
      done = true;
      for (std::size_t k = 0; k < out[w].size(); ++k) {
        if (sent[k] == kMessages) continue;
        done = false;
        const auto payload = MakePayload(static_cast<std::uint64_t>(w), sent[k], sent[k]);
        const MessageHeader header{.round = sent[k], .codec = 3,
                                   .due = static_cast<double>(sent[k]) + 0.5};
        if (transport.TrySend(w, out[w][k], header, payload)) {
          ++sent[k];
          progress = true;
        }
      }
      for (std::size_t k = 0; k < in[w].size(); ++k) {
        while (std::optional<Message> m = transport.TryReceive(w, in[w][k])) {
          Expect(*m, in[w][k], got[k], got[k], 3);
          transport.Release(w, *m);
          ++got[k];
          progress = true;
        }
        if (got[k] != kMessages) done = false;
      }
      if (transport.aborted()) throw std::runtime_error("aborted");
      if (!progress) std::this_thread::yield();
    }
  });
  for (const auto& [from, to] : edges) EXPECT_EQ(transport.counters(from, to).messages, kMessages);
}

// A full channel makes TrySend refuse and Send wait; a slow receiver still gets everything.
TEST(Backpressure, FullChannelWaitsAndNeverDrops) {
  constexpr std::uint64_t kMessages = 1500;
  ShmTransport transport({.workers = 2, .edges = {{0, 1}}, .max_payload_bytes = kMaxPayload,
                          .slots_per_edge = 1});
  const MessageHeader first{.round = 0, .codec = 1, .due = 0.5};
  // No credit before the receiver has bound its buffers.
  EXPECT_FALSE(transport.TrySend(0, 1, first, MakePayload(0, 0, 0)));
  std::atomic<bool> saw_full{false};
  RunWorkers(2, transport, [&](int w) {
    if (w == 1) {
      transport.Bind(1);
      // Do not consume until the sender has seen the channel full: TrySend's refusal is certain.
      while (!saw_full.load(std::memory_order_acquire)) {
        if (transport.aborted()) return;
        std::this_thread::yield();
      }
      for (std::uint64_t r = 0; r < kMessages; ++r) {
        const std::optional<Message> m = transport.Receive(1, 0, r);
        if (!m) throw std::runtime_error("aborted in Receive");
        Expect(*m, 0, r, r, 1);
        transport.Release(1, *m);
        if (r % 8 == 0) std::this_thread::yield();  // a slow reader
      }
      return;
    }
    if (!transport.Send(0, 1, first, MakePayload(0, 0, 0))) throw std::runtime_error("aborted");
    const MessageHeader second{.round = 1, .codec = 1, .due = 1.5};
    if (transport.TrySend(0, 1, second, MakePayload(0, 1, 1))) {
      throw std::runtime_error("TrySend succeeded on a full channel of one slot");
    }
    saw_full.store(true, std::memory_order_release);
    for (std::uint64_t r = 1; r < kMessages; ++r) {
      const MessageHeader header{.round = r, .codec = 1, .due = static_cast<double>(r) + 0.5};
      if (!transport.Send(0, 1, header, MakePayload(0, r, r))) throw std::runtime_error("aborted");
    }
  });
  EXPECT_EQ(transport.counters(0, 1).messages, kMessages);
}

// Messages given back out of order: credit returns in the order they were sent (a slot
// released before an older one waits for it), and no message is lost or overwritten while lent.
// One thread plays both ends (the calls name their worker; one thread per worker is not needed).
TEST(Backpressure, OutOfOrderReleaseCreditsInSendingOrder) {
  constexpr std::uint32_t kSlots = 3;
  ShmTransport transport({.workers = 2, .edges = {{0, 1}}, .max_payload_bytes = kMaxPayload,
                          .slots_per_edge = kSlots});
  transport.Bind(1);
  std::uint64_t next = 0;  // the next message's round (= its sequence number)
  const auto send = [&] {
    const MessageHeader header{.round = next, .codec = 2, .due = static_cast<double>(next) + 0.5};
    const bool sent = transport.TrySend(0, 1, header, MakePayload(0, next, next));
    if (sent) ++next;
    return sent;
  };
  const auto receive = [&](std::uint64_t seq) {
    const std::optional<Message> m = transport.TryReceive(1, 0);
    EXPECT_TRUE(m.has_value()) << "message " << seq;
    if (m) Expect(*m, 0, seq, seq, 2);
    return m.value_or(Message{});
  };
  for (std::uint32_t k = 0; k < kSlots; ++k) ASSERT_TRUE(send());
  EXPECT_FALSE(send());  // full
  const Message m0 = receive(0);
  const Message m1 = receive(1);
  const Message m2 = receive(2);
  transport.Release(1, m2);
  transport.Release(1, m1);
  EXPECT_FALSE(send()) << "credit for messages 1 and 2 came back before message 0";
  // The lent message 0 is intact although its successors' slots were given back.
  Expect(m0, 0, 0, 0, 2);
  transport.Release(1, m0);
  for (std::uint32_t k = 0; k < kSlots; ++k) EXPECT_TRUE(send()) << "slot " << k;
  EXPECT_FALSE(send());
  // Once more around the ring, released in the order 4, 3, 5.
  const Message m3 = receive(3);
  const Message m4 = receive(4);
  transport.Release(1, m4);
  EXPECT_FALSE(send());
  transport.Release(1, m3);
  EXPECT_TRUE(send());  // message 6 into message 3's slot
  EXPECT_TRUE(send());  // message 7 into message 4's
  EXPECT_FALSE(send());
  const Message m5 = receive(5);
  transport.Release(1, m5);
  for (std::uint64_t seq = 6; seq < next; ++seq) transport.Release(1, receive(seq));
  EXPECT_FALSE(transport.TryReceive(1, 0).has_value());
  EXPECT_EQ(transport.counters(0, 1).messages, next);
}

// Abort wakes workers blocked in Receive (no message will come) and in Send (no credit will
// come), and every later wait fails at once. The test finishing is the proof of no hang.
TEST(Abort, WakesEveryWaiter) {
  constexpr int kWorkers = 12;
  ShmTransport transport({.workers = kWorkers, .edges = Ring(kWorkers),
                          .max_payload_bytes = kMaxPayload, .slots_per_edge = 1});
  std::atomic<int> about_to_wait{0};
  std::atomic<int> woken{0};
  RunWorkers(kWorkers + 1, transport, [&](int w) {
    if (w == kWorkers) {
      // The coordinator aborts once every worker is at (or in) its endless wait. Waiting a
      // little longer makes it likely they sleep in the kernel by then; either way they must
      // return.
      while (about_to_wait.load(std::memory_order_acquire) < kWorkers) std::this_thread::yield();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      transport.Abort();
      return;
    }
    transport.Bind(w);
    const int right = (w + 1) % kWorkers;
    if (w % 2 == 0) {
      // Odd workers never receive: the first message fills the one slot, the second waits.
      const MessageHeader header{.round = 0};
      if (!transport.Send(w, right, header, MakePayload(0, 0, 0))) {
        throw std::runtime_error("first Send failed");
      }
      about_to_wait.fetch_add(1, std::memory_order_release);
      if (transport.Send(w, right, header, MakePayload(0, 0, 0))) {
        throw std::runtime_error("second Send succeeded");
      }
    } else if (about_to_wait.fetch_add(1, std::memory_order_release),
               transport.Receive(w, right, 0)) {  // the even right neighbour never sends left
      throw std::runtime_error("Receive returned a message nobody sent");
    }
    woken.fetch_add(1, std::memory_order_relaxed);
    // After the abort nothing waits any more.
    if (transport.Receive(w, right, 0) || transport.Send(w, right, {}, {})) {
      throw std::runtime_error("a wait after Abort succeeded");
    }
  });
  EXPECT_EQ(woken.load(), kWorkers);
  EXPECT_TRUE(transport.aborted());
}

// A worker that fails mid-run aborts the transport (RunWorkers does as an algorithm would):
// its neighbours, waiting for its next round, return instead of hanging.
TEST(Abort, FailingWorkerReleasesItsNeighbours) {
  constexpr int kWorkers = 8;
  const Edges edges = Complete(kWorkers);
  ShmTransport transport({.workers = kWorkers, .edges = edges, .max_payload_bytes = kMaxPayload});
  std::atomic<int> quit{0};
  RunWorkers(kWorkers, transport, [&](int w) {
    transport.Bind(w);
    for (std::uint64_t r = 0;; ++r) {
      if (w == 3 && r == 20) {  // fails: as an algorithm's worker would, it aborts and leaves
        transport.Abort();
        return;
      }
      for (int j = 0; j < kWorkers; ++j) {
        if (j != w && !transport.Send(w, j, {.round = r}, {})) {
          quit.fetch_add(1);
          return;
        }
      }
      for (int j = 0; j < kWorkers; ++j) {
        if (j == w) continue;
        std::optional<Message> m = transport.Receive(w, j, r);
        if (!m) {
          quit.fetch_add(1);
          return;
        }
        transport.Release(w, *m);
      }
    }
  });
  EXPECT_EQ(quit.load(), kWorkers - 1);
  EXPECT_EQ(transport.counters(3, 0).messages, 20u);
}

// Realtime link mode: a message is not handed out before its due wall time.
TEST(RealtimeMode, HoldsMessagesUntilDue) {
  ShmTransport transport({.workers = 2, .edges = {{0, 1}}, .max_payload_bytes = 8,
                          .slots_per_edge = 2, .link_mode = LinkMode::kRealtime});
  transport.Bind(1);
  const double due = transport.WallSeconds() + 0.02;
  ASSERT_TRUE(transport.Send(0, 1, {.round = 0, .due = due}, {}));
  const std::optional<Message> m = transport.Receive(1, 0, 0);
  ASSERT_TRUE(m.has_value());
  EXPECT_GE(transport.WallSeconds(), due);
  EXPECT_EQ(m->header.due, due);
  transport.Release(1, *m);

  // Due in 100 s: TryReceive does not hand it out, and a held Receive returns on Abort.
  ASSERT_TRUE(transport.Send(0, 1, {.round = 1, .due = transport.WallSeconds() + 100}, {}));
  EXPECT_FALSE(transport.TryReceive(1, 0).has_value());
  std::optional<Message> held;
  std::thread receiver([&] { held = transport.Receive(1, 0, 1); });
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  transport.Abort();
  receiver.join();
  EXPECT_FALSE(held.has_value());
}

// Virtual link mode end to end: a star's centre stamps each copy with LinkModel's delivery
// time, and each leaf's clock moves to it on receipt (1 MB at 10 Mbit/s is 0.8 s; sends queue).
TEST(VirtualClock, LeavesOfAStarAdvanceToTheirDeliveryTimes) {
  constexpr int kWorkers = 8;
  Edges edges;
  for (int leaf = 1; leaf < kWorkers; ++leaf) edges.emplace_back(0, leaf);
  ShmTransport transport({.workers = kWorkers, .edges = edges, .max_payload_bytes = 16});
  LinkModel centre(ParseLinkSpec("latency=5ms,bandwidth=10Mbit"), kWorkers);
  RunWorkers(kWorkers, transport, [&](int w) {
    transport.Bind(w);
    if (w == 0) {
      for (int leaf = 1; leaf < kWorkers; ++leaf) {
        const double due = centre.Send(/*t=*/0.0, leaf, /*bytes=*/1'000'000);
        if (!transport.Send(0, leaf, {.round = 0, .due = due}, {})) throw std::runtime_error("aborted");
      }
      return;
    }
    double clock = 0.25;  // this leaf's own compute so far
    const std::optional<Message> m = transport.Receive(w, 0, 0);
    if (!m) throw std::runtime_error("aborted");
    clock = LinkModel::Arrive(clock, m->header.due);
    transport.Release(w, *m);
    if (std::abs(clock - (0.8 * w + 0.005)) > 1e-12) {
      throw std::runtime_error("leaf clock " + std::to_string(clock));
    }
  });
}

TEST(Misuse, WrongRoundIsAWorkerFailure) {
  ShmTransport transport({.workers = 2, .edges = {{0, 1}}, .max_payload_bytes = 8});
  transport.Bind(1);
  ASSERT_TRUE(transport.Send(0, 1, {.round = 0}, {}));
  ASSERT_TRUE(transport.Send(0, 1, {.round = 2}, {}));
  const std::optional<Message> m = transport.Receive(1, 0, 0);
  ASSERT_TRUE(m.has_value());
  transport.Release(1, *m);
  try {
    (void)transport.Receive(1, 0, 1);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kWorkerFailed);
    EXPECT_NE(std::string(e.what()).find("channel 0 -> 1: worker 1 expected round 1 but the next "
                                         "message is of round 2"),
              std::string::npos)
        << e.what();
  }
}

TEST(Misuse, NoChannelAndOversizedPayloadAreBadConfig) {
  ShmTransport transport({.workers = 3, .edges = {{0, 1}}, .max_payload_bytes = 8});
  transport.Bind(1);
  const std::vector<std::byte> nine(9);
  auto code_and_text = [&](auto&& call) -> std::pair<ErrorCode, std::string> {
    try {
      call();
    } catch (const Error& e) {
      return {e.code(), e.what()};
    }
    return {ErrorCode::kIo, "no error"};
  };
  auto [code1, text1] = code_and_text([&] { (void)transport.Send(0, 2, {}, {}); });
  EXPECT_EQ(code1, ErrorCode::kBadConfig);
  EXPECT_NE(text1.find("no channel 0 -> 2"), std::string::npos) << text1;
  auto [code2, text2] = code_and_text([&] { (void)transport.TrySend(0, 1, {}, nine); });
  EXPECT_EQ(code2, ErrorCode::kBadConfig);
  EXPECT_NE(text2.find("payload of 9 bytes exceeds the maximum of 8"), std::string::npos) << text2;
  auto [code3, text3] = code_and_text([&] { (void)transport.TryReceive(1, 2); });
  EXPECT_NE(text3.find("no channel 2 -> 1"), std::string::npos) << text3;
  EXPECT_EQ(transport.counters(0, 1).messages, 0u);
}

TEST(Misuse, ConfigErrorsNameTheProblem) {
  auto message = [](ShmTransportConfig config) {
    try {
      config.Validate();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({.workers = 0}), "transport: workers must be >= 1, got 0");
  EXPECT_EQ(message({.workers = 2, .slots_per_edge = 0}), "transport: slots_per_edge must be >= 1, got 0");
  EXPECT_EQ(message({.workers = 2, .edges = {{0, 2}}}),
            "transport: edge (0, 2) names a worker outside 0..1");
  EXPECT_EQ(message({.workers = 2, .edges = {{1, 1}}}),
            "transport: edge (1, 1) is a self-loop (a worker needs no channel to itself)");
  EXPECT_EQ(message({.workers = 2, .edges = {{0, 1}, {1, 0}, {0, 1}}}),
            "transport: edge (0, 1) listed twice");
  EXPECT_EQ(message({.workers = 2, .edges = {{0, 1}, {1, 0}}}), "no error");
}

}  // namespace
}  // namespace corral::internal
