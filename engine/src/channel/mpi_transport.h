// MpiTransport: the Transport (transport.h) of one MPI rank, for a topology whose workers are
// spread over several ranks (processes, possibly on several machines).
//
// Workers have global ids 0..n-1; `rank_of_worker` says which rank hosts each (every rank
// passes the same config, edges in the same order). Edges with both ends on this rank go
// through a ShmTransport, exactly as in a single process. An edge between ranks becomes a
// pair of buffer sets: the sender's `slots_per_edge` send buffers on this side, the
// receiver's `slots_per_edge` receive buffers on the other, and MPI carries the bytes.
//
// One progress thread per rank makes every MPI call (the process needs MPI_THREAD_SERIALIZED;
// see MpiSession). Why not MPI_THREAD_MULTIPLE with workers calling MPI themselves: a worker's
// Send/Receive must stay lock-free and allocation-free (the shared-memory rules), and Open MPI
// serialises MULTIPLE callers on internal locks; with one progress thread the workers only
// touch lock-free spsc queues and doorbells, and the MPI library needs no thread support
// beyond SERIALIZED. The cost is one thread per rank that polls MPI while messages are
// in flight (see kIdleSleep: it never spins without bound).
//
// A cross-rank edge i -> j, messages in FIFO order:
//   sender rank:   free (progress -> i): send buffers i may fill; outbox (i -> progress):
//                  filled buffers, posted in order as MPI_Issend (tag: the edge's index + 1).
//                  A buffer returns to `free` when its Issend completed, i.e. when the
//                  receiver's MPI matched it into a posted receive buffer.
//   receiver rank: the progress thread keeps one MPI_Irecv posted per free receive buffer, in
//                  order; MPI matches messages of one (source, tag) in order, so the k-th
//                  message lands in the k-th posted buffer, and completed receives go to
//                  `full` (progress -> j) in posting order. Release returns the buffer
//                  (returned: j -> progress), which posts it again.
//   Backpressure is the same as in shared memory: a sender has at most slots_per_edge
//   messages outstanding, a receiver at most slots_per_edge buffers; an Issend the receiver has
//   no buffer for stays incomplete, so the sender's credit runs out and Send waits.
// Memory ordering between a worker and the progress thread: only buffer handles cross, through
// Boost spsc queues (push: release, pop: acquire), and every push is followed by a Ring of the
// consumer's Doorbell (doorbell.h) or of the progress thread's flag: a buffer's bytes are
// written before its handle is pushed and read after it is popped.
//
// Aborting spans ranks: Abort() on any rank stops its workers and sends an abort notice to every
// other rank, whose progress thread then aborts locally (workers see nullopt / false, unwind).
//
// Destruction is collective: every rank destroys its transport (after its workers joined). The
// ranks then drain in-flight messages, agree through two nonblocking barriers that nothing is
// left in flight, cancel their posted receives and free their buffers. A rank that never arrives
// (it died) makes the others give up after kShutdownTimeout and MPI_Abort the job with a message.
//
// Counters count what this rank's workers sent: counters(from, to) of an edge whose sender lives
// on another rank is zero here.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <mpi.h>

#include "engine/src/channel/shm_transport.h"
#include "engine/src/channel/transport.h"

namespace corral::internal {

// MPI_Init_thread(`level`: MPI_THREAD_SERIALIZED, what the transport's progress thread needs,
// or higher for callers that use MPI beside it) unless MPI is already initialised (then checks
// the level it was given); MPI_Finalize at destruction if this object initialised it. Throws
// corral::Error (kBadConfig) naming the level when the library gives less; `why` says who
// needs it.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv, int level = MPI_THREAD_SERIALIZED,
             const char* why = "Corral's progress thread needs MPI_THREAD_SERIALIZED or higher");
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int ranks() const { return ranks_; }

 private:
  bool owns_ = false;
  int rank_ = 0;
  int ranks_ = 1;
};

class MpiTransport final : public Transport {
 public:
  // When idle, the progress thread sleeps this long between polls of MPI (after a short spin):
  // a message that arrives at an idle rank waits at most about this much (plus timer slack)
  // before its receiver is woken. Busy ranks poll continuously.
  static constexpr std::chrono::microseconds kIdleSleep{50};
  // Collective destruction gives up on ranks that do not arrive within this (see above).
  static constexpr std::chrono::seconds kShutdownTimeout{10};

  // `config.workers` and `config.edges` are global; `rank_of_worker[w]` is w's rank in `comm`.
  // Collective over `comm` (every rank constructs with the same config). Throws corral::Error
  // (kBadConfig) naming the problem: a rank outside comm, more edges than MPI tags.
  MpiTransport(const ShmTransportConfig& config, std::span<const int> rank_of_worker,
               MPI_Comm comm);
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  int rank() const { return rank_; }
  // True once an abort notice from another rank stopped this one.
  bool aborted_by_peer() const { return peer_abort_.load(std::memory_order_relaxed); }

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
  struct RemoteEdge;   // one cross-rank edge with an end on this rank (mpi_transport.cc)
  struct WorkerPort;   // a local worker's doorbell and binding

  bool IsLocal(int worker) const;
  RemoteEdge* RemoteBetween(int from, int to) const;  // nullptr: not a cross-rank edge
  void CheckWorker(int self, const char* what) const;
  void Fill(RemoteEdge& edge, std::uint32_t slot, const MessageHeader& header,
            std::span<const std::byte> payload);
  Message Take(RemoteEdge& edge);
  bool Due(const RemoteEdge& edge) const;
  bool HoldUntilDue(const RemoteEdge& edge);

  // The progress thread and its steps (only it calls MPI between construction and join).
  void Progress();
  bool PostSends();
  bool PostReceives();
  bool CompleteSends();
  bool CompleteReceives();
  bool Poll();                       // one pass over everything above; true: something moved
  void Idle(bool busy, int& idle);   // a short spin, then kIdleSleep between polls
  bool HandleAbortNotices();
  void PostAbortReceive();
  void SendAbortNotices();
  void Drain();  // the collective shutdown
  void WakeProgress() { progress_work_.store(true, std::memory_order_release); }

  const int workers_;
  const std::uint32_t max_payload_;
  const std::uint32_t slots_per_edge_;
  const std::size_t slot_stride_;
  const LinkMode link_mode_;
  MPI_Comm comm_ = MPI_COMM_NULL;  // our own duplicate: our tags never meet the caller's
  int rank_ = 0;
  int ranks_ = 1;
  std::vector<int> rank_of_;
  std::chrono::steady_clock::time_point origin_;  // taken right after a barrier on every rank
  std::unique_ptr<ShmTransport> local_;           // edges within this rank
  std::vector<std::unique_ptr<RemoteEdge>> remote_;
  std::vector<std::int32_t> remote_of_;  // [from * workers + to] -> index in remote_, or -1
  std::unique_ptr<WorkerPort[]> ports_;  // indexed by global worker id (only local ones used)

  // Abort notices: one posted receive (any source), and our own sends to every other rank.
  int abort_in_ = 0;
  MPI_Request abort_recv_ = MPI_REQUEST_NULL;
  std::vector<int> abort_out_;
  std::vector<MPI_Request> abort_sends_;
  bool abort_noticed_ = false;  // progress thread only: notices sent (or received)

  // W: Abort (any thread), the progress thread on a peer's notice; R: everyone, relaxed:
  // waiters are woken through doorbells that order it (doorbell.h).
  std::atomic<bool> stop_{false};
  // W: the progress thread on a peer's notice (before stop_); R: anyone, relaxed: a report.
  std::atomic<bool> peer_abort_{false};
  // W: workers and Abort after pushing work for the progress thread (release); R/W: the
  // progress thread (exchange, acquire), which skips its idle sleep while it is set.
  std::atomic<bool> progress_work_{false};
  // W: the destructor (release); R: the progress thread (acquire): start the shutdown.
  std::atomic<bool> shutdown_{false};
  std::thread progress_;
};

}  // namespace corral::internal
