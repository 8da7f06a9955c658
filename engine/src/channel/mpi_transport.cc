#include "engine/src/channel/mpi_transport.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <new>

#include <boost/lockfree/spsc_queue.hpp>

#include <corral/error.h>

#include "engine/src/channel/doorbell.h"

namespace corral::internal {
namespace {

// As ShmTransport: the header alone in the slot's first cache line, the payload 64-byte aligned.
static_assert(sizeof(MessageHeader) <= kCacheLine);
constexpr std::size_t kPayloadOffset = kCacheLine;
constexpr int kAbortTag = 0;  // edge e uses tag e + 1
// Polls of an idle progress thread before it starts sleeping between polls.
constexpr int kIdleSpins = 64;
constexpr std::chrono::milliseconds kHoldStep{2};  // realtime holds re-check stop this often

std::size_t RoundUpToLine(std::size_t bytes) {
  return (bytes + kCacheLine - 1) / kCacheLine * kCacheLine;
}

std::string Channel(int from, int to) {
  return "channel " + std::to_string(from) + " -> " + std::to_string(to);
}

[[noreturn]] void Bad(const std::string& message) {
  throw Error(ErrorCode::kBadConfig, "transport: " + message);
}

bool Done(MPI_Request& request) {
  if (request == MPI_REQUEST_NULL) return true;
  int done = 0;
  MPI_Test(&request, &done, MPI_STATUS_IGNORE);
  return done != 0;
}

}  // namespace

MpiSession::MpiSession(int* argc, char*** argv, int level, const char* why) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  int provided = MPI_THREAD_SINGLE;
  if (initialised) {
    MPI_Query_thread(&provided);
  } else {
    MPI_Init_thread(argc, argv, level, &provided);
    owns_ = true;
  }
  if (provided < level) {
    if (owns_) MPI_Finalize();  // the destructor does not run for a constructor that throws
    throw Error(ErrorCode::kBadConfig,
                "MPI: the library gives thread level " + std::to_string(provided) + "; " + why);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks_);
}

MpiSession::~MpiSession() {
  if (owns_) MPI_Finalize();
}

struct alignas(kCacheLine) MpiTransport::WorkerPort {
  Doorbell bell;       // rung for this worker by the progress thread; waited on by it alone
  bool bound = false;  // W/R: this worker only (Bind)
};

struct MpiTransport::RemoteEdge {
  using HandleQueue = boost::lockfree::spsc_queue<std::uint32_t>;

  RemoteEdge(int sender, int receiver, int edge_tag, int peer_rank, bool is_outgoing,
             std::uint32_t capacity)
      : from(sender), to(receiver), tag(edge_tag), peer(peer_rank), outgoing(is_outgoing),
        to_worker(capacity), to_progress(capacity), requests(capacity, MPI_REQUEST_NULL),
        posted(capacity) {}

  const int from;
  const int to;
  const int tag;
  const int peer;       // the other end's rank
  const bool outgoing;  // this rank hosts `from`
  // Outgoing: free send buffers (producer: progress thread, consumer: `from`).
  // Incoming: received messages in order (producer: progress thread, consumer: `to`).
  HandleQueue to_worker;
  // Outgoing: filled buffers to send, in order (producer: `from`). Incoming: released buffers to
  // post again (producer: `to`). Consumer: the progress thread.
  HandleQueue to_progress;
  // W: the local worker in Bind, before its first push of a handle; R: the progress thread and
  // the worker after popping a handle (ordered by the queue), the destructor after the join.
  std::byte* slots = nullptr;
  // Progress thread only: each buffer's MPI request, and (incoming) the posted buffers in
  // posting order, a ring of `count` handles starting at `head`.
  std::vector<MPI_Request> requests;
  std::vector<std::uint32_t> posted;
  std::size_t head = 0;
  std::size_t count = 0;
  std::size_t in_flight = 0;  // outgoing: Issends not yet complete
  // W: the sending worker only (load + store); R: anyone. relaxed: statistics (transport.h).
  alignas(kCacheLine) std::atomic<std::uint64_t> messages{0};
  std::atomic<std::uint64_t> bytes{0};
};

MpiTransport::MpiTransport(const ShmTransportConfig& config, std::span<const int> rank_of_worker,
                           MPI_Comm comm)
    : workers_((config.Validate(), config.workers)),
      max_payload_(config.max_payload_bytes),
      slots_per_edge_(config.slots_per_edge),
      slot_stride_(kPayloadOffset + RoundUpToLine(config.max_payload_bytes)),
      link_mode_(config.link_mode),
      rank_of_(rank_of_worker.begin(), rank_of_worker.end()),
      remote_of_(static_cast<std::size_t>(workers_) * static_cast<std::size_t>(workers_), -1),
      ports_(std::make_unique<WorkerPort[]>(static_cast<std::size_t>(workers_))) {
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &ranks_);
  if (static_cast<int>(rank_of_.size()) != workers_) {
    Bad("rank_of_worker lists " + std::to_string(rank_of_.size()) + " workers, the topology has " +
        std::to_string(workers_));
  }
  for (int w = 0; w < workers_; ++w) {
    if (rank_of_[w] < 0 || rank_of_[w] >= ranks_) {
      Bad("worker " + std::to_string(w) + " is placed on rank " + std::to_string(rank_of_[w]) +
          ", outside the communicator's 0.." + std::to_string(ranks_ - 1));
    }
  }
  if (slot_stride_ > static_cast<std::size_t>(INT_MAX)) {
    Bad("messages of " + std::to_string(slot_stride_) + " bytes exceed MPI's int count");
  }
  int* tag_ub = nullptr;
  int has_tag_ub = 0;
  MPI_Comm_get_attr(comm, MPI_TAG_UB, &tag_ub, &has_tag_ub);
  const long long max_tag = has_tag_ub ? *tag_ub : 32767;  // 32767: the standard's minimum
  if (static_cast<long long>(config.edges.size()) > max_tag) {
    Bad("the topology has " + std::to_string(config.edges.size()) +
        " directed edges; this MPI offers " + std::to_string(max_tag) + " message tags");
  }

  ShmTransportConfig local = config;
  local.edges.clear();
  for (std::size_t e = 0; e < config.edges.size(); ++e) {
    const auto [from, to] = config.edges[e];
    const bool from_here = IsLocal(from);
    const bool to_here = IsLocal(to);
    if (from_here && to_here) {
      local.edges.push_back({from, to});
    } else if (from_here || to_here) {
      const auto index = static_cast<std::int32_t>(remote_.size());
      remote_.push_back(std::make_unique<RemoteEdge>(from, to, static_cast<int>(e) + 1,
                                                     rank_of_[from_here ? to : from], from_here,
                                                     slots_per_edge_));
      remote_of_[static_cast<std::size_t>(from) * workers_ + to] = index;
    }
  }
  local_ = std::make_unique<ShmTransport>(local);

  MPI_Comm_dup(comm, &comm_);
  abort_out_.assign(1, rank_);
  MPI_Barrier(comm_);
  origin_ = std::chrono::steady_clock::now();
  progress_ = std::thread([this] { Progress(); });
}

MpiTransport::~MpiTransport() {
  shutdown_.store(true, std::memory_order_release);
  progress_.join();
  MPI_Comm_free(&comm_);
  for (const auto& edge : remote_) {
    if (edge->slots != nullptr) ::operator delete[](edge->slots, std::align_val_t{kCacheLine});
  }
}

bool MpiTransport::IsLocal(int worker) const {
  return worker >= 0 && worker < workers_ && rank_of_[worker] == rank_;
}

MpiTransport::RemoteEdge* MpiTransport::RemoteBetween(int from, int to) const {
  if (from < 0 || from >= workers_ || to < 0 || to >= workers_) return nullptr;
  const std::int32_t index = remote_of_[static_cast<std::size_t>(from) * workers_ + to];
  return index < 0 ? nullptr : remote_[static_cast<std::size_t>(index)].get();
}

void MpiTransport::CheckWorker(int self, const char* what) const {
  if (!IsLocal(self)) {
    Bad(std::string(what) + " by worker " + std::to_string(self) + ", which is not on rank " +
        std::to_string(rank_));
  }
}

void MpiTransport::Bind(int self) {
  CheckWorker(self, "Bind");
  WorkerPort& port = ports_[self];
  if (port.bound) Bad("worker " + std::to_string(self) + " bound twice");
  port.bound = true;
  local_->Bind(self);
  const std::size_t bytes = slot_stride_ * slots_per_edge_;
  for (const auto& edge : remote_) {
    if ((edge->outgoing ? edge->from : edge->to) != self) continue;
    // Allocated and touched on the owner's thread: its NUMA node (first touch).
    edge->slots = static_cast<std::byte*>(::operator new[](bytes, std::align_val_t{kCacheLine}));
    std::memset(edge->slots, 0, bytes);
    for (std::uint32_t slot = 0; slot < slots_per_edge_; ++slot) {
      // Cannot fail: each queue holds slots_per_edge handles and only that many exist.
      (edge->outgoing ? edge->to_worker : edge->to_progress).push(slot);
    }
  }
  WakeProgress();
}

void MpiTransport::Fill(RemoteEdge& edge, std::uint32_t slot, const MessageHeader& header,
                        std::span<const std::byte> payload) {
  std::byte* base = edge.slots + static_cast<std::size_t>(slot) * slot_stride_;
  MessageHeader stamped = header;
  stamped.sender = edge.from;
  stamped.bytes = static_cast<std::uint32_t>(payload.size());
  std::memcpy(base, &stamped, sizeof stamped);
  if (!payload.empty()) std::memcpy(base + kPayloadOffset, payload.data(), payload.size());
  edge.to_progress.push(slot);  // cannot fail, as in Bind
  edge.messages.store(edge.messages.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  edge.bytes.store(edge.bytes.load(std::memory_order_relaxed) + payload.size(),
                   std::memory_order_relaxed);
  WakeProgress();
}

bool MpiTransport::Send(int self, int to, const MessageHeader& header,
                        std::span<const std::byte> payload) {
  CheckWorker(self, "Send");
  RemoteEdge* edge = RemoteBetween(self, to);
  if (edge == nullptr) return local_->Send(self, to, header, payload);
  if (payload.size() > max_payload_) {
    Bad(Channel(self, to) + ": payload of " + std::to_string(payload.size()) +
        " bytes exceeds the maximum of " + std::to_string(max_payload_));
  }
  std::uint32_t slot = 0;
  if (stop_.load(std::memory_order_relaxed)) return false;
  if (!ports_[self].bell.WaitUntil([&] { return edge->to_worker.pop(slot); }, stop_)) return false;
  Fill(*edge, slot, header, payload);
  return true;
}

bool MpiTransport::TrySend(int self, int to, const MessageHeader& header,
                           std::span<const std::byte> payload) {
  CheckWorker(self, "TrySend");
  RemoteEdge* edge = RemoteBetween(self, to);
  if (edge == nullptr) return local_->TrySend(self, to, header, payload);
  if (payload.size() > max_payload_) {
    Bad(Channel(self, to) + ": payload of " + std::to_string(payload.size()) +
        " bytes exceeds the maximum of " + std::to_string(max_payload_));
  }
  std::uint32_t slot = 0;
  if (stop_.load(std::memory_order_relaxed) || !edge->to_worker.pop(slot)) return false;
  Fill(*edge, slot, header, payload);
  return true;
}

Message MpiTransport::Take(RemoteEdge& edge) {
  const std::uint32_t slot = edge.to_worker.front();
  edge.to_worker.pop();
  const std::byte* base = edge.slots + static_cast<std::size_t>(slot) * slot_stride_;
  Message message;
  std::memcpy(&message.header, base, sizeof message.header);
  message.payload = {base + kPayloadOffset, message.header.bytes};
  message.slot = slot;
  return message;
}

bool MpiTransport::Due(const RemoteEdge& edge) const {
  if (link_mode_ != LinkMode::kRealtime) return true;
  MessageHeader header;
  std::memcpy(&header, edge.slots + edge.to_worker.front() * slot_stride_, sizeof header);
  return WallSeconds() >= header.due;
}

bool MpiTransport::HoldUntilDue(const RemoteEdge& edge) {
  while (!Due(edge)) {
    if (stop_.load(std::memory_order_relaxed)) return false;
    std::this_thread::sleep_for(kHoldStep);
  }
  return true;
}

std::optional<Message> MpiTransport::Receive(int self, int from, std::uint64_t round) {
  CheckWorker(self, "Receive");
  RemoteEdge* edge = RemoteBetween(from, self);
  if (edge == nullptr) return local_->Receive(self, from, round);
  if (stop_.load(std::memory_order_relaxed) ||
      !ports_[self].bell.WaitUntil([&] { return edge->to_worker.read_available() > 0; }, stop_) ||
      !HoldUntilDue(*edge)) {
    return std::nullopt;
  }
  MessageHeader front;
  std::memcpy(&front, edge->slots + edge->to_worker.front() * slot_stride_, sizeof front);
  if (front.round != round) {
    throw Error(ErrorCode::kWorkerFailed,
                "transport: " + Channel(from, self) + ": worker " + std::to_string(self) +
                    " expected round " + std::to_string(round) +
                    " but the next message is of round " + std::to_string(front.round) +
                    " (rounds must be sent in order, none skipped)");
  }
  return Take(*edge);
}

std::optional<Message> MpiTransport::TryReceive(int self, int from) {
  CheckWorker(self, "TryReceive");
  RemoteEdge* edge = RemoteBetween(from, self);
  if (edge == nullptr) return local_->TryReceive(self, from);
  if (stop_.load(std::memory_order_relaxed) || edge->to_worker.read_available() == 0 ||
      !Due(*edge)) {
    return std::nullopt;
  }
  return Take(*edge);
}

void MpiTransport::Release(int self, const Message& message) {
  RemoteEdge* edge = RemoteBetween(message.header.sender, self);
  if (edge == nullptr) return local_->Release(self, message);
  edge->to_progress.push(message.slot);  // cannot fail, as in Bind
  WakeProgress();
}

void MpiTransport::Abort() {
  // Set before ringing: a waiter woken by one of these rings sees it (doorbell.h).
  stop_.store(true, std::memory_order_relaxed);
  local_->Abort();
  for (int w = 0; w < workers_; ++w) {
    if (IsLocal(w)) ports_[w].bell.Ring();
  }
  WakeProgress();  // the progress thread tells the other ranks
}

ChannelCounters MpiTransport::counters(int from, int to) const {
  if (const RemoteEdge* edge = RemoteBetween(from, to)) {
    if (!edge->outgoing) return {};
    return {.messages = edge->messages.load(std::memory_order_relaxed),
            .bytes = edge->bytes.load(std::memory_order_relaxed)};
  }
  if (!IsLocal(from) || !IsLocal(to)) return {};
  return local_->counters(from, to);
}

ChannelCounters MpiTransport::sent_by(int from) const {
  if (from < 0 || from >= workers_) Bad("no worker " + std::to_string(from));
  if (!IsLocal(from)) return {};
  ChannelCounters total = local_->sent_by(from);
  for (const auto& edge : remote_) {
    if (!edge->outgoing || edge->from != from) continue;
    total.messages += edge->messages.load(std::memory_order_relaxed);
    total.bytes += edge->bytes.load(std::memory_order_relaxed);
  }
  return total;
}

double MpiTransport::WallSeconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin_).count();
}

// ---- The progress thread ----------------------------------------------------------------

bool MpiTransport::PostSends() {
  bool busy = false;
  for (const auto& edge : remote_) {
    if (!edge->outgoing) continue;
    std::uint32_t slot = 0;
    while (edge->to_progress.pop(slot)) {
      std::byte* base = edge->slots + static_cast<std::size_t>(slot) * slot_stride_;
      MessageHeader header;
      std::memcpy(&header, base, sizeof header);
      // Synchronous mode: complete only once the receiver matched it into a posted buffer, so
      // the send buffer is the sender's credit exactly as in shared memory.
      MPI_Issend(base, static_cast<int>(kPayloadOffset + header.bytes), MPI_BYTE, edge->peer,
                 edge->tag, comm_, &edge->requests[slot]);
      ++edge->in_flight;
      busy = true;
    }
  }
  return busy;
}

bool MpiTransport::CompleteSends() {
  bool busy = false;
  for (const auto& edge : remote_) {
    if (!edge->outgoing || edge->in_flight == 0) continue;
    for (std::uint32_t slot = 0; slot < slots_per_edge_; ++slot) {
      MPI_Request& request = edge->requests[slot];
      if (request == MPI_REQUEST_NULL || !Done(request)) continue;
      --edge->in_flight;
      edge->to_worker.push(slot);  // cannot fail, as in Bind
      ports_[edge->from].bell.Ring();
      busy = true;
    }
  }
  return busy;
}

bool MpiTransport::PostReceives() {
  bool busy = false;
  for (const auto& edge : remote_) {
    if (edge->outgoing) continue;
    std::uint32_t slot = 0;
    while (edge->to_progress.pop(slot)) {
      MPI_Irecv(edge->slots + static_cast<std::size_t>(slot) * slot_stride_,
                static_cast<int>(slot_stride_), MPI_BYTE, edge->peer, edge->tag, comm_,
                &edge->requests[slot]);
      edge->posted[(edge->head + edge->count) % slots_per_edge_] = slot;
      ++edge->count;
      busy = true;
    }
  }
  return busy;
}

bool MpiTransport::CompleteReceives() {
  const bool draining = shutdown_.load(std::memory_order_relaxed);
  bool busy = false;
  for (const auto& edge : remote_) {
    if (edge->outgoing) continue;
    // MPI fills posted receives of one (source, tag) in posting order: deliver in that order.
    while (edge->count > 0) {
      const std::uint32_t slot = edge->posted[edge->head];
      if (!Done(edge->requests[slot])) break;
      edge->head = (edge->head + 1) % slots_per_edge_;
      --edge->count;
      busy = true;
      if (draining) {
        edge->to_progress.push(slot);  // nobody reads it any more: post it again
      } else {
        edge->to_worker.push(slot);  // cannot fail, as in Bind
        ports_[edge->to].bell.Ring();
      }
    }
  }
  return busy;
}

bool MpiTransport::HandleAbortNotices() {
  if (abort_recv_ == MPI_REQUEST_NULL || !Done(abort_recv_)) return false;
  // Another rank aborted: stop here as Abort() does, without echoing the notice.
  abort_noticed_ = true;
  peer_abort_.store(true, std::memory_order_relaxed);
  stop_.store(true, std::memory_order_relaxed);  // before the rings, as in Abort()
  local_->Abort();
  for (int w = 0; w < workers_; ++w) {
    if (IsLocal(w)) ports_[w].bell.Ring();
  }
  PostAbortReceive();  // several ranks may abort at once: their notices must all be matched
  return true;
}

void MpiTransport::PostAbortReceive() {
  MPI_Irecv(&abort_in_, 1, MPI_INT, MPI_ANY_SOURCE, kAbortTag, comm_, &abort_recv_);
}

void MpiTransport::SendAbortNotices() {
  abort_noticed_ = true;
  for (int r = 0; r < ranks_; ++r) {
    if (r == rank_) continue;
    abort_sends_.push_back(MPI_REQUEST_NULL);
    MPI_Issend(abort_out_.data(), 1, MPI_INT, r, kAbortTag, comm_, &abort_sends_.back());
  }
}

void MpiTransport::Progress() {
  PostAbortReceive();
  int idle = 0;
  while (!shutdown_.load(std::memory_order_acquire)) {
    bool busy = progress_work_.exchange(false, std::memory_order_acquire);
    busy |= Poll();
    if (stop_.load(std::memory_order_relaxed) && !abort_noticed_) {
      SendAbortNotices();
      busy = true;
    }
    Idle(busy, idle);
  }
  // An Abort just before the shutdown still reaches the other ranks.
  if (stop_.load(std::memory_order_relaxed) && !abort_noticed_) SendAbortNotices();
  Drain();
}

bool MpiTransport::Poll() {
  bool busy = PostSends();
  busy |= PostReceives();
  busy |= CompleteSends();
  busy |= CompleteReceives();
  busy |= HandleAbortNotices();
  return busy;
}

void MpiTransport::Idle(bool busy, int& idle) {
  if (busy) {
    idle = 0;
  } else if (++idle < kIdleSpins) {
    CpuRelax();
  } else {
    std::this_thread::sleep_for(kIdleSleep);
  }
}

// Collective shutdown, after this rank's workers joined (the destructor's caller promised it).
// Barrier 1: every rank's workers are done, so no new messages start anywhere. Then this rank
// waits for its own sends to be matched (it keeps receiving and discarding meanwhile, so the
// others' sends complete too). Barrier 2: every rank's sends are complete, so nothing is in flight
// and the posted receives can be cancelled.
void MpiTransport::Drain() {
  // Unread messages give their buffers back to the pool of posted receives: a peer's pending
  // Issend may be waiting for one.
  for (const auto& edge : remote_) {
    std::uint32_t slot = 0;
    while (!edge->outgoing && edge->slots != nullptr && edge->to_worker.pop(slot)) {
      edge->to_progress.push(slot);
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + kShutdownTimeout;
  MPI_Request barrier = MPI_REQUEST_NULL;
  MPI_Ibarrier(comm_, &barrier);
  int phase = 1;
  int idle = 0;
  while (true) {
    const bool busy = Poll();
    bool sends_done = std::all_of(abort_sends_.begin(), abort_sends_.end(), Done);
    for (const auto& edge : remote_) sends_done = sends_done && edge->in_flight == 0;
    if (Done(barrier)) {
      if (phase == 2) break;
      if (sends_done) {
        MPI_Ibarrier(comm_, &barrier);
        phase = 2;
      }
    }
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr,
                   "corral: rank %d: the other ranks did not finish their messages within %lld s "
                   "(one may have died); aborting the MPI job\n",
                   rank_, static_cast<long long>(kShutdownTimeout.count()));
      MPI_Abort(comm_, 1);
    }
    Idle(busy, idle);
  }
  for (const auto& edge : remote_) {
    if (edge->outgoing) continue;
    for (; edge->count > 0; --edge->count, edge->head = (edge->head + 1) % slots_per_edge_) {
      MPI_Request& request = edge->requests[edge->posted[edge->head]];
      MPI_Cancel(&request);
      MPI_Wait(&request, MPI_STATUS_IGNORE);
    }
  }
  MPI_Cancel(&abort_recv_);
  MPI_Wait(&abort_recv_, MPI_STATUS_IGNORE);
}

}  // namespace corral::internal
