// HAL registry: built-in CPU backend, device lookup, and the plugin loader with a real test plugin.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "hal/hal.h"
#include "test_paths.h"

namespace cai::hal {
namespace {

TEST(Registry, CpuIsBuiltIn) {
  Registry& r = Registry::global();
  Result<Device*> d = r.find_device("cpu");
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ((*d)->name(), "cpu:0");
  EXPECT_TRUE((*d)->supports(OpId::kDenseGemm));
  EXPECT_GT((*d)->memory_info().total_bytes, 0u);
  Result<Buffer> b = (*d)->allocate(1000);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % 64, 0u);
}

TEST(Registry, UnknownDevicesAreErrors) {
  Registry& r = Registry::global();
  EXPECT_EQ(r.find_device("ascend:0").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.find_device("cpu:3").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.find_device("cpu:x").status().code(), StatusCode::kInvalidArgument);
}

TEST(Registry, LoadsEchoPlugin) {
  Registry r;  // a private registry: the global one stays untouched
  const std::string so = test::binary_path("libcai-backend-echo.so");
  setenv("CAI_ECHO_FAIL", "1", 1);
  Status refused = r.load_plugin(so);
  unsetenv("CAI_ECHO_FAIL");
  EXPECT_EQ(refused.code(), StatusCode::kInternal);
  EXPECT_NE(refused.message().find("refused by CAI_ECHO_FAIL"), std::string::npos);

  ASSERT_TRUE(r.load_plugin(so).ok());
  Result<Device*> d = r.find_device("echo:0");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE((*d)->supports(OpId::kRmsNorm));
  EXPECT_FALSE((*d)->supports(OpId::kAttentionGqa));
  EXPECT_EQ((*d)->telemetry().temperature_c.value_or(0), 42.0f);
  EXPECT_EQ(r.load_plugin(so).code(), StatusCode::kInvalidArgument);  // already registered
}

TEST(Registry, PluginSearchPath) {
  Registry r;
  setenv("CAI_BACKEND_PATH", (std::string("/nonexistent:") + CAI_BINARY_DIR).c_str(), 1);
  EXPECT_GE(r.load_plugins_from_default_paths(), 1);
  unsetenv("CAI_BACKEND_PATH");
  EXPECT_NE(r.find_backend("echo"), nullptr);
}

TEST(Registry, RejectsNonPlugins) {
  Registry r;
  EXPECT_EQ(r.load_plugin("/nonexistent/libcai-backend-x.so").code(), StatusCode::kIo);
  const std::string not_so = std::string(CAI_BINARY_DIR) + "/not-a-plugin.so";
  std::ofstream(not_so) << "garbage";
  EXPECT_EQ(r.load_plugin(not_so).code(), StatusCode::kIo);
}

}  // namespace
}  // namespace cai::hal
