// The rank's end of HOGWILD++'s token ring across ranks (hogwild_pp.h, docs/algorithms.md
// "hogwild++ across ranks"): one endpoint per rank of a transport whose "workers" are the ranks,
// with channels r -> r+1 and r+1 -> r (mod R) between ring neighbours. Built by the cluster
// (<corral/cluster.h> MakeTransport), so the bytes travel over MPI; payloads are raw fp32.
//
// Two kinds of message, told apart by the header's round field:
//   kDelta  r -> r+1: the last group of rank r passes the token on, carrying its change since its
//           last sync (delta = x_g - o_g, d floats);
//   kReply  r+1 -> r: the first group of rank r+1 answers with its replica as it was just before
//           it added beta delta (d floats).
// Credit: a channel holds at most one message of each kind unread (one token on the ring; a
// reply only answers a delta), and every message is released as soon as it is read, so
// kSlots = 2 buffers per channel keep Send from waiting on anything but the progress threads.
//
// Thread safety: the endpoint belongs to whichever worker of the rank holds the port (TryHold or
// Hold until Drop): at most one thread acts as the endpoint at a time, and the port's
// acquire/release hand-off orders one holder's use of the transport's single-producer /
// single-consumer queues before the next holder's (and the mode's ring buffers with them).
// Constructor and destructor: collective across the ranks (the transport's), workers not running.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include <corral/cluster.h>
#include <corral/error.h>

#include "engine/src/channel/shm_transport.h"
#include "engine/src/channel/transport.h"
#include "engine/src/runtime/crew.h"

namespace corral::internal {

class RingPort {
 public:
  enum Kind : std::uint64_t { kDelta = 0, kReply = 1 };
  static constexpr std::uint32_t kSlots = 2;

  // Collective over `cluster` (ranks() > 1): messages of `dim` floats.
  RingPort(Cluster& cluster, std::size_t dim)
      : rank_(cluster.rank()), ranks_(cluster.ranks()), dim_(dim) {
    if (dim * sizeof(float) > (std::size_t{1} << 31)) {
      throw Error(ErrorCode::kBadConfig, "hogwild++ across ranks: a model of " +
                                             std::to_string(dim) +
                                             " parameters exceeds the transport's 2 GiB message");
    }
    ShmTransportConfig config{.workers = ranks_,
                              .max_payload_bytes = static_cast<std::uint32_t>(dim * sizeof(float)),
                              .slots_per_edge = kSlots};
    for (int r = 0; r < ranks_; ++r) {
      const int n = (r + 1) % ranks_;
      config.edges.emplace_back(r, n);
      if (ranks_ > 2) config.edges.emplace_back(n, r);  // 2 ranks: (1, 0) is already n -> r
    }
    std::vector<int> rank_of(static_cast<std::size_t>(ranks_));
    std::iota(rank_of.begin(), rank_of.end(), 0);
    transport_ = cluster.MakeTransport(config, rank_of);
  }

  int next() const { return (rank_ + 1) % ranks_; }
  int previous() const { return (rank_ + ranks_ - 1) % ranks_; }

  // Once, on a worker's thread before any epoch (first touch of the receive buffers).
  void Bind() { transport_->Bind(rank_); }

  // acquire: see the class comment. A relaxed look first, so busy ports cost no write.
  bool TryHold() {
    return !busy_.load(std::memory_order_relaxed) &&
           !busy_.exchange(true, std::memory_order_acquire);
  }
  // A holder only copies d floats and sends (which never waits for long, see Credit): yield.
  void Hold() {
    while (!TryHold()) std::this_thread::yield();
  }
  void Drop() { busy_.store(false, std::memory_order_release); }

  // \pre held. False: the transport was aborted.
  [[nodiscard]] bool Send(int to, Kind kind, std::span<const float> payload) {
    return transport_->Send(rank_, to, {.round = kind}, std::as_bytes(payload));
  }
  // \pre held. The next message from rank `from`, if one arrived; throws (kWorkerFailed)
  // on one that is not a ring message of d floats (a bug, or a peer of another build).
  std::optional<Message> Receive(int from) {
    std::optional<Message> m = transport_->TryReceive(rank_, from);
    if (m && (m->header.round > kReply || m->payload.size() != dim_ * sizeof(float))) {
      throw Error(ErrorCode::kWorkerFailed,
                  "hogwild++ across ranks: rank " + std::to_string(rank_) +
                      " received a message of " + std::to_string(m->payload.size()) +
                      " bytes, kind " + std::to_string(m->header.round) + " from rank " +
                      std::to_string(from) + "; expected a delta or a reply of " +
                      std::to_string(dim_ * sizeof(float)) + " bytes");
    }
    return m;
  }
  // \pre held.
  void Release(const Message& m) { transport_->Release(rank_, m); }
  // Whether the transport was aborted (a rank failed): no message is sent or delivered any more.
  bool aborted() const { return transport_->aborted(); }
  static std::span<const float> Floats(const Message& m) {
    return {reinterpret_cast<const float*>(m.payload.data()), m.payload.size() / sizeof(float)};
  }

 private:
  const int rank_;
  const int ranks_;
  const std::size_t dim_;
  std::unique_ptr<Transport> transport_;
  // W/R: any worker of the rank (TryHold: exchange, acquire; Drop: store, release).
  alignas(kCacheLine) std::atomic<bool> busy_{false};
};

}  // namespace corral::internal
