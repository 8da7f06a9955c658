// Placement as the CLI prints it: the summary's threads line (`corral train`) and the machine,
// worker map and groups of `corral topology --hardware`.
#pragma once

#include <cstdio>
#include <span>
#include <string>

#include <corral/placement.h>

namespace corral::cli {

// Where the threads ran: pinned to which hardware threads, planned on a described machine
// (not bound), or not pinned.
std::string ThreadsText(const PlacementReport& p);

// "2 packages, 4 NUMA nodes, 8 L3 domains, 32 cores, 64 hardware threads".
std::string MachineText(const MachineShape& m);

// Members of each group, "{0-3} {4-7}", groups numbered 0.. as ReplicaGroups returns them.
std::string GroupsText(std::span<const int> group_of);

}  // namespace corral::cli
