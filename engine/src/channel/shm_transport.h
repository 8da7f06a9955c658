// ShmTransport: the Transport (transport.h) between worker threads of one process.
//
// Per directed edge i -> j (DESIGN.md §5):
//   - `slots_per_edge` message buffers ("slots") of one MessageHeader + max_payload bytes,
//     allocated and first-touched by the receiver j in Bind(j), so they sit in j's NUMA node:
//     the sender writes each message once across the interconnect, the reader reads it locally
//     (and reads it more often: decode, mix).
//   - `full`, a Boost.Lockfree spsc_queue i -> j of slot handles (small indices): the messages,
//     in FIFO order. Producer: i (Send). Consumer: j (Receive).
//   - `free`, a spsc_queue j -> i of slot handles i may fill: the sender's credit.
//     Producer: j (Bind, Release). Consumer: i (Send).
//   Each slot is always in exactly one place: `free`, being written by i, `full`, or lent to j.
//   Only handles move through the queues; the payload is copied once, into the slot.
// Per worker: a Doorbell (doorbell.h). Send rings the receiver's bell after pushing to `full`;
// Release and Bind ring the sender's after pushing to `free`; a waiter spins briefly then
// sleeps on its own bell. Hot path (Send, Receive, Release, Try*): no locks, no allocation.
//
// Memory ordering of a slot's contents: the sender writes header and payload, then pushes the
// handle (spsc_queue::push stores its index with release); the receiver pops it (acquire load
// of that index) before reading. Symmetrically, the receiver's last read of a slot is sequenced
// before its push to `free`, and the sender's pop (acquire) precedes its next write: no slot is
// ever read and written at once. Bind's allocation is published the same way: the slot array
// pointer is written before the first handle is pushed to `free`, and read by the sender only
// after it popped one, so a Send that comes before its receiver's Bind simply waits for credit.
//
// Thread safety: as Transport. Construct and destroy while no worker is inside a method (e.g.
// before the Crew starts, after it joined); the queues and bells are built by the constructor.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <boost/lockfree/spsc_queue.hpp>

#include "engine/src/channel/doorbell.h"
#include "engine/src/channel/link.h"
#include "engine/src/channel/transport.h"

namespace corral::internal {

struct ShmTransportConfig {
  int workers = 0;
  // Directed channels (from, to). List both directions of an undirected topology.
  std::vector<std::pair<int, int>> edges;
  // Largest payload of one message, bytes (e.g. the compressor's worst-case encoding).
  std::uint32_t max_payload_bytes = 0;
  // Messages one channel holds before its sender waits. 2 lets a synchronous sender run one
  // round ahead of a slow neighbour; more absorbs jitter at slots * max_payload memory each.
  std::uint32_t slots_per_edge = 2;
  // kRealtime: Receive/TryReceive hold each message until WallSeconds() >= header.due.
  LinkMode link_mode = LinkMode::kVirtual;

  // Throws corral::Error (kBadConfig) naming the first invalid field or edge.
  void Validate() const;
};

class ShmTransport final : public Transport {
 public:
  explicit ShmTransport(const ShmTransportConfig& config);
  ~ShmTransport() override;
  ShmTransport(const ShmTransport&) = delete;
  ShmTransport& operator=(const ShmTransport&) = delete;

  int workers() const override { return workers_; }
  std::uint32_t max_payload() const override { return max_payload_; }
  void Bind(int self) override;
  [[nodiscard]] bool Send(int self, int to, const MessageHeader& header,
                          std::span<const std::byte> payload) override;
  [[nodiscard]] bool TrySend(int self, int to, const MessageHeader& header,
                             std::span<const std::byte> payload) override;
  [[nodiscard]] std::optional<Message> Receive(int self, int from, std::uint64_t round) override;
  [[nodiscard]] std::optional<Message> TryReceive(int self, int from) override;
  void Release(int self, const Message& message) override;
  void Abort() override;
  bool aborted() const override { return stop_.load(std::memory_order_relaxed); }
  ChannelCounters counters(int from, int to) const override;
  ChannelCounters sent_by(int from) const override;
  double WallSeconds() const override;

 private:
  using HandleQueue = boost::lockfree::spsc_queue<std::uint32_t>;

  struct alignas(kCacheLine) Edge {
    Edge(int from_worker, int to_worker, std::uint32_t capacity)
        : from(from_worker), to(to_worker), full(capacity), free(capacity) {}
    const int from;
    const int to;
    HandleQueue full;  // from -> to: filled slots, FIFO
    HandleQueue free;  // to -> from: slots `from` may fill
    // W: the receiver in Bind, before its first push to `free`; R: the sender after a pop
    // from `free` (ordered by the queue), the receiver, and the destructor after all joined.
    std::byte* slots = nullptr;
    // W: the sender only, after each Send (load + store, no RMW: one writer); R: anyone.
    // relaxed: statistics that order nothing (see ChannelCounters). Own line: the receiver
    // never touches it, so the sender's stores do not bounce the queue indices' lines.
    alignas(kCacheLine) std::atomic<std::uint64_t> messages{0};
    std::atomic<std::uint64_t> bytes{0};
  };

  struct alignas(kCacheLine) Port {
    Doorbell bell;                // rung for this worker; waited on by it alone
    std::vector<int> in_edges;    // indices of edges into this worker (fixed after construction)
    std::vector<int> out_edges;   // indices of edges out of it
    bool bound = false;           // W/R: this worker only (Bind)
  };

  Edge& EdgeBetween(int from, int to) const;  // throws kBadConfig if there is no such channel
  std::byte* SlotAt(const Edge& edge, std::uint32_t slot) const {
    return edge.slots + static_cast<std::size_t>(slot) * slot_stride_;
  }
  void Fill(Edge& edge, std::uint32_t slot, const MessageHeader& header,
            std::span<const std::byte> payload);
  Message Take(Edge& edge);                     // pops the front handle (\pre one is there)
  bool Due(const Edge& edge) const;             // realtime: front message's due time has come
  bool HoldUntilDue(Edge& edge);                // realtime: sleeps until then; false: aborted
  void CheckPayload(const Edge& edge, std::size_t bytes) const;

  const int workers_;
  const std::uint32_t max_payload_;
  const std::uint32_t slots_per_edge_;
  const std::size_t slot_stride_;  // bytes per slot: header line + payload, cache-line multiple
  const LinkMode link_mode_;
  const std::chrono::steady_clock::time_point origin_;
  std::vector<std::unique_ptr<Edge>> edges_;
  std::vector<std::int32_t> edge_of_;  // [from * workers + to] -> index in edges_, or -1
  std::unique_ptr<Port[]> ports_;
  // W: Abort() (any thread), then it rings every bell; R: waiters, relaxed: ordered by the
  // bells' release/acquire (doorbell.h), and a stale `false` only costs one more check.
  std::atomic<bool> stop_{false};
};

}  // namespace corral::internal
