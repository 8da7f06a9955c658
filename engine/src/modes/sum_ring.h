// The all-reduce of sync and qsgd across ranks with --allreduce ring (sync_sgd.h,
// docs/algorithms.md "sync across ranks"): a sum of d floats, each rank adding its workers'
// terms, formed in one process's order and handed to every rank.
//
// The sum is cut into chunks (DefaultChunk). Rank 0 starts each chunk's running sum at +0 and
// adds its terms; rank 1 receives it, adds its own, and so on up to rank R-1, whose result is
// the total. The totals then continue round the ring (R-1 -> 0 -> 1 -> ... -> R-2), so every
// rank holds them. Every coordinate thus sees ((0 + g_0) + g_1) + ... + g_{n-1} in global
// worker order, the bits of one process. Chunks pipeline: a link carries about 2d floats a
// step, as a classic ring all-reduce's, and no rank holds more than the d-float sum.
//
// The channels are r -> r+1 (mod R) of a transport whose "workers" are the ranks, built by the
// cluster (<corral/cluster.h> MakeTransport, so MPI carries the bytes); payloads are raw fp32.
// A channel carries partial sums and totals in one order every rank can compute: iteration c
// (c = 0 .. K+L-1 for K chunks, lag L) first passes chunk c's partial sum on (c < K), then
// (c >= L, except on rank R-1) receives chunk c-L's total and forwards it unless the next rank
// is R-1, which made it. The header's round is the message's sequence number on its channel.
//
// No deadlock with blocking Sends: when rank R-1 sends total c, rank 0 has sent partial c and
// received every total up to c-L-1, so channel R-1 -> 0 holds at most L+1 messages, and its
// L+1 buffers (slots_per_edge) mean rank R-1 never waits to send. A rank waiting to receive
// from rank r-1 implies r-1 is not waiting to send to it (its message would be there), so a
// cycle of waits would be of receives only, which the order above rules out (every receive
// waits for a send of an earlier or the same iteration). L = R lets R chunks travel at once, enough to keep
// every link of the ring busy (a chunk's partial and total take R hops). Waits are the
// transport's: a short spin, then asleep on the rank's doorbell (doorbell.h), never an
// unbounded spin.
//
// Thread safety: one thread per rank at a time acts as the rank's endpoint (Run), and calls
// are ordered by the caller (sync: barrier completions, whose phases order one another).
// Constructor and destructor: collective across the ranks (the transport's), workers not
// running; Bind once on the thread that should first touch the receive buffers.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <corral/cluster.h>
#include <corral/error.h>

#include "engine/src/channel/shm_transport.h"
#include "engine/src/channel/transport.h"

namespace corral::internal {

class SumRing {
 public:
  // The chunk: d / R floats, as a classic ring all-reduce cuts its segments (R chunks keep
  // every link busy), but at least kMinChunkFloats (32 KiB): every message crosses two progress
  // threads, about 0.1 ms on a loaded 2-core machine (docs/algorithms.md), so fewer is better.
  static constexpr std::size_t kMinChunkFloats = 8192;
  static std::size_t DefaultChunk(std::size_t dim, int ranks) {
    const auto r = static_cast<std::size_t>(ranks);
    return std::max((dim + r - 1) / r, kMinChunkFloats);
  }

  // Collective over `cluster` (ranks() > 1): sums of `dim` floats, in chunks of `chunk` floats
  // (0: DefaultChunk; every rank passes the same; the bench varies it).
  SumRing(Cluster& cluster, std::size_t dim, std::size_t chunk = 0)
      : rank_(cluster.rank()), ranks_(cluster.ranks()), dim_(dim),
        chunk_(std::min(dim, chunk == 0 ? DefaultChunk(dim, ranks_) : chunk)),
        lag_(static_cast<std::size_t>(ranks_)) {
    ShmTransportConfig config{
        .workers = ranks_,
        .max_payload_bytes = static_cast<std::uint32_t>(std::max<std::size_t>(chunk_, 1) * 4),
        .slots_per_edge = static_cast<std::uint32_t>(lag_ + 1)};
    for (int r = 0; r < ranks_; ++r) config.edges.emplace_back(r, (r + 1) % ranks_);
    std::vector<int> rank_of(static_cast<std::size_t>(ranks_));
    std::iota(rank_of.begin(), rank_of.end(), 0);
    transport_ = cluster.MakeTransport(config, rank_of);
  }

  void Bind() { transport_->Bind(rank_); }

  // One all-reduce into `totals` (dim floats): add(lo, part) adds this rank's terms of
  // coordinates [lo, lo + part.size()) to the running sum `part`, in this rank's worker order.
  // Every rank then holds the totals. False: the transport was aborted (a rank failed); the
  // totals are then incomplete. Throws (kWorkerFailed) on a message out of order (a bug).
  template <typename Add>
  [[nodiscard]] bool Run(std::span<float> totals, Add add) {
    const int next = (rank_ + 1) % ranks_;
    const int previous = (rank_ + ranks_ - 1) % ranks_;
    const bool last = rank_ == ranks_ - 1;
    const std::size_t chunks = dim_ == 0 ? 0 : (dim_ + chunk_ - 1) / chunk_;
    for (std::size_t c = 0; c < chunks + lag_; ++c) {
      if (c < chunks) {  // the partial sum of chunk c: started here or received, then passed on
        const std::span<float> part = Chunk(totals, c);
        if (rank_ == 0) {
          std::fill(part.begin(), part.end(), 0.0f);
        } else if (!ReceiveInto(previous, part)) {
          return false;
        }
        add(c * chunk_, part);
        if (!SendOn(next, part)) return false;  // rank R-1: the total, to rank 0
      }
      if (!last && c >= lag_ && c - lag_ < chunks) {  // the total of chunk c - L
        const std::span<float> total = Chunk(totals, c - lag_);
        if (!ReceiveInto(previous, total)) return false;
        if (next != ranks_ - 1 && !SendOn(next, total)) return false;
      }
    }
    return true;
  }

 private:
  std::span<float> Chunk(std::span<float> all, std::size_t c) const {
    const std::size_t lo = c * chunk_;
    return all.subspan(lo, std::min(chunk_, dim_ - lo));
  }
  bool SendOn(int to, std::span<const float> values) {
    return transport_->Send(rank_, to, {.round = sent_++}, std::as_bytes(values));
  }
  bool ReceiveInto(int from, std::span<float> out) {
    const std::optional<Message> m = transport_->Receive(rank_, from, received_++);
    if (!m) return false;
    if (m->payload.size() != out.size_bytes()) {
      throw Error(ErrorCode::kWorkerFailed,
                  "--allreduce ring: rank " + std::to_string(rank_) + " received " +
                      std::to_string(m->payload.size()) + " bytes from rank " +
                      std::to_string(from) + ", expected a chunk of " +
                      std::to_string(out.size_bytes()));
    }
    std::memcpy(out.data(), m->payload.data(), out.size_bytes());
    transport_->Release(rank_, *m);
    return true;
  }

  const int rank_;
  const int ranks_;
  const std::size_t dim_;
  const std::size_t chunk_;
  const std::size_t lag_;  // L: chunks a rank's partials run ahead of the totals it receives
  std::unique_ptr<Transport> transport_;
  std::uint64_t sent_ = 0;      // messages sent on rank -> next (their rounds)
  std::uint64_t received_ = 0;  // messages received on previous -> rank
};

}  // namespace corral::internal
