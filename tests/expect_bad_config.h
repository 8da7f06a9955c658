// A configuration that TrainConfig::Validate() must refuse, with a message
// containing `why`.
#pragma once

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <corral/error.h>
#include <corral/train.h>

namespace corral::testing {

inline void ExpectBadConfig(const TrainConfig &config, const std::string &why) {
  try {
    config.Validate();
    ADD_FAILURE() << "accepted; expected a refusal saying: " << why;
  } catch (const Error &e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
    EXPECT_THAT(e.what(), ::testing::HasSubstr(why));
  }
}

} // namespace corral::testing
