// What every synchronous compressed replica mode does in a round besides its arithmetic
// (DESIGN.md §2 "Rounds", §5): send one payload to the recipients of its topology row, wait
// for its neighbours' messages of the same round (no global barrier), and move the virtual
// clock by compute and modelled communication, exactly as DpsgdMode (dpsgd.h) does for D-PSGD.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <corral/error.h>
#include <corral/topology.h>

#include "engine/src/channel/link.h"
#include "engine/src/channel/transport.h"
#include "engine/src/gossip/mixing.h"

namespace corral::internal {

// One worker's time: virtual seconds and the thread CPU time already counted into them.
// Thread safety: owner-only (the coordinator reads `clock` while the workers are parked).
struct RoundClock {
  double clock = 0;     // virtual seconds
  double cpu_mark = 0;  // thread CPU seconds when compute was last counted

  // Counts the compute since the last mark into the clock.
  void CountCompute() {
    const double cpu = ThreadCpuSeconds();
    clock += cpu - cpu_mark;
    cpu_mark = cpu;
  }
};

// How the messages of a round compare in size: kEqual, every sender of one spec writes
// WireBytes(d) bytes, so a message of another size is an error; kBounded, they vary up to the
// transport's slot (which Send enforces) and the caller validates each one as it decodes it
// (local's sparse rounds, sparse_changes.h).
enum class MessageSizes { kEqual, kBounded };

// One round r of worker w: sends `payload` (the same bytes) to every recipient of w, then
// receives every neighbour's round-r message into `held`, in Neighbours(w, r) order. The
// caller decodes them and then calls ReleaseAll. Returns false when the transport was aborted
// (another worker failed or the run halted): `held` is then released and empty, and the
// caller must leave its state as it was. With MessageSizes::kEqual a message of another size
// than `payload` throws kWorkerFailed. Virtual time, only when `linked` (a
// --link is modelled in virtual mode): the compute since the last round is counted, the clock
// becomes max(own, due) over the messages, and the transport's own time is not counted as
// compute. Without a link the round reads no clock at all (a thread-CPU-clock read is a system
// call, about a microsecond, as much as a whole round on a small model): the caller counts its
// compute once per epoch, so virtual time is then the compute time alone, as EvalPoint says.
inline bool ExchangeRound(Transport& transport, const Topology& topology, int w, std::uint64_t r,
                          std::span<const std::byte> payload, LinkModel& link, LinkMode mode,
                          bool linked, RoundClock& time, std::vector<Message>& held,
                          const char* algo, MessageSizes sizes = MessageSizes::kEqual) {
  const bool realtime = mode == LinkMode::kRealtime;
  const bool clocked = !realtime && linked;
  double now = 0;
  if (realtime) {
    now = transport.WallSeconds();
  } else {
    if (clocked) time.CountCompute();
    now = time.clock;
  }
  for (const Neighbour& to : topology.Recipients(w, r)) {
    const double due = link.Send(now, to.worker, payload.size());
    if (!transport.Send(w, to.worker, {.round = r, .due = due}, payload)) return false;
  }
  const auto release_all = [&] {
    for (const Message& m : held) transport.Release(w, m);
    held.clear();
  };
  held.clear();  // capacity reserved by the caller: no allocation
  for (const Neighbour& from : topology.Neighbours(w, r)) {
    std::optional<Message> m = transport.Receive(w, from.worker, r);
    if (!m) {
      release_all();
      return false;
    }
    held.push_back(*m);
    if (sizes == MessageSizes::kEqual && m->header.bytes != payload.size()) {
      release_all();
      throw Error(ErrorCode::kWorkerFailed,
                  std::string(algo) + ": worker " + std::to_string(w) + " received " +
                      std::to_string(m->header.bytes) + " bytes from worker " +
                      std::to_string(from.worker) + ", expected " + std::to_string(payload.size()));
    }
  }
  if (clocked) {
    for (const Message& m : held) time.clock = LinkModel::Arrive(time.clock, m.header.due);
    time.cpu_mark = ThreadCpuSeconds();
  }
  return true;
}

inline void ReleaseAll(Transport& transport, int w, std::vector<Message>& held) {
  for (const Message& m : held) transport.Release(w, m);
  held.clear();
}

// Worker w's row of W at round r in worker order, self included at its place: calls
// term(weight, k) with k = -1 for w itself and k for the k-th entry of Neighbours(w, r).
// Summing in worker order makes the result independent of how the caller stores its memories.
template <typename Term>
void ForEachInWorkerOrder(const Topology& topology, int w, std::uint64_t r, Term&& term) {
  const std::span<const Neighbour> in = topology.Neighbours(w, r);
  const float self = static_cast<float>(topology.SelfWeight(w, r));
  bool own_added = false;
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (!own_added && w < in[k].worker) {
      term(self, -1);
      own_added = true;
    }
    term(static_cast<float>(in[k].weight), static_cast<int>(k));
  }
  if (!own_added) term(self, -1);
}

// The row as MixSources: `own` for the self term and others[k] for Neighbours(w, r)[k].
inline void MixingRow(const Topology& topology, int w, std::uint64_t r, const float* own,
                      std::span<const float* const> others, std::vector<MixSource>& row) {
  row.clear();
  ForEachInWorkerOrder(topology, w, r, [&](float weight, int k) {
    row.push_back({weight, k < 0 ? own : others[static_cast<std::size_t>(k)]});
  });
}

}  // namespace corral::internal
