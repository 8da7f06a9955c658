#include "engine/src/runtime/placement.h"

#include <hwloc.h>

#include <set>
#include <vector>

namespace corral::internal {
namespace {

// OS indices of the hardware threads in the order workers take them.
std::vector<int> PuOrder(hwloc_topology_t topo, Pin pin, int workers) {
  const int pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  std::vector<int> order;
  if (pus <= 0) return order;
  if (pin == Pin::kScatter) {
    // hwloc_distrib spreads `workers` sets over the tree, packages and cores first.
    std::vector<hwloc_bitmap_t> sets(static_cast<std::size_t>(workers));
    hwloc_obj_t root = hwloc_get_root_obj(topo);
    hwloc_distrib(topo, &root, 1, sets.data(), static_cast<unsigned>(workers), INT_MAX, 0);
    for (hwloc_bitmap_t set : sets) {
      hwloc_bitmap_singlify(set);
      order.push_back(hwloc_bitmap_first(set));
      hwloc_bitmap_free(set);
    }
    return order;
  }
  for (int w = 0; w < workers; ++w) {
    // More workers than hardware threads (correctness runs) wrap around.
    hwloc_obj_t pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, static_cast<unsigned>(w % pus));
    order.push_back(static_cast<int>(pu->os_index));
  }
  return order;
}

}  // namespace

Placement::Placement(Pin pin, int workers) {
  report_.worker_pu.assign(static_cast<std::size_t>(workers), -1);
  if (hwloc_topology_init(&topology_) != 0) {
    topology_ = nullptr;
    return;
  }
  if (hwloc_topology_load(topology_) != 0) {
    hwloc_topology_destroy(topology_);
    topology_ = nullptr;
    return;
  }
  report_.hardware_threads = hwloc_get_nbobjs_by_type(topology_, HWLOC_OBJ_PU);
  const int numa = hwloc_get_nbobjs_by_type(topology_, HWLOC_OBJ_NUMANODE);
  report_.numa_nodes_total = numa > 0 ? numa : 1;
  if (pin == Pin::kNone) return;

  report_.worker_pu = PuOrder(topology_, pin, workers);
  report_.pinned = !report_.worker_pu.empty();
  std::set<int> nodes;
  report_.worker_numa.assign(report_.worker_pu.size(), -1);
  for (std::size_t w = 0; w < report_.worker_pu.size(); ++w) {
    const int os_pu = report_.worker_pu[w];
    hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(topology_, static_cast<unsigned>(os_pu));
    for (int n = 0; pu != nullptr && n < numa; ++n) {
      hwloc_obj_t node = hwloc_get_obj_by_type(topology_, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(n));
      if (hwloc_bitmap_isset(node->cpuset, os_pu)) {
        nodes.insert(n);
        report_.worker_numa[w] = n;
      }
    }
  }
  report_.numa_nodes_used = nodes.empty() ? 1 : static_cast<int>(nodes.size());
}

Placement::~Placement() {
  if (topology_ != nullptr) hwloc_topology_destroy(topology_);
}

bool Placement::Bind(int worker) const {
  if (topology_ == nullptr || !report_.pinned) return false;
  const int os_pu = report_.worker_pu[static_cast<std::size_t>(worker)];
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  hwloc_bitmap_only(set, static_cast<unsigned>(os_pu));
  const int rc = hwloc_set_cpubind(topology_, set, HWLOC_CPUBIND_THREAD);
  hwloc_bitmap_free(set);
  return rc == 0;
}

}  // namespace corral::internal
