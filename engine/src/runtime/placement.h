// Placement: which hardware thread each worker runs on (hwloc), on this machine or on a
// described one (--hardware, corral/placement.h), and the cache domains that groups follow.
//
// Thread safety: construct on the coordinating thread; Bind() is then called concurrently,
// each worker for itself (hwloc topology queries are thread-safe once loaded).
#pragma once

#include <string_view>

#include <corral/placement.h>

#include "engine/src/runtime/hardware.h"

namespace corral::internal {

class Placement {
 public:
  // Throws kBadConfig for a bad --hardware (hardware.h).
  Placement(std::string_view hardware, Pin pin, int workers);
  Placement(const Placement&) = delete;
  Placement& operator=(const Placement&) = delete;

  // Binds the calling thread to worker `worker`'s hardware thread. Best effort: returns false
  // when pinning is off or refused (a container without the right, say) and on a described
  // machine (nothing there to bind to); the thread then runs unpinned and the caller reports it.
  bool Bind(int worker) const;

  // The plan: report().pinned says only that workers were given hardware threads; the caller
  // clears it when a Bind failed.
  const PlacementReport& report() const { return report_; }

 private:
  Hardware hardware_;
  PlacementReport report_;
};

}  // namespace corral::internal
