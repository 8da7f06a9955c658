#include "placement_text.h"

#include <algorithm>
#include <vector>

namespace corral::cli {

std::string ThreadsText(const PlacementReport& p) {
  std::string pus;
  for (const int pu : p.worker_pu) {
    if (!pus.empty()) pus += ',';
    pus += std::to_string(pu);
  }
  if (p.simulated) {
    const bool planned = !p.worker_pu.empty() && p.worker_pu.front() >= 0;
    return "planned for " + p.hardware + (planned ? " on hardware threads " + pus : "") +
           " (a description: threads not bound)";
  }
  return p.pinned ? "pinned to hardware threads " + pus : "not pinned";
}

std::string MachineText(const MachineShape& m) {
  const auto count = [](int n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  return count(m.packages, "package", "packages") + ", " + count(m.numa_nodes, "NUMA node", "NUMA nodes") +
         ", " + count(m.l3_domains, "L3 domain", "L3 domains") + ", " + count(m.cores, "core", "cores") +
         ", " + count(m.hardware_threads, "hardware thread", "hardware threads");
}

std::string GroupsText(std::span<const int> group_of) {
  const int groups = group_of.empty() ? 0 : *std::max_element(group_of.begin(), group_of.end()) + 1;
  std::string out;
  for (int g = 0; g < groups; ++g) {
    std::vector<int> members;
    for (std::size_t w = 0; w < group_of.size(); ++w) {
      if (group_of[w] == g) members.push_back(static_cast<int>(w));
    }
    if (!out.empty()) out += ' ';
    out += '{';
    out += IdRanges(members);
    out += '}';
  }
  return out;
}

}  // namespace corral::cli
