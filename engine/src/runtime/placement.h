// Placement: which hardware thread each worker runs on (hwloc), and the NUMA nodes that uses.
//
// Thread safety: construct on the coordinating thread; Bind() is then called concurrently,
// each worker for itself (hwloc topology queries are thread-safe once loaded).
#pragma once

#include <corral/train.h>

struct hwloc_topology;

namespace corral::internal {

class Placement {
 public:
  Placement(Pin pin, int workers);
  ~Placement();
  Placement(const Placement&) = delete;
  Placement& operator=(const Placement&) = delete;

  // Binds the calling thread to worker `worker`'s hardware thread. Best effort: returns false
  // when pinning is off or refused (a container without the right, say); the thread then runs
  // unpinned and the caller reports it.
  bool Bind(int worker) const;

  const PlacementReport& report() const { return report_; }

 private:
  hwloc_topology* topology_ = nullptr;
  PlacementReport report_;
};

}  // namespace corral::internal
