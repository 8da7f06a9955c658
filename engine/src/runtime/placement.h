// Placement: which hardware thread each worker runs on (hwloc), on this machine or on a
// described one (--hardware, corral/placement.h), and the cache domains that groups follow.
//
// Thread safety: construct on the coordinating thread; Bind() is then called concurrently,
// each worker for itself (hwloc topology queries are thread-safe once loaded).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <corral/placement.h>

#include "engine/src/runtime/hardware.h"

namespace corral::internal {

// The part of the machine's largest cache one worker can count on (--shuffle auto): the
// smallest cache of the largest level hwloc reports (L3, else L2), divided by the workers that
// share one. bytes = 0: unknown (no cache reported).
struct CacheShare {
  double bytes = 0;        // per worker
  double cache_bytes = 0;  // the whole cache
  std::string level;       // "L3", "L2"
  int sharers = 1;         // workers on one such cache
};

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

  // Binds `areas`, memory worker `worker` owns and has already first-touched (its shard,
  // replica), to the worker's NUMA node with hwloc (HWLOC_MEMBIND_BIND, moving pages that lie
  // elsewhere). Called once in the worker's setup, never on its hot path. Returns false when
  // nothing was bound (unpinned, a described machine, or the system refused): the memory then
  // stays where first touch put it. hwloc binds whole pages, so a page an area shares with a
  // neighbouring allocation moves with it.
  bool BindLocal(int worker, const std::vector<std::span<const std::byte>>& areas) const;

  // Interleaves `area` page by page over the NUMA nodes the workers run on (hogwild's shared
  // model: every worker writes all of it, so no node is its home; interleaving spreads its
  // traffic over every node's memory controller instead of loading the coordinator's node).
  // false as BindLocal.
  bool Interleave(std::span<const std::byte> area) const;

  // The logical NUMA node that holds every page of `area` (hwloc_get_area_memlocation), or -1
  // when the pages lie on several nodes or their location is unknown. For tests.
  int NodeOf(std::span<const std::byte> area) const;

  // The plan: report().pinned says only that workers were given hardware threads; the caller
  // clears it when a Bind failed.
  const PlacementReport& report() const { return report_; }

  // Each worker's share of the largest cache level: pinned workers count those on the same L3
  // (report().worker_l3), otherwise the workers are assumed spread evenly over the caches.
  const CacheShare& cache_share() const { return cache_share_; }

 private:
  Hardware hardware_;
  PlacementReport report_;
  CacheShare cache_share_;
};

}  // namespace corral::internal
