// ShmTransport: the Transport (transport.h) between worker threads of one process.
//
// Per directed edge i -> j (DESIGN.md §5), a ring of `slots_per_edge` = S message buffers
// ("slots"), each one MessageHeader line + max_payload bytes, allocated and first-touched by the
// receiver j in Bind(j), so they sit in j's NUMA node: the sender writes each message once
// across the interconnect, the reader reads it locally (and more often: decode, mix).
// Message n (counted from 0 on the edge) goes into slot n mod S. Three counters move it:
//   - the slot's `ticket`, the first word of its header line: the sender stores n + 1 (release)
//     once the message is written; the receiver waits for that value (acquire) to take it.
//     The flag and the header share the line the receiver reads anyway.
//   - `granted`: the receiver's credit, S + the number of messages it has given back in order
//     (release); the sender may fill message n once n < granted (acquire).
//   - `sent` (the sender's own) and `taken` (the receiver's own): plain counters.
// Each slot is always in exactly one state: free (its last message given back), being written
// by i, published (ticketed, not yet taken), or lent to j. A message released out of order is
// noted and credited when the older ones come back: credit returns in sending order.
// Why not a pair of queues of slot handles (what this was: Boost.Lockfree spsc_queue `full`
// i -> j and `free` j -> i): each message then moved four queue indices and two handle cells
// between the cores besides its own lines (docs/algorithms.md, "Tickets and asymmetric
// fences", has what each change measured).
// Per worker: a Doorbell (doorbell.h). Send rings the receiver's bell after the ticket;
// Release and Bind ring the sender's after `granted`; a waiter spins briefly then sleeps on
// its own bell. Hot path (Send, Receive, Release, Try*): no locks, no allocation.
//
// Take prefetches the first lines of the payload it lends out, so they cross together.
//
// Memory ordering of a slot's contents: the sender writes header and payload, then stores the
// ticket with release; the receiver loads it with acquire before reading. Symmetrically, the
// receiver's last read of a slot is sequenced before its release store of `granted`, and the
// sender's acquire load of `granted` precedes its next write of the slot: no slot is ever read
// and written at once. Bind's allocation is published the same way: the slot array pointer is
// written before `granted` first becomes S, and read by the sender only after it saw that, so
// a Send that comes before its receiver's Bind simply waits for credit.
//
// Thread safety: as Transport. Construct and destroy while no worker is inside a method (e.g.
// before the Crew starts, after it joined); the edges and bells are built by the constructor.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

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
  struct alignas(kCacheLine) Edge {
    Edge(int from_worker, int to_worker, std::uint32_t slots_per_edge)
        : from(from_worker), to(to_worker), early(slots_per_edge, 0) {}
    const int from;
    const int to;
    // W: the receiver in Bind, before `granted` first becomes nonzero; R: the sender after an
    // acquire load of `granted` saw credit, the receiver, and the destructor after all joined.
    std::byte* slots = nullptr;
    // The sender's line. `sent`: W/R the sender only (messages written). `messages`, `bytes`:
    // W the sender only (load + store, no RMW: one writer), R anyone; relaxed: statistics that
    // order nothing (see ChannelCounters).
    alignas(kCacheLine) std::uint64_t sent = 0;
    std::atomic<std::uint64_t> messages{0};
    std::atomic<std::uint64_t> bytes{0};
    // The receiver's line, W/R by the receiver only: messages taken, messages given back in
    // order, and early[s] = 1 for a lent slot s given back before an older one.
    alignas(kCacheLine) std::uint64_t taken = 0;
    std::uint64_t returned = 0;
    std::vector<std::uint8_t> early;
    // W: the receiver (Bind, Release; release: the slots it gave back were read before);
    // R: the sender (acquire, before writing a slot). Own line: the sender polls it.
    alignas(kCacheLine) std::atomic<std::uint64_t> granted{0};
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
  std::byte* FrontSlot(const Edge& edge) const {  // the receiver's next message's slot
    return SlotAt(edge, static_cast<std::uint32_t>(edge.taken % slots_per_edge_));
  }
  bool HasCredit(const Edge& edge) const;  // the sender may fill message `sent`
  bool Arrived(const Edge& edge) const;    // the receiver's next message is published
  void Fill(Edge& edge, const MessageHeader& header, std::span<const std::byte> payload);
  Message Take(Edge& edge);                // takes the next message (\pre it arrived)
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
