#include "engine/src/channel/shm_transport.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <thread>

#include <corral/error.h>

namespace corral::internal {
namespace {

// The slot's first cache line holds its ticket (shm_transport.h) and then the header; the
// payload starts on the next line, so decoders get 64-byte aligned data.
constexpr std::size_t kHeaderOffset = sizeof(std::uint64_t);
static_assert(kHeaderOffset + sizeof(MessageHeader) <= kCacheLine);
constexpr std::size_t kPayloadOffset = kCacheLine;

// The ticket of the slot at `base`: the number (from 1) of the message last published in it, 0
// before the first. W: the sender (release, after the message); R: the receiver (acquire).
// A plain uint64_t in the slot array (zeroed by Bind), shared through atomic_ref.
std::atomic_ref<std::uint64_t> Ticket(std::byte* base) {
  return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(base));
}

// Take prefetches up to this many lines of a payload (a small model's whole message; the
// start of a large one, which the hardware's stream prefetcher then follows).
constexpr std::size_t kPrefetchLines = 16;

// Realtime holds sleep in steps of at most this, re-checking the stop flag in between: a held
// worker notices Abort within this long.
constexpr std::chrono::milliseconds kHoldStep{2};

std::size_t RoundUpToLine(std::size_t bytes) {
  return (bytes + kCacheLine - 1) / kCacheLine * kCacheLine;
}

std::string Channel(int from, int to) {
  return "channel " + std::to_string(from) + " -> " + std::to_string(to);
}

}  // namespace

void ShmTransportConfig::Validate() const {
  auto bad = [](const std::string& message) { throw Error(ErrorCode::kBadConfig, message); };
  if (workers < 1) bad("transport: workers must be >= 1, got " + std::to_string(workers));
  if (slots_per_edge < 1) bad("transport: slots_per_edge must be >= 1, got 0");
  if (max_payload_bytes > (1u << 31)) {
    bad("transport: max_payload_bytes " + std::to_string(max_payload_bytes) + " exceeds 2 GiB");
  }
  std::vector<std::pair<int, int>> sorted = edges;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t e = 0; e < sorted.size(); ++e) {
    const auto [from, to] = sorted[e];
    if (from < 0 || from >= workers || to < 0 || to >= workers) {
      bad("transport: edge (" + std::to_string(from) + ", " + std::to_string(to) +
          ") names a worker outside 0.." + std::to_string(workers - 1));
    }
    if (from == to) bad("transport: edge (" + std::to_string(from) + ", " + std::to_string(to) +
                        ") is a self-loop (a worker needs no channel to itself)");
    if (e > 0 && sorted[e - 1] == sorted[e]) {
      bad("transport: edge (" + std::to_string(from) + ", " + std::to_string(to) +
          ") listed twice");
    }
  }
}

ShmTransport::ShmTransport(const ShmTransportConfig& config)
    : workers_((config.Validate(), config.workers)),
      max_payload_(config.max_payload_bytes),
      slots_per_edge_(config.slots_per_edge),
      slot_stride_(kPayloadOffset + RoundUpToLine(config.max_payload_bytes)),
      link_mode_(config.link_mode),
      origin_(std::chrono::steady_clock::now()),
      edge_of_(static_cast<std::size_t>(workers_) * static_cast<std::size_t>(workers_), -1),
      ports_(std::make_unique<Port[]>(static_cast<std::size_t>(workers_))) {
  edges_.reserve(config.edges.size());
  for (const auto& [from, to] : config.edges) {
    const auto index = static_cast<int>(edges_.size());
    edges_.push_back(std::make_unique<Edge>(from, to, slots_per_edge_));
    edge_of_[static_cast<std::size_t>(from) * workers_ + to] = index;
    ports_[from].out_edges.push_back(index);
    ports_[to].in_edges.push_back(index);
  }
}

ShmTransport::~ShmTransport() {
  for (const auto& edge : edges_) {
    if (edge->slots != nullptr) ::operator delete[](edge->slots, std::align_val_t{kCacheLine});
  }
}

ShmTransport::Edge& ShmTransport::EdgeBetween(int from, int to) const {
  const int index = from >= 0 && from < workers_ && to >= 0 && to < workers_
                        ? edge_of_[static_cast<std::size_t>(from) * workers_ + to]
                        : -1;
  if (index < 0) {
    throw Error(ErrorCode::kBadConfig, "transport: no " + Channel(from, to) +
                                           " (not an edge of the topology)");
  }
  return *edges_[static_cast<std::size_t>(index)];
}

void ShmTransport::Bind(int self) {
  Port& port = ports_[self];
  if (port.bound) {
    throw Error(ErrorCode::kBadConfig, "transport: worker " + std::to_string(self) + " bound twice");
  }
  port.bound = true;
  const std::size_t bytes = slot_stride_ * slots_per_edge_;
  for (int index : port.in_edges) {
    Edge& edge = *edges_[static_cast<std::size_t>(index)];
    // Allocate and touch here, on the receiver's thread: Linux places each page on the NUMA
    // node of the thread that first writes it. Zeroed: every ticket 0, no message yet.
    edge.slots = static_cast<std::byte*>(::operator new[](bytes, std::align_val_t{kCacheLine}));
    std::memset(edge.slots, 0, bytes);
    // release: publishes `slots` and the zeroed tickets to a sender that sees the credit.
    edge.granted.store(slots_per_edge_, std::memory_order_release);
    ports_[edge.from].bell.Ring();
  }
}

void ShmTransport::CheckPayload(const Edge& edge, std::size_t bytes) const {
  if (bytes > max_payload_) {
    throw Error(ErrorCode::kBadConfig, "transport: " + Channel(edge.from, edge.to) +
                                           ": payload of " + std::to_string(bytes) +
                                           " bytes exceeds the maximum of " +
                                           std::to_string(max_payload_));
  }
}

bool ShmTransport::HasCredit(const Edge& edge) const {
  // acquire: the receiver's reads of the slot (and Bind's allocation) happen before our write.
  return edge.sent < edge.granted.load(std::memory_order_acquire);
}

bool ShmTransport::Arrived(const Edge& edge) const {
  // acquire: the sender's writes of the header and payload happen before our reads.
  return Ticket(FrontSlot(edge)).load(std::memory_order_acquire) == edge.taken + 1;
}

void ShmTransport::Fill(Edge& edge, const MessageHeader& header,
                        std::span<const std::byte> payload) {
  std::byte* base = SlotAt(edge, static_cast<std::uint32_t>(edge.sent % slots_per_edge_));
  MessageHeader stamped = header;
  stamped.sender = edge.from;
  stamped.bytes = static_cast<std::uint32_t>(payload.size());
  std::memcpy(base + kHeaderOffset, &stamped, sizeof stamped);
  if (!payload.empty()) std::memcpy(base + kPayloadOffset, payload.data(), payload.size());
  ++edge.sent;
  // release: the header and payload above happen before the receiver's acquire of the ticket.
  Ticket(base).store(edge.sent, std::memory_order_release);
  edge.messages.store(edge.messages.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  edge.bytes.store(edge.bytes.load(std::memory_order_relaxed) + payload.size(),
                   std::memory_order_relaxed);
  ports_[edge.to].bell.Ring();
}

bool ShmTransport::Send(int self, int to, const MessageHeader& header,
                        std::span<const std::byte> payload) {
  Edge& edge = EdgeBetween(self, to);
  CheckPayload(edge, payload.size());
  if (stop_.load(std::memory_order_relaxed)) return false;
  // Release rings our bell when it returns credit.
  if (!ports_[self].bell.WaitUntil([&] { return HasCredit(edge); }, stop_)) return false;
  Fill(edge, header, payload);
  return true;
}

bool ShmTransport::TrySend(int self, int to, const MessageHeader& header,
                           std::span<const std::byte> payload) {
  Edge& edge = EdgeBetween(self, to);
  CheckPayload(edge, payload.size());
  if (stop_.load(std::memory_order_relaxed) || !HasCredit(edge)) return false;
  Fill(edge, header, payload);
  return true;
}

Message ShmTransport::Take(Edge& edge) {
  const auto slot = static_cast<std::uint32_t>(edge.taken % slots_per_edge_);
  const std::byte* base = SlotAt(edge, slot);
  ++edge.taken;
  Message message;
  std::memcpy(&message.header, base + kHeaderOffset, sizeof message.header);
  message.payload = {base + kPayloadOffset, message.header.bytes};
  message.slot = slot;
  // The caller reads the payload next, each line a transfer from the sender's cache: ask for
  // the first kPrefetchLines at once rather than one after the other as a loop reaches them.
  const std::size_t lines =
      std::min(kPrefetchLines, RoundUpToLine(message.header.bytes) / kCacheLine);
  for (std::size_t line = 0; line < lines; ++line) {
    __builtin_prefetch(message.payload.data() + line * kCacheLine, /*rw=*/0, /*locality=*/3);
  }
  return message;
}

bool ShmTransport::Due(const Edge& edge) const {
  if (link_mode_ != LinkMode::kRealtime) return true;
  MessageHeader header;
  std::memcpy(&header, FrontSlot(edge) + kHeaderOffset, sizeof header);
  return WallSeconds() >= header.due;
}

bool ShmTransport::HoldUntilDue(Edge& edge) {
  if (link_mode_ != LinkMode::kRealtime) return true;
  MessageHeader header;
  std::memcpy(&header, FrontSlot(edge) + kHeaderOffset, sizeof header);
  const auto due = origin_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(header.due));
  while (true) {
    if (stop_.load(std::memory_order_relaxed)) return false;
    const auto now = std::chrono::steady_clock::now();
    if (now >= due) return true;
    std::this_thread::sleep_until(std::min(due, now + kHoldStep));
  }
}

std::optional<Message> ShmTransport::Receive(int self, int from, std::uint64_t round) {
  Edge& edge = EdgeBetween(from, self);
  if (stop_.load(std::memory_order_relaxed) ||
      !ports_[self].bell.WaitUntil([&] { return Arrived(edge); }, stop_)) {
    return std::nullopt;
  }
  if (!HoldUntilDue(edge)) return std::nullopt;
  MessageHeader front;
  std::memcpy(&front, FrontSlot(edge) + kHeaderOffset, sizeof front);
  if (front.round != round) {
    throw Error(ErrorCode::kWorkerFailed,
                "transport: " + Channel(from, self) + ": worker " + std::to_string(self) +
                    " expected round " + std::to_string(round) + " but the next message is of round " +
                    std::to_string(front.round) + " (rounds must be sent in order, none skipped)");
  }
  return Take(edge);
}

std::optional<Message> ShmTransport::TryReceive(int self, int from) {
  Edge& edge = EdgeBetween(from, self);
  if (stop_.load(std::memory_order_relaxed) || !Arrived(edge) || !Due(edge)) {
    return std::nullopt;
  }
  return Take(edge);
}

void ShmTransport::Release(int self, const Message& message) {
  Edge& edge = EdgeBetween(message.header.sender, self);
  // The lent messages are returned .. taken - 1, at most S of them, in slots n mod S.
  if (message.slot != edge.returned % slots_per_edge_) {
    edge.early[message.slot] = 1;  // an older one is still lent: credit it with that one
    return;
  }
  do {
    edge.early[edge.returned % slots_per_edge_] = 0;
    ++edge.returned;
  } while (edge.returned < edge.taken && edge.early[edge.returned % slots_per_edge_] != 0);
  // release: our reads of the slots given back happen before the sender's next writes.
  edge.granted.store(edge.returned + slots_per_edge_, std::memory_order_release);
  ports_[edge.from].bell.Ring();
}

void ShmTransport::Abort() {
  // Set before ringing: a waiter woken by (or reading) one of these rings sees it (doorbell.h).
  stop_.store(true, std::memory_order_relaxed);
  for (int w = 0; w < workers_; ++w) ports_[w].bell.Ring();
}

ChannelCounters ShmTransport::counters(int from, int to) const {
  const Edge& edge = EdgeBetween(from, to);
  return {.messages = edge.messages.load(std::memory_order_relaxed),
          .bytes = edge.bytes.load(std::memory_order_relaxed)};
}

ChannelCounters ShmTransport::sent_by(int from) const {
  if (from < 0 || from >= workers_) {
    throw Error(ErrorCode::kBadConfig, "transport: no worker " + std::to_string(from));
  }
  ChannelCounters total;
  for (int index : ports_[from].out_edges) {
    const Edge& edge = *edges_[static_cast<std::size_t>(index)];
    total.messages += edge.messages.load(std::memory_order_relaxed);
    total.bytes += edge.bytes.load(std::memory_order_relaxed);
  }
  return total;
}

double ShmTransport::WallSeconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin_).count();
}

}  // namespace corral::internal
