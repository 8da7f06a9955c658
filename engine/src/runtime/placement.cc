#include "engine/src/runtime/placement.h"

#include <hwloc.h>

#include <algorithm>
#include <climits>
#include <iterator>
#include <string>
#include <set>
#include <tuple>
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

// Logical index of `pu`'s ancestor of `type`, -1 when it has none.
int AncestorIndex(hwloc_topology_t topo, hwloc_obj_t pu, hwloc_obj_type_t type) {
  hwloc_obj_t a = hwloc_get_ancestor_obj_by_type(topo, type, pu);
  return a != nullptr ? static_cast<int>(a->logical_index) : -1;
}

// Logical index of the NUMA node whose cpuset holds `pu` (in hwloc 2 nodes hang off the
// tree as memory children, so they are no ancestors), -1 when none does.
int NumaIndex(hwloc_topology_t topo, hwloc_obj_t pu) {
  for (hwloc_obj_t node = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, nullptr); node != nullptr;
       node = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, node)) {
    if (hwloc_bitmap_isset(node->cpuset, pu->os_index)) return static_cast<int>(node->logical_index);
  }
  return -1;
}

MachineShape ShapeOf(hwloc_topology_t topo) {
  const auto count = [topo](hwloc_obj_type_t type, int at_least) {
    return std::max(at_least, hwloc_get_nbobjs_by_type(topo, type));
  };
  return {.packages = count(HWLOC_OBJ_PACKAGE, 1),
          .numa_nodes = count(HWLOC_OBJ_NUMANODE, 1),
          .l3_domains = count(HWLOC_OBJ_L3CACHE, 0),
          .cores = count(HWLOC_OBJ_CORE, 1),
          .hardware_threads = count(HWLOC_OBJ_PU, 1)};
}

// Numbers distinct values 0, 1, ... in order of first appearance.
template <typename Key>
std::vector<int> FirstSeenIds(const std::vector<Key>& keys) {
  std::vector<Key> seen;
  std::vector<int> ids;
  for (const Key& k : keys) {
    auto at = std::find(seen.begin(), seen.end(), k);
    if (at == seen.end()) at = seen.insert(seen.end(), k);
    ids.push_back(static_cast<int>(at - seen.begin()));
  }
  return ids;
}

// Each of `workers` workers' share of the largest cache level (CacheShare); `worker_l3` as
// PlacementReport (all -1 when unpinned or no L3 is reported).
CacheShare CacheShareOf(hwloc_topology_t topo, int workers, const std::vector<int>& worker_l3) {
  for (const auto& [type, name] : {std::pair{HWLOC_OBJ_L3CACHE, "L3"}, {HWLOC_OBJ_L2CACHE, "L2"}}) {
    const int caches = hwloc_get_nbobjs_by_type(topo, type);
    if (caches <= 0) continue;
    double smallest = 0;
    for (int i = 0; i < caches; ++i) {
      hwloc_obj_t c = hwloc_get_obj_by_type(topo, type, static_cast<unsigned>(i));
      const auto size = static_cast<double>(c->attr->cache.size);
      if (size > 0 && (smallest == 0 || size < smallest)) smallest = size;
    }
    if (smallest == 0) continue;
    int sharers = (workers + caches - 1) / caches;
    const bool placed = type == HWLOC_OBJ_L3CACHE && !worker_l3.empty() &&
                        std::ranges::all_of(worker_l3, [](int l3) { return l3 >= 0; });
    if (placed) {
      sharers = 0;
      for (const int l3 : worker_l3) sharers = std::max(sharers, static_cast<int>(std::ranges::count(worker_l3, l3)));
    }
    sharers = std::max(sharers, 1);
    return {.bytes = smallest / sharers, .cache_bytes = smallest, .level = name, .sharers = sharers};
  }
  return {};
}

}  // namespace

Placement::Placement(std::string_view hardware, Pin pin, int workers) : hardware_(hardware) {
  const std::size_t n = static_cast<std::size_t>(workers);
  report_.hardware = hardware_.name();
  report_.simulated = hardware_.simulated();
  for (std::vector<int>* v : {&report_.worker_pu, &report_.worker_core, &report_.worker_l3, &report_.worker_numa,
                              &report_.worker_package, &report_.worker_domain}) {
    v->assign(n, -1);
  }
  hwloc_topology_t topo = hardware_.topology();
  if (topo == nullptr) return;
  report_.machine = ShapeOf(topo);
  cache_share_ = CacheShareOf(topo, workers, {});
  if (pin == Pin::kNone) return;

  const std::vector<int> order = PuOrder(topo, pin, workers);
  if (order.size() != n) return;
  report_.pinned = true;
  std::set<int> nodes;
  std::vector<std::tuple<int, int, int>> domain(n);  // (package, node, L3)
  for (std::size_t w = 0; w < n; ++w) {
    report_.worker_pu[w] = order[w];
    hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(topo, static_cast<unsigned>(order[w]));
    if (pu == nullptr) continue;
    report_.worker_core[w] = AncestorIndex(topo, pu, HWLOC_OBJ_CORE);
    report_.worker_l3[w] = AncestorIndex(topo, pu, HWLOC_OBJ_L3CACHE);
    report_.worker_package[w] = AncestorIndex(topo, pu, HWLOC_OBJ_PACKAGE);
    report_.worker_numa[w] = NumaIndex(topo, pu);
    if (report_.worker_numa[w] >= 0) nodes.insert(report_.worker_numa[w]);
    domain[w] = {report_.worker_package[w], report_.worker_numa[w], report_.worker_l3[w]};
  }
  report_.worker_domain = FirstSeenIds(domain);
  cache_share_ = CacheShareOf(topo, workers, report_.worker_l3);
  report_.numa_nodes_used = nodes.empty() ? 1 : static_cast<int>(nodes.size());
}

bool Placement::Bind(int worker) const {
  hwloc_topology_t topo = hardware_.topology();
  if (topo == nullptr || hardware_.simulated() || !report_.pinned) return false;
  const int os_pu = report_.worker_pu[static_cast<std::size_t>(worker)];
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  hwloc_bitmap_only(set, static_cast<unsigned>(os_pu));
  const int rc = hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_THREAD);
  hwloc_bitmap_free(set);
  return rc == 0;
}

bool Placement::BindLocal(int worker, const std::vector<std::span<const std::byte>>& areas) const {
  hwloc_topology_t topo = hardware_.topology();
  if (topo == nullptr || hardware_.simulated() || !report_.pinned) return false;
  const int node_index = report_.worker_numa[static_cast<std::size_t>(worker)];
  hwloc_obj_t node = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(std::max(0, node_index)));
  if (node_index < 0 || node == nullptr) return false;
  for (const std::span<const std::byte> area : areas) {
    if (area.empty()) continue;
    if (hwloc_set_area_membind(topo, area.data(), area.size(), node->nodeset, HWLOC_MEMBIND_BIND,
                               HWLOC_MEMBIND_BYNODESET | HWLOC_MEMBIND_MIGRATE) != 0) {
      return false;
    }
  }
  return true;
}

bool Placement::Interleave(std::span<const std::byte> area) const {
  hwloc_topology_t topo = hardware_.topology();
  if (topo == nullptr || hardware_.simulated() || !report_.pinned) return false;
  if (area.empty()) return true;
  hwloc_nodeset_t nodes = hwloc_bitmap_alloc();
  for (const int n : report_.worker_numa) {
    hwloc_obj_t node = n >= 0 ? hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(n)) : nullptr;
    if (node != nullptr) hwloc_bitmap_or(nodes, nodes, node->nodeset);
  }
  const bool ok = !hwloc_bitmap_iszero(nodes) &&
                  hwloc_set_area_membind(topo, area.data(), area.size(), nodes, HWLOC_MEMBIND_INTERLEAVE,
                                         HWLOC_MEMBIND_BYNODESET | HWLOC_MEMBIND_MIGRATE) == 0;
  hwloc_bitmap_free(nodes);
  return ok;
}

int Placement::NodeOf(std::span<const std::byte> area) const {
  hwloc_topology_t topo = hardware_.topology();
  if (topo == nullptr || hardware_.simulated() || area.empty()) return -1;
  hwloc_nodeset_t where = hwloc_bitmap_alloc();
  int node = -1;
  if (hwloc_get_area_memlocation(topo, area.data(), area.size(), where, HWLOC_MEMBIND_BYNODESET) == 0 &&
      hwloc_bitmap_weight(where) == 1) {
    hwloc_obj_t obj = hwloc_get_numanode_obj_by_os_index(topo, static_cast<unsigned>(hwloc_bitmap_first(where)));
    if (obj != nullptr) node = static_cast<int>(obj->logical_index);
  }
  hwloc_bitmap_free(where);
  return node;
}

}  // namespace corral::internal

namespace corral {

PlacementReport PlanPlacement(std::string_view hardware, Pin pin, int workers) {
  return internal::Placement(hardware, pin, workers).report();
}

std::vector<int> ReplicaGroups(int workers, int group_size, const std::vector<int>& worker_domain) {
  std::vector<int> group(static_cast<std::size_t>(workers));
  const bool by_domain = group_size == 0 && worker_domain.size() == group.size() &&
                         std::all_of(worker_domain.begin(), worker_domain.end(), [](int d) { return d >= 0; });
  if (by_domain) return internal::FirstSeenIds(worker_domain);
  const int size = group_size > 0 ? group_size : 1;
  for (int w = 0; w < workers; ++w) group[static_cast<std::size_t>(w)] = w / size;
  return group;
}

std::string IdRanges(const std::vector<int>& ids) {
  std::vector<int> sorted;
  std::copy_if(ids.begin(), ids.end(), std::back_inserter(sorted), [](int id) { return id >= 0; });
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::string out;
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(sorted[i]);
    if (j > i) {
      out += '-';
      out += std::to_string(sorted[j]);
    }
    i = j + 1;
  }
  return out.empty() ? "none" : out;
}

std::vector<int> HierarchicalGroups(const std::vector<int>& worker_domain) {
  for (const int d : worker_domain) {
    if (d < 0) return {};
  }
  return worker_domain;
}

}  // namespace corral
