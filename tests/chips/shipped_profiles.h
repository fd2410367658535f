// The device profiles shipped in data/chips, loaded for a test (a load failure fails the test and gives none).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chips/device_profile.h"

namespace cai::chips::test_support {

inline std::vector<DeviceProfile> shipped_profiles() {
  auto r = load_profiles(std::string(CAI_SOURCE_DIR) + "/data/chips");
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? r.value() : std::vector<DeviceProfile>{};
}

}  // namespace cai::chips::test_support
