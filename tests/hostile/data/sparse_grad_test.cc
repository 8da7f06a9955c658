// The library side of the hostile-data battery: what the binary's cases cannot reach.
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include <corral/error.h>
#include <corral/limits.h>
#include <corral/sparse_grad.h>

namespace corral {
namespace {

TEST(SparseGradTest, PushPastCapacityThrowsInsteadOfWritingPastTheBuffer) {
  SparseGrad g(2);
  g.Push(0, 1.0f, 0.0f);
  g.Push(1, 1.0f, 0.0f);
  try {
    g.Push(2, 1.0f, 0.0f);
    FAIL() << "a third push into a capacity of 2 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kWorkerFailed);
    EXPECT_NE(std::string(e.what()).find("capacity of 2"), std::string::npos) << e.what();
  }
  EXPECT_EQ(g.size(), 2u);
}

TEST(LimitsTest, ProductsThatOverflowUint64AreRefusedNotWrapped) {
  // 2^62 x 4 x 4 wraps to 0 in uint64 arithmetic; the check must see 2^66.
  const double big = static_cast<double>(std::uint64_t{1} << 62);
  try {
    CheckMemory({4, big, 4}, ErrorCode::kBadConfig, "--features 4611686018427387904", "the dense set");
    FAIL() << "2^66 bytes passed the memory check";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
    EXPECT_NE(std::string(e.what()).find("--features 4611686018427387904: the dense set would need 74 EB"),
              std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(CheckMemory({1000, 4}, ErrorCode::kBadConfig, "x", "y"));
}

TEST(LimitsTest, FeatureCountsBeyond32BitIndicesAreRefused) {
  EXPECT_NO_THROW(CheckFeatureCount(kMaxFeatures, ErrorCode::kBadConfig, "--features"));
  EXPECT_THROW(CheckFeatureCount(kMaxFeatures + 1, ErrorCode::kBadConfig, "--features"), Error);
  EXPECT_THROW(CheckIndexable(static_cast<double>(kMaxFeatures) + 1, ErrorCode::kBadConfig, "m", "w"), Error);
}

TEST(LimitsTest, BytesReadInDecimalUnits) {
  EXPECT_EQ(FormatBytes(12), "12 bytes");
  EXPECT_EQ(FormatBytes(24e9), "24 GB");
  EXPECT_EQ(FormatBytes(1.5e3), "1.5 KB");
}

}  // namespace
}  // namespace corral
