// Test names for suites parameterised over algorithms: the CLI's name, '+' spelled 'P'
// (hogwild++ -> hogwildPP), since GoogleTest names take letters, digits and '_' only.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include <corral/kinds.h>

namespace corral {

inline std::string AlgorithmTestName(const ::testing::TestParamInfo<Algorithm>& info) {
  std::string name(ToString(info.param));
  for (char& c : name) {
    if (c == '+') c = 'P';
  }
  return name;
}

}  // namespace corral
