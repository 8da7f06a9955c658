// Placement on described hardware (--hardware synthetic:... and xml:FILE): where compact and
// scatter put workers, the cache domains, and the groups hogwild++ and `hierarchical` take
// from them (docs/algorithms.md, "Groups"); and every bad description as a clear kBadConfig.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <corral/error.h>
#include <corral/placement.h>

#include "engine/src/runtime/hardware.h"
#include "engine/src/runtime/placement.h"

namespace corral {
namespace {

using V = std::vector<int>;

// 2 packages x 2 NUMA nodes x 2 L3 domains x 4 cores, one hardware thread per core.
constexpr const char* kServer = "synthetic:pack:2 numa:2 l3:2 core:4 pu:1";
// A 1-node 64-core box: no L3 reported, so the node is the cache domain.
constexpr const char* kFlatBox = "synthetic:core:64";
// A 1-node 64-core box with 8 L3 domains of 8 cores, 2 threads each (an EPYC in NPS1 mode).
constexpr const char* kCcxBox = "synthetic:pack:1 l3:8 core:8 pu:2";

V Iota(int n, int step = 1, int div = 1) {
  V v;
  for (int i = 0; i < n; ++i) v.push_back(i * step / div);
  return v;
}

TEST(PlacementOnServer, CompactFillsCoresThenL3ThenNodesThenPackages) {
  const PlacementReport p = PlanPlacement(kServer, Pin::kCompact, 32);
  EXPECT_TRUE(p.simulated);
  EXPECT_TRUE(p.pinned);
  EXPECT_EQ(p.hardware, kServer);
  EXPECT_EQ(p.machine.packages, 2);
  EXPECT_EQ(p.machine.numa_nodes, 4);
  EXPECT_EQ(p.machine.l3_domains, 8);
  EXPECT_EQ(p.machine.cores, 32);
  EXPECT_EQ(p.machine.hardware_threads, 32);
  EXPECT_EQ(p.worker_core, Iota(32));
  EXPECT_EQ(p.worker_l3, Iota(32, 1, 4));
  EXPECT_EQ(p.worker_numa, Iota(32, 1, 8));
  EXPECT_EQ(p.worker_package, Iota(32, 1, 16));
  EXPECT_EQ(p.worker_domain, Iota(32, 1, 4));  // the L3 domain: it lies inside a node
  EXPECT_EQ(p.numa_nodes_used, 4);
}

TEST(PlacementOnServer, ScatterSpreadsOverPackagesThenNodesThenL3) {
  EXPECT_EQ(PlanPlacement(kServer, Pin::kScatter, 2).worker_core, (V{0, 16}));
  const PlacementReport four = PlanPlacement(kServer, Pin::kScatter, 4);
  EXPECT_EQ(four.worker_core, (V{0, 8, 16, 24}));
  EXPECT_EQ(four.worker_numa, (V{0, 1, 2, 3}));
  EXPECT_EQ(four.worker_package, (V{0, 0, 1, 1}));
  const PlacementReport eight = PlanPlacement(kServer, Pin::kScatter, 8);
  EXPECT_EQ(eight.worker_core, Iota(8, 4));
  EXPECT_EQ(eight.worker_l3, Iota(8));
  EXPECT_EQ(eight.worker_domain, Iota(8));
}

TEST(PlacementOnServer, AutoGroupsAndHierarchicalFollowL3Domains) {
  const PlacementReport compact = PlanPlacement(kServer, Pin::kCompact, 16);
  EXPECT_EQ(ReplicaGroups(16, 0, compact.worker_domain), Iota(16, 1, 4));
  EXPECT_EQ(HierarchicalGroups(compact.worker_domain), Iota(16, 1, 4));
  const PlacementReport scatter = PlanPlacement(kServer, Pin::kScatter, 16);  // 2 per L3
  EXPECT_EQ(scatter.worker_core, Iota(16, 2));  // every other core of each L3
  EXPECT_EQ(ReplicaGroups(16, 0, scatter.worker_domain), Iota(16, 1, 2));
  // An explicit --group-size wins over the domains.
  EXPECT_EQ(ReplicaGroups(16, 8, compact.worker_domain), Iota(16, 1, 8));
}

TEST(PlacementOnServer, PinNoneLeavesEverythingUnknown) {
  const PlacementReport p = PlanPlacement(kServer, Pin::kNone, 4);
  EXPECT_FALSE(p.pinned);
  EXPECT_EQ(p.machine.cores, 32);
  for (const V* v : {&p.worker_pu, &p.worker_core, &p.worker_l3, &p.worker_numa, &p.worker_domain}) {
    EXPECT_EQ(*v, (V{-1, -1, -1, -1}));
  }
  EXPECT_EQ(ReplicaGroups(4, 0, p.worker_domain), (V{0, 1, 2, 3}));  // groups of 1
  EXPECT_TRUE(HierarchicalGroups(p.worker_domain).empty());          // one group
}

TEST(PlacementOnFlatBox, WithoutL3TheNodeIsTheDomain) {
  const PlacementReport p = PlanPlacement(kFlatBox, Pin::kCompact, 64);
  EXPECT_EQ(p.machine.numa_nodes, 1);
  EXPECT_EQ(p.machine.l3_domains, 0);
  EXPECT_EQ(p.machine.cores, 64);
  EXPECT_EQ(p.worker_core, Iota(64));
  EXPECT_EQ(p.worker_l3, V(64, -1));
  EXPECT_EQ(p.worker_domain, V(64, 0));
  EXPECT_EQ(ReplicaGroups(64, 0, p.worker_domain), V(64, 0));  // one group: hogwild
  EXPECT_EQ(PlanPlacement(kFlatBox, Pin::kScatter, 4).worker_core, (V{0, 16, 32, 48}));
}

TEST(PlacementOnCcxBox, GroupsAreTheL3DomainsOfOneNode) {
  const PlacementReport compact = PlanPlacement(kCcxBox, Pin::kCompact, 32);
  EXPECT_EQ(compact.machine.l3_domains, 8);
  EXPECT_EQ(compact.machine.hardware_threads, 128);
  EXPECT_EQ(compact.worker_core, Iota(32, 1, 2));  // compact fills a core's threads first
  EXPECT_EQ(compact.worker_numa, V(32, 0));
  EXPECT_EQ(ReplicaGroups(32, 0, compact.worker_domain), Iota(32, 1, 16));
  const PlacementReport scatter = PlanPlacement(kCcxBox, Pin::kScatter, 8);
  EXPECT_EQ(scatter.worker_core, Iota(8, 8));
  EXPECT_EQ(HierarchicalGroups(scatter.worker_domain), Iota(8));
}

// --shuffle auto's cache share: the largest cache level over the workers on one such cache
// (pinned: those on the same L3; else spread evenly); none reported, bytes 0.
TEST(CacheShare, DividesTheLargestCacheByTheWorkersOnIt) {
  using internal::Placement;
  const double l3 = Placement(kCcxBox, Pin::kNone, 1).cache_share().cache_bytes;
  EXPECT_GT(l3, 0);  // hwloc's synthetic default size
  const Placement compact(kCcxBox, Pin::kCompact, 4);  // 4 workers on the first L3's cores
  EXPECT_EQ(compact.cache_share().level, "L3");
  EXPECT_EQ(compact.cache_share().sharers, 4);
  EXPECT_EQ(compact.cache_share().bytes, l3 / 4);
  const Placement scatter(kCcxBox, Pin::kScatter, 8);  // one worker per L3
  EXPECT_EQ(scatter.cache_share().sharers, 1);
  EXPECT_EQ(Placement(kCcxBox, Pin::kNone, 20).cache_share().sharers, 3);  // 20 over 8, unpinned
  const Placement l2("synthetic:l2:2 core:1", Pin::kNone, 2);
  EXPECT_EQ(l2.cache_share().level, "L2");
  EXPECT_EQ(l2.cache_share().sharers, 1);
  EXPECT_EQ(internal::Placement(kFlatBox, Pin::kCompact, 2).cache_share().bytes, 0);
}

TEST(PlacementFromXml, ReadsAnLstopoExport) {
  // tests/data/two_packages.xml: hwloc's export of "pack:2 numa:1 l3:2 core:2 pu:2".
  const std::string xml = std::string("xml:") + CORRAL_SOURCE_DIR + "/tests/data/two_packages.xml";
  const PlacementReport p = PlanPlacement(xml, Pin::kScatter, 4);
  EXPECT_TRUE(p.simulated);
  EXPECT_EQ(p.machine.packages, 2);
  EXPECT_EQ(p.machine.numa_nodes, 2);
  EXPECT_EQ(p.machine.l3_domains, 4);
  EXPECT_EQ(p.worker_core, (V{0, 2, 4, 6}));
  EXPECT_EQ(p.worker_domain, (V{0, 1, 2, 3}));
}

TEST(PlacementOnThisMachine, IsNotSimulated) {
  const PlacementReport p = PlanPlacement("", Pin::kCompact, 1);
  EXPECT_FALSE(p.simulated);
  EXPECT_EQ(p.hardware, "this machine");
  EXPECT_GE(p.machine.hardware_threads, 1);
}

// This machine's topology is loaded once per process and shared (its load costs a small run
// tens of milliseconds); a description is each Hardware's own.
TEST(PlacementOnThisMachine, TheTopologyIsLoadedOnce) {
  const internal::Hardware first(""), second("");
  EXPECT_EQ(first.topology(), second.topology());
  const internal::Hardware described("synthetic:core:2");
  EXPECT_NE(described.topology(), first.topology());
  EXPECT_TRUE(described.simulated());
  EXPECT_FALSE(first.simulated());
}

TEST(HardwareSpec, SyntheticLevelsAreCheckedAndCompleted) {
  EXPECT_EQ(internal::CheckedSyntheticLevels("core:64"), "core:64 pu:1");
  EXPECT_EQ(internal::CheckedSyntheticLevels("\"pack:2 numa:4 l3:2 core:8 pu:2\""),
            "pack:2 numa:4 l3:2 core:8 pu:2");
  EXPECT_EQ(internal::CheckedSyntheticLevels("  Pack:2   Core:2 "), "Pack:2 Core:2 pu:1");
}

void ExpectBadHardware(const std::string& spec, const std::string& expected) {
  try {
    PlanPlacement(spec, Pin::kCompact, 2);
    ADD_FAILURE() << spec << " was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadConfig) << spec;
    EXPECT_THAT(e.what(), ::testing::HasSubstr("--hardware '" + spec + "'"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr(expected));
  }
}

TEST(HardwareSpec, BadDescriptionsNameTheFlagAndWhatWasExpected) {
  ExpectBadHardware("lstopo:x", "unknown kind of hardware description");
  ExpectBadHardware("synthetic:", "no levels");
  ExpectBadHardware("synthetic:pack:2 bogus:3", "'bogus:3' is not LEVEL:COUNT with a known level");
  ExpectBadHardware("synthetic:pack", "'pack' is not LEVEL:COUNT");
  ExpectBadHardware("synthetic:pack:0 core:2", "'pack:0': the count must be a whole number >= 1");
  ExpectBadHardware("synthetic:pack:two", "the count must be a whole number");
  ExpectBadHardware("synthetic:pack:2x", "the count must be a whole number");
  ExpectBadHardware("synthetic:pu:2 core:2", "'core:2' follows pu");
  // Refused before hwloc would build ~10^12 objects.
  ExpectBadHardware("synthetic:pack:100000 core:100000 pu:100", "more than 65536 hardware threads");
  ExpectBadHardware("synthetic:pack:99999999999999999999", "the count must be a whole number");
  ExpectBadHardware("xml:", "expected xml:FILE");
  ExpectBadHardware("xml:/nonexistent/topology.xml", "cannot read /nonexistent/topology.xml");
  const std::string garbage = ::testing::TempDir() + "corral_not_a_topology.xml";
  std::ofstream(garbage) << "<topology><object type=\"Nonsense\"";
  ExpectBadHardware("xml:" + garbage, "is not a topology XML hwloc can read");
  std::remove(garbage.c_str());
}

}  // namespace
}  // namespace corral
