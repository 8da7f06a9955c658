// Helpers for the data-layer tests: a per-test temporary folder, exact dataset comparison,
// and catching the corral::Error a call throws.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <iterator>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include <corral/dataset.h>
#include <corral/error.h>

namespace corral::testing {

class TempDir {
 public:
  TempDir() : path_(std::filesystem::path(::testing::TempDir()) / UniqueName()) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string Path(const std::string& file) const { return (path_ / file).string(); }
  std::string Write(const std::string& file, const std::string& bytes) const {
    const std::string path = Path(file);
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

 private:
  static std::string UniqueName() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string("corral_data_") + info->test_suite_name() + "_" + info->name();
    std::replace(name.begin(), name.end(), '/', '_');
    return name;
  }
  std::filesystem::path path_;
};

inline std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Same shape, layout, arrays (bit for bit) and ratings mapping.
inline void ExpectSameData(const Dataset& a, const Dataset& b) {
  EXPECT_EQ(a.rows(), b.rows());
  EXPECT_EQ(a.num_features(), b.num_features());
  EXPECT_EQ(a.nnz(), b.nnz());
  EXPECT_EQ(a.is_dense(), b.is_dense());
  EXPECT_EQ(a.max_row_nnz(), b.max_row_nnz());
  EXPECT_TRUE(std::ranges::equal(a.row_ptr(), b.row_ptr()));
  EXPECT_TRUE(std::ranges::equal(a.index(), b.index()));
  const auto bits = [](float x) { return std::bit_cast<std::uint32_t>(x); };
  EXPECT_TRUE(std::ranges::equal(a.value(), b.value(), {}, bits, bits));
  EXPECT_TRUE(std::ranges::equal(a.labels(), b.labels(), {}, bits, bits));
  ASSERT_EQ(a.ratings() == nullptr, b.ratings() == nullptr);
  if (a.ratings() != nullptr) {
    EXPECT_EQ(a.ratings()->num_users, b.ratings()->num_users);
    EXPECT_EQ(a.ratings()->num_items, b.ratings()->num_items);
    EXPECT_EQ(a.ratings()->known_users, b.ratings()->known_users);
    EXPECT_EQ(a.ratings()->known_items, b.ratings()->known_items);
    EXPECT_EQ(a.ratings()->user_ids, b.ratings()->user_ids);
    EXPECT_EQ(a.ratings()->item_ids, b.ratings()->item_ids);
  }
}

// The message of the corral::Error `fn` throws (checking its code); fails the test if none.
inline std::string ErrorOf(const std::function<void()>& fn, ErrorCode code = ErrorCode::kBadInput) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(static_cast<int>(e.code()), static_cast<int>(code)) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no corral::Error thrown";
  return "";
}

}  // namespace corral::testing
