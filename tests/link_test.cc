// Link emulation (engine/src/channel/link.h): the --link spec and the delivery-time formula,
// against cases computed by hand.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <corral/error.h>

#include "engine/src/channel/link.h"

namespace corral::internal {
namespace {

constexpr double kEps = 1e-12;

TEST(LinkSpec, ParsesUnits) {
  const LinkSpec a = ParseLinkSpec("latency=5ms,bandwidth=10Mbit");
  EXPECT_DOUBLE_EQ(a.latency_s, 0.005);
  EXPECT_DOUBLE_EQ(a.bandwidth_bytes_per_s, 1.25e6);  // 10^7 bit/s
  EXPECT_EQ(a.nic_bytes_per_s, 0);                     // = bandwidth

  const LinkSpec b = ParseLinkSpec("nic=1Gbit/s,latency=250us,bandwidth=800Kbit");
  EXPECT_DOUBLE_EQ(b.latency_s, 250e-6);
  EXPECT_DOUBLE_EQ(b.bandwidth_bytes_per_s, 1e5);
  EXPECT_DOUBLE_EQ(b.nic_bytes_per_s, 1.25e8);

  const LinkSpec c = ParseLinkSpec("latency=1.5s");
  EXPECT_DOUBLE_EQ(c.latency_s, 1.5);
  EXPECT_EQ(c.bandwidth_bytes_per_s, LinkSpec::kUnlimited);
  EXPECT_DOUBLE_EQ(ParseLinkSpec("bandwidth=64bit").bandwidth_bytes_per_s, 8);
  EXPECT_DOUBLE_EQ(ParseLinkSpec("latency=0,bandwidth=2.5Gbit").bandwidth_bytes_per_s, 3.125e8);
}

TEST(LinkSpec, ToStringParsesBack) {
  for (const char* spec : {"latency=5ms,bandwidth=10Mbit", "latency=250us,bandwidth=800Kbit,nic=1Gbit",
                           "latency=2s", "latency=0us,bandwidth=3bit"}) {
    const LinkSpec parsed = ParseLinkSpec(spec);
    EXPECT_EQ(parsed.ToString(), spec);
    const LinkSpec again = ParseLinkSpec(parsed.ToString());
    EXPECT_DOUBLE_EQ(again.latency_s, parsed.latency_s);
    EXPECT_DOUBLE_EQ(again.bandwidth_bytes_per_s, parsed.bandwidth_bytes_per_s);
    EXPECT_DOUBLE_EQ(again.nic_bytes_per_s, parsed.nic_bytes_per_s);
  }
}

std::string ErrorOf(const std::string& spec) {
  try {
    ParseLinkSpec(spec);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadConfig) << spec;
    return e.what();
  }
  return "no error";
}

TEST(LinkSpec, BadSpecsSayWhatWasExpected) {
  EXPECT_EQ(ErrorOf("latency=5"),
            "link spec 'latency=5': latency '5' needs a unit (expected one of: us, ms, s)");
  EXPECT_EQ(ErrorOf("latency=5min"),
            "link spec 'latency=5min': latency '5min' has unknown unit 'min' (expected one of: us, "
            "ms, s)");
  EXPECT_EQ(ErrorOf("bandwidth=10MB"),
            "link spec 'bandwidth=10MB': bandwidth '10MB' has unknown unit 'MB' (expected one of: "
            "bit, Kbit, Mbit, Gbit, per second)");
  EXPECT_EQ(ErrorOf("bandwidth=0Mbit"), "link spec 'bandwidth=0Mbit': bandwidth '0Mbit' must be > 0");
  EXPECT_EQ(ErrorOf("latency=-1ms"), "link spec 'latency=-1ms': latency '-1ms' must be >= 0");
  EXPECT_EQ(ErrorOf("latency=fast"),
            "link spec 'latency=fast': latency 'fast' is not a number with a unit (expected e.g. "
            "latency=5ms)");
  EXPECT_EQ(ErrorOf("nic=infGbit"), "link spec 'nic=infGbit': nic 'infGbit' must be > 0");
  EXPECT_EQ(ErrorOf("jitter=1ms"),
            "link spec 'jitter=1ms': unknown key 'jitter' (expected one of: latency, bandwidth, nic)");
  EXPECT_EQ(ErrorOf("latency=1ms,latency=2ms"), "link spec 'latency=1ms,latency=2ms': 'latency' given twice");
  EXPECT_EQ(ErrorOf("latency=1ms,"),
            "link spec 'latency=1ms,': '' is not key=value (keys: latency, bandwidth, nic)");
  EXPECT_EQ(ErrorOf("10Mbit"),
            "link spec '10Mbit': '10Mbit' is not key=value (keys: latency, bandwidth, nic)");
  EXPECT_EQ(ErrorOf(""),
            "link spec '': empty (expected e.g. latency=5ms,bandwidth=10Mbit[,nic=1Gbit])");
}

TEST(LinkSpec, ParsesModes) {
  EXPECT_EQ(ParseLinkMode("virtual"), LinkMode::kVirtual);
  EXPECT_EQ(ParseLinkMode("realtime"), LinkMode::kRealtime);
  try {
    ParseLinkMode("real");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
    EXPECT_STREQ(e.what(), "unknown link mode 'real' (expected one of: virtual, realtime)");
  }
}

// A star's centre (worker 0) sends 1 MB to each of its 7 leaves at t = 0 over 10 Mbit/s links
// with 5 ms latency: 1 MB takes 0.8 s on the wire and its sends are serialised, so leaf k
// (1-based, in send order) has it at 0.8 k + 0.005 s. A leaf's clock jumps to that time.
TEST(LinkModel, StarCentreSendsQueueUp) {
  LinkModel centre(ParseLinkSpec("latency=5ms,bandwidth=10Mbit"), 8);
  for (int leaf = 1; leaf <= 7; ++leaf) {
    const double due = centre.Send(0.0, leaf, 1'000'000);
    EXPECT_NEAR(due, 0.8 * leaf + 0.005, kEps) << "leaf " << leaf;
    EXPECT_NEAR(LinkModel::Arrive(0.1, due), due, kEps);      // the leaf waited for it
    EXPECT_NEAR(LinkModel::Arrive(9.0, due), 9.0, kEps);      // the leaf was busy anyway
  }
  EXPECT_NEAR(centre.nic_free(), 5.6, kEps);
  // The leaves' sends to the centre do not queue behind each other: each has its own NIC.
  for (int leaf = 1; leaf <= 7; ++leaf) {
    LinkModel model(ParseLinkSpec("latency=5ms,bandwidth=10Mbit"), 8);
    EXPECT_NEAR(model.Send(0.0, 0, 1'000'000), 0.805, kEps);
  }
}

// Two messages of 125 000 bytes (0.1 s at 10 Mbit/s) on one link: the second, sent at 0.05 s
// while the first still occupies the link, starts at 0.1 s and arrives at 0.2 s + latency. A
// third sent after the link went idle (t = 1) starts at once.
TEST(LinkModel, BackToBackMessagesOnOneLink) {
  LinkModel model(ParseLinkSpec("latency=5ms,bandwidth=10Mbit"), 2);
  EXPECT_NEAR(model.Send(0.0, 1, 125'000), 0.105, kEps);
  EXPECT_NEAR(model.Send(0.05, 1, 125'000), 0.205, kEps);
  EXPECT_NEAR(model.Send(1.0, 1, 125'000), 1.105, kEps);
  EXPECT_NEAR(model.Send(1.0, 1, 0), 1.105, kEps);  // an empty message waits its turn, then only latency
}

// A 1 Gbit/s NIC feeding 10 Mbit/s links: the NIC pushes each 1.25 MB copy in 0.01 s and the
// wires carry them in parallel (1 s each), so copy k arrives at 0.01 (k-1) + 1 + latency,
// not at k s as with a NIC no faster than its links.
TEST(LinkModel, FastNicFeedsLinksInParallel) {
  LinkModel centre(ParseLinkSpec("latency=5ms,bandwidth=10Mbit,nic=1Gbit"), 8);
  for (int leaf = 1; leaf <= 7; ++leaf) {
    EXPECT_NEAR(centre.Send(0.0, leaf, 1'250'000), 0.01 * (leaf - 1) + 1.0 + 0.005, kEps);
  }
  EXPECT_NEAR(centre.nic_free(), 0.07, kEps);
  // The same link again: its wire is busy until 1.0 s, so the next copy to leaf 1 is there at 2.0.
  EXPECT_NEAR(centre.Send(0.5, 1, 1'250'000), 2.0 + 0.005, kEps);
}

// A NIC slower than its links is the bottleneck: 10 Mbit/s NIC, 1 Gbit/s links, 1 MB copies
// leave one every 0.8 s.
TEST(LinkModel, SlowNicIsTheBottleneck) {
  LinkModel centre(ParseLinkSpec("latency=1ms,bandwidth=1Gbit,nic=10Mbit"), 4);
  for (int leaf = 1; leaf <= 3; ++leaf) {
    EXPECT_NEAR(centre.Send(0.0, leaf, 1'000'000), 0.8 * leaf + 0.001, kEps);
  }
}

TEST(LinkModel, LatencyOnlyAndNoLimits) {
  LinkModel latency_only(ParseLinkSpec("latency=2ms"), 2);
  EXPECT_NEAR(latency_only.Send(3.0, 1, 1u << 30), 3.002, kEps);
  EXPECT_NEAR(latency_only.Send(3.0, 1, 1u << 30), 3.002, kEps);
  LinkModel free_link(LinkSpec{}, 2);
  EXPECT_EQ(free_link.Send(7.5, 0, 12345), 7.5);
}

}  // namespace
}  // namespace corral::internal
