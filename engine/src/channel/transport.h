// Transport: the messages between replica workers (DESIGN.md §5), whatever carries them.
// ShmTransport (shm_transport.h) carries them between threads of one process; an MPI
// transport can implement the same interface later. Algorithms (D-PSGD, DCD, ECD, CHOCO,
// AD-PSGD, ...) see only this file.
//
// The model. Workers 0..n-1; one channel per directed edge `from -> to` of the topology (an
// undirected graph has both directions). A channel is FIFO: messages arrive in the order they
// were sent. A message is a MessageHeader plus up to max_payload() bytes (e.g. a compressor's
// encoding). The transport owns the buffers: Receive lends one out until Release gives it back,
// and a sender whose channel has no free buffer waits (backpressure); nothing is ever dropped.
//
// Use by worker `self` (every call names its caller, so one object serves all workers):
//
//   setup, on self's own thread (before or after its neighbours'; Send waits for the peer):
//     transport.Bind(self);
//   one synchronous round r (D-PSGD & co.: wait only for the neighbours' round r, no barrier):
//     for (int j : out_neighbours)
//       if (!transport.Send(self, j, {.round = r, .codec = id, .due = due_j}, bytes)) return;
//     for (int j : in_neighbours) {
//       std::optional<Message> m = transport.Receive(self, j, r);
//       if (!m) return;                      // aborted: another worker failed, unwind quietly
//       ... decode m->payload, clock = max(clock, m->header.due) (link.h) ...
//       transport.Release(self, *m);         // promptly: the buffer is the sender's credit
//     }
//   asynchronous algorithms: TrySend / TryReceive never block. Mixing blocking Sends with a
//   cycle of senders who never receive can deadlock (everyone waits for credit): an
//   asynchronous worker drains its in-channels between TrySends.
//
// Aborting. Abort() makes every blocked wait return at once and every later call fail
// (Send/TrySend: false, Receive/TryReceive: nullopt); Release stays valid. A failing worker (or the coordinator) calls it so that no neighbour is
// left waiting for a message that will never come; the failing worker's own error is what gets
// reported, the others just return.
//
// Errors (corral::Error): a Send to a worker that is not an out-neighbour or a payload above
// max_payload() is kBadConfig; Receive(self, j, r) finding a message of another round first is
// kWorkerFailed (an algorithm bug: rounds on one channel must be sent in order, none skipped).
//
// Thread safety: each method's `self` argument must be the calling worker (Bind, Send,
// TrySend, Receive, TryReceive, Release); at most one thread acts as a given worker. Abort,
// aborted, counters, sent_by and the const getters may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace corral::internal {

// What travels in front of every payload. The caller of Send sets round, codec and due; the
// transport stamps sender and bytes.
struct MessageHeader {
  std::uint64_t round = 0;   // the sender's round (synchronous) or sequence (asynchronous)
  std::uint16_t codec = 0;   // which compressor encoded the payload (the compressor registry's id)
  double due = 0;            // delivery time from LinkModel (virtual or wall seconds; 0: now)
  std::int32_t sender = 0;   // stamped by Send: the sending worker
  std::uint32_t bytes = 0;   // stamped by Send: payload size in bytes
};

// A received message, lent by the transport until Release(self, message).
struct Message {
  MessageHeader header;
  std::span<const std::byte> payload;  // header.bytes bytes, 64-byte aligned, valid until Release
  std::uint32_t slot = 0;              // the transport's handle for the buffer; opaque
};

// Totals of one channel or one sender. Written by the sending worker only, as relaxed atomics:
// a running read (progress, metrics) may lag by a message; a read after the workers quiesced
// (e.g. after the Crew's epoch ends, whose semaphores order it) is exact.
struct ChannelCounters {
  std::uint64_t messages = 0;  // messages sent
  std::uint64_t bytes = 0;     // payload bytes sent (headers excluded: their size is the transport's)
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int workers() const = 0;
  // Largest payload one message may carry, in bytes.
  virtual std::uint32_t max_payload() const = 0;

  // Worker self's setup, on its own thread: allocates and first-touches the buffers of its
  // in-channels (memory local to the reader) and hands them to their senders. Once per worker.
  virtual void Bind(int self) = 0;

  // Sends header + payload to `to`, waiting while the channel has no free buffer. Returns
  // false (nothing sent) if the transport was aborted.
  [[nodiscard]] virtual bool Send(int self, int to, const MessageHeader& header,
                                  std::span<const std::byte> payload) = 0;
  // As Send, but returns false at once when the channel has no free buffer (or is aborted).
  [[nodiscard]] virtual bool TrySend(int self, int to, const MessageHeader& header,
                                     std::span<const std::byte> payload) = 0;

  // Waits for the next message from `from`, which must belong to `round`. nullopt: aborted.
  [[nodiscard]] virtual std::optional<Message> Receive(int self, int from, std::uint64_t round) = 0;
  // The next message from `from` if one has arrived (and is due, in realtime link mode).
  [[nodiscard]] virtual std::optional<Message> TryReceive(int self, int from) = 0;
  // Returns a received message's buffer to its sender. Every received message exactly once.
  virtual void Release(int self, const Message& message) = 0;

  // Wakes every waiting worker and makes all later waits fail fast. Idempotent, permanent.
  virtual void Abort() = 0;
  virtual bool aborted() const = 0;

  // Totals of channel from -> to, and of everything `from` sent.
  virtual ChannelCounters counters(int from, int to) const = 0;
  virtual ChannelCounters sent_by(int from) const = 0;

  // Seconds on a clock all workers share (the transport's steady clock): realtime link mode
  // stamps `due` with it, and Receive holds a message until WallSeconds() >= due.
  virtual double WallSeconds() const = 0;
};

}  // namespace corral::internal
