// A scratch file's path for the running test: its name, this process and the test's name, in the
// system's temporary folder (ctest runs the tests in parallel processes).
#pragma once

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace corral {

inline std::string TempPath(const std::string& name) {
  std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::replace(test.begin(), test.end(), '/', '_');
  return (std::filesystem::temp_directory_path() /
          (name + "." + std::to_string(::getpid()) + "." + test))
      .string();
}

}  // namespace corral
