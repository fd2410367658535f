// The device a runtime test runs on: "cpu", or a plugin's device found next to the test binary ("simt:0").
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "hal/hal.h"

namespace cai::test {

inline hal::Device* device_named(const std::string& name) {
  hal::Registry& reg = hal::Registry::global();
  if (name != "cpu" && !reg.find_device(name).ok()) reg.load_plugins_from_default_paths();
  Result<hal::Device*> d = reg.find_device(name);
  EXPECT_TRUE(d.ok()) << d.status().to_string();
  return d.ok() ? *d : nullptr;
}

// gtest parameter names for device specs: "simt:0" → "simt".
inline std::string device_param_name(const std::string& spec) { return spec.substr(0, spec.find(':')); }

}  // namespace cai::test
