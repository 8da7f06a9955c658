// Placement: the machine a run plans for, where each worker runs on it, and the groups of
// workers that share a cache domain (README, "Placement and hardware").
//
//   corral::PlacementReport p = corral::PlanPlacement("synthetic:pack:2 numa:4 l3:2 core:8 pu:2",
//                                                     corral::Pin::kScatter, 16);
//   // p.worker_core, p.worker_l3, p.worker_numa: where each of the 16 workers would run.
//
// Thread safety: the functions are thread-safe (each loads its own hwloc topology).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <corral/kinds.h>

namespace corral {

// The most hardware threads a --hardware description may have (the largest machines today
// have a few thousand); a larger one is refused before hwloc builds it.
inline constexpr long kMaxDescribedHardwareThreads = 65536;

// What the machine has, as hwloc counts it.
struct MachineShape {
  int packages = 1;
  int numa_nodes = 1;
  int l3_domains = 0;  // L3 caches; 0 where hwloc reports none
  int cores = 1;
  int hardware_threads = 1;
};

// Where the workers run (or would run, on a described machine). Per-worker vectors have one
// entry per worker; -1 means unknown (--pin none: the OS places the thread).
struct PlacementReport {
  // The machine planned for: "this machine", or the --hardware description.
  std::string hardware = "this machine";
  // A description (synthetic or XML) replaced the machine: the plan is shown, nothing is bound.
  bool simulated = false;
  // Every worker's thread was bound to its hardware thread.
  bool pinned = false;
  MachineShape machine;
  std::vector<int> worker_pu;       // OS index of each worker's hardware thread
  std::vector<int> worker_core;     // logical index of its core
  std::vector<int> worker_l3;       // logical index of its L3 cache (-1 also: no L3 reported)
  std::vector<int> worker_numa;     // logical index of its NUMA node
  std::vector<int> worker_package;  // logical index of its package (-1 also: none reported)
  // Its cache domain: workers with the same id share an L3 cache, a NUMA node and a package
  // (levels the machine does not report are left out); ids 0, 1, ... in order of first worker.
  std::vector<int> worker_domain;
  int numa_nodes_used = 1;
};

// Plans `workers` workers on `hardware` with `pin`, binding nothing. `hardware`: "" (this
// machine), synthetic:SPEC (hwloc's synthetic topology, e.g. "pack:2 numa:4 l3:2 core:8
// pu:2", levels from the largest to the smallest; a missing pu level means one per core) or
// xml:FILE (a topology exported by `lstopo FILE.xml`). Throws corral::Error (kBadConfig)
// naming --hardware and what was expected.
PlacementReport PlanPlacement(std::string_view hardware, Pin pin, int workers);

// hogwild++'s groups (one replica each): workers [g c, (g+1) c) with --group-size c > 0; with
// c = 0 (auto) one group per cache domain (`worker_domain`, as PlacementReport), or groups of 1
// when any worker's domain is unknown. Group ids 0, 1, ... in order of their first worker.
std::vector<int> ReplicaGroups(int workers, int group_size, const std::vector<int>& worker_domain);

// The groups of the `hierarchical` topology: the cache domains, or one group (empty) when any
// worker's domain is unknown.
std::vector<int> HierarchicalGroups(const std::vector<int>& worker_domain);

// The known (>= 0) ids of `ids`, ascending, as ranges: "0-3,8,10-11"; "none" when there are none.
std::string IdRanges(const std::vector<int>& ids);

}  // namespace corral
