/// \file
/// corral::LiveModel: the model of a run in progress, copied from any thread while the
/// workers keep training, so a server can answer predictions from a model that improves.
///
///   corral::LiveModel live;
///   corral::TrainObserver observer{.live = &live};
///   std::jthread trainer([&] { corral::Train(train, nullptr, config, observer); });
///   std::vector<float> w;
///   if (live.Snapshot(w)) model.Predict(w, row);   // on the serving thread, any time
///
/// Consistency of a snapshot taken while a run trains:
///  - Shared-model algorithms (hogwild, locked, sync, qsgd, buckwild): a copy of the one shared
///    model read with relaxed atomic loads while workers keep writing it. Each coordinate is a
///    value a worker stored; coordinates may be from updates a few steps apart (the same view
///    HOGWILD!'s own workers read). Workers are not paused at all.
///  - Round-based replica algorithms (dpsgd, local, dcd, ecd, choco): the mean of the replicas,
///    each copied by its owner at its next step boundary (or as it stood when its epoch ended).
///    Every replica in the mean is a whole model of one step; replicas may be a few steps
///    apart. A worker pauses only for one copy of its replica, and only while a snapshot is
///    requested.
///  - Asynchronous replica algorithms (adpsgd, hogwild++): the mean of the replicas read with
///    relaxed atomic loads, as for the shared model; workers are not paused.
/// Between epochs (and from TrainObserver::on_eval) a snapshot is exactly the model being
/// evaluated. After the run ends it is the run's final model (TrainResult::params).
///
/// Thread safety: thread-safe; concurrent Snapshot calls are served one at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace corral {

namespace internal {
struct LiveAccess;  // the engine's side: attaching a run
}  // namespace internal

class LiveModel {
 public:
  LiveModel();
  ~LiveModel();
  LiveModel(const LiveModel&) = delete;
  LiveModel& operator=(const LiveModel&) = delete;

  /// Copies the current model into `out` (resized to the parameter count): the running
  /// model while a run trains, else the last finished run's final model. Returns false, and
  /// leaves `out` alone, when no run has started yet (or the last one failed before training).
  /// While a replica run trains this waits for every worker to reach a step boundary (about
  /// one step's time).
  bool Snapshot(std::vector<float>& out) const;

  /// Whether a run is attached (training) right now.
  bool training() const;

  /// Snapshots served so far (a counter for monitoring).
  std::uint64_t snapshots() const;

  struct Impl;

 private:
  friend struct internal::LiveAccess;
  std::unique_ptr<Impl> impl_;
};

}  // namespace corral
