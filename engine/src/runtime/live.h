// The engine's side of corral::LiveModel: a run attaches a copy function while it trains, and
// replica modes serve copies of their replicas at step boundaries through a ReplicaTap.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <vector>

#include <corral/live_model.h>

namespace corral {

// Thread safety: every member is guarded by `mutex`.
struct LiveModel::Impl {
  // Serialises snapshots with each other, with attaching and detaching a run, and with the
  // coordinator's writes to the model between epochs (buckwild's rescaling).
  std::mutex mutex;
  std::function<void(std::span<float>)> copy;  // the running model's copy; empty: no run
  std::size_t num_params = 0;                  // of the running model
  std::vector<float> last;                     // the last finished run's model
  bool has_last = false;
  std::uint64_t served = 0;
};

namespace internal {

struct LiveAccess {
  static LiveModel::Impl& Of(LiveModel& live) { return *live.impl_; }
};

// Attaches a run to a LiveModel for its lifetime. Declared after everything `copy` touches,
// so it detaches before they are destroyed. Thread safety: coordinator-only.
class LiveAttachment {
 public:
  // Throws kBadConfig when another run is attached.
  LiveAttachment(LiveModel* live, std::size_t num_params,
                 std::function<void(std::span<float>)> copy);
  ~LiveAttachment();  // detaches; the model stays readable as `last` only after Finish
  LiveAttachment(const LiveAttachment&) = delete;
  LiveAttachment& operator=(const LiveAttachment&) = delete;

  // Holds snapshots off while the coordinator writes the model outside an epoch.
  std::unique_lock<std::mutex> Exclusive();
  // The run's final model, served after it detaches.
  void Finish(std::span<const float> params);

 private:
  LiveModel::Impl* impl_ = nullptr;
};

// Copies of the replicas for snapshots, served by their owners (DpsgdMode). A requester
// bumps `request_`; each worker polls it once per step (one relaxed load: a late look costs a
// step) and, when it changed, copies its replica into its slot under `mutex_`. A worker between
// epochs has parked a copy of its replica, so nobody waits for a worker that is not stepping.
// All slot data is guarded by `mutex_`; the relaxed `request_` only says "look".
// Thread safety: Park/Unpark/Poll by worker w only (for its own w); Collect by one requester
// at a time (LiveModel::Impl::mutex serialises them).
class ReplicaTap {
 public:
  void Init(int workers, std::size_t num_params);  // before the workers start
  bool active() const { return !slots_.empty(); }

  // Worker w: its replica is about to stop changing (setup done, epoch over) or to change.
  void Park(int w, std::span<const float> x);
  void Unpark(int w);
  // Worker w, at a step boundary. Never allocates; locks only while a request is pending.
  void Poll(int w, std::span<const float> x) {
    const std::uint64_t wanted = request_.load(std::memory_order_relaxed);
    if (wanted != Slot(w).seen) Serve(w, x, wanted);
  }
  // Requester: waits until every worker has served or parked, then calls f(replica copies).
  void Collect(const std::function<void(std::span<const std::span<const float>>)>& f);

 private:
  struct alignas(64) SlotState {
    std::vector<float> copy;   // guarded by mutex_
    std::uint64_t served = 0;  // request generation of `copy`; guarded by mutex_
    bool parked = true;        // guarded by mutex_
    std::uint64_t seen = 0;    // owner-only: the last generation it served
  };
  void Serve(int w, std::span<const float> x, std::uint64_t wanted);
  SlotState& Slot(int w) { return slots_[static_cast<std::size_t>(w)]; }

  // W: requester (under mutex_); R: workers once per step. relaxed: it carries no data (the
  // copy itself is ordered by mutex_); a worker that reads it late serves one step later.
  std::atomic<std::uint64_t> request_{0};
  std::mutex mutex_;
  std::condition_variable served_;
  std::vector<SlotState> slots_;
};

}  // namespace internal
}  // namespace corral
