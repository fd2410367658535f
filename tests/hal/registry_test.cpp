// HAL registry: built-in CPU backend, device lookup, and the plugin loader driven through the echo test plugin.
// CAI_ECHO_PLUGIN, when set, names the echo plugin to load (scripts/test.sh: one built out of tree with clang++).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "cai/backend_abi.h"
#include "hal/hal.h"
#include "test_paths.h"

namespace cai::hal {
namespace {

std::string echo_plugin() {
  const char* path = std::getenv("CAI_ECHO_PLUGIN");
  return path ? path : test::binary_path("test-plugins/libcai-backend-echo.so");
}

// An environment variable set for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) { setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

Device* load_echo(Registry& r) {
  Status st = r.load_plugin(echo_plugin());
  EXPECT_TRUE(st.ok()) << st.to_string();
  Result<Device*> d = r.find_device("echo:0");
  EXPECT_TRUE(d.ok()) << d.status().to_string();
  return d.ok() ? *d : nullptr;
}

// A device buffer holding `values` (F32).
Buffer upload(Device& d, const std::vector<float>& values) {
  Result<Buffer> b = d.allocate(values.size() * sizeof(float));
  EXPECT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_TRUE(d.default_stream().copy_to_device(b->data(), values.data(), values.size() * sizeof(float)).ok());
  return std::move(b).value();
}

std::vector<float> download(Device& d, const Buffer& b, size_t n) {
  std::vector<float> out(n);
  EXPECT_TRUE(d.default_stream().copy_to_host(out.data(), b.data(), n * sizeof(float)).ok());
  return out;
}

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

TEST(PluginRegistry, LoadsEchoPlugin) {
  Registry r;  // a private registry: the global one stays untouched
  Device* d = load_echo(r);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->name(), "echo:0");
  EXPECT_EQ(d->description(), "test plugin device (host memory)");
  EXPECT_FALSE(d->host_visible());
  EXPECT_EQ(d->memory_info().total_bytes, size_t{1} << 30);
  EXPECT_EQ(d->telemetry().temperature_c.value_or(0), 42.0f);
  EXPECT_FALSE(d->telemetry().power_w.has_value());
  EXPECT_EQ(r.load_plugin(echo_plugin()).code(), StatusCode::kInvalidArgument);  // already registered
}

TEST(PluginRegistry, CreateFailureKeepsThePluginsCode) {
  Registry r;
  ScopedEnv fail("CAI_ECHO_FAIL", "1");
  Status st = r.load_plugin(echo_plugin());
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_NE(st.message().find("refused by CAI_ECHO_FAIL"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(echo_plugin()), std::string::npos) << st.message();
  EXPECT_EQ(r.find_backend("echo"), nullptr);
}

TEST(PluginRegistry, RejectsAnotherAbiVersion) {
  Registry r;
  ScopedEnv abi("CAI_ECHO_ABI", "1");
  Status st = r.load_plugin(echo_plugin());
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  EXPECT_NE(st.message().find("ABI v1"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(echo_plugin()), std::string::npos) << st.message();
}

TEST(PluginRegistry, RejectsNonPlugins) {
  Registry r;
  Status no_symbol = r.load_plugin("libm.so.6");
  EXPECT_EQ(no_symbol.code(), StatusCode::kUnsupported);
  EXPECT_NE(no_symbol.message().find(CAI_BACKEND_ENTRY_SYMBOL), std::string::npos) << no_symbol.message();
  EXPECT_EQ(r.load_plugin("/nonexistent/libcai-backend-x.so").code(), StatusCode::kIo);
  const std::string not_so = test::make_temp_dir("registry") + "/not-a-plugin.so";
  std::ofstream(not_so) << "garbage";
  EXPECT_EQ(r.load_plugin(not_so).code(), StatusCode::kIo);
}

TEST(PluginRegistry, OpsRunThroughTheThunks) {
  Registry r;
  Device* d = load_echo(r);
  ASSERT_NE(d, nullptr);
  Buffer a = upload(*d, {1, 2, 3}), b = upload(*d, {10, 20, 30}), out = upload(*d, {0, 0, 0});
  auto view = [](const Buffer& buf, std::initializer_list<int64_t> dims, DType t = DType::kF32) {
    return TensorView::make(buf.data(), t, dims);
  };
  ASSERT_TRUE(d->supports(OpId::kAdd));
  Status st = d->ops().add(d->op_context(), view(a, {3}), view(b, {3}), view(out, {3}));
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(download(*d, out, 3), (std::vector<float>{11, 22, 33}));

  Buffer table = upload(*d, {0, 1, 10, 11, 20, 21}), row = upload(*d, {0, 0, 0, 0});
  Result<Buffer> ids = d->allocate(2 * sizeof(int32_t));
  ASSERT_TRUE(ids.ok());
  const int32_t id_values[2] = {2, 0};
  ASSERT_TRUE(d->default_stream().copy_to_device(ids->data(), id_values, sizeof id_values).ok());
  st = d->ops().embed(d->op_context(), view(table, {3, 2}), view(*ids, {2}, DType::kI32), view(row, {2, 2}));
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(download(*d, row, 4), (std::vector<float>{20, 21, 0, 1}));

  const int32_t bad_ids[2] = {7, 0};
  ASSERT_TRUE(d->default_stream().copy_to_device(ids->data(), bad_ids, sizeof bad_ids).ok());
  st = d->ops().embed(d->op_context(), view(table, {3, 2}), view(*ids, {2}, DType::kI32), view(row, {2, 2}));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("echo:0: embed: id 7"), std::string::npos) << st.message();
}

TEST(PluginRegistry, MissingOpsAreUnsupported) {
  Registry r;
  Device* d = load_echo(r);
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(d->supports(OpId::kEmbed));
  for (OpId op : {OpId::kRmsNorm, OpId::kDenseGemm, OpId::kAttentionGqa, OpId::kAttentionMla}) {
    EXPECT_FALSE(d->supports(op)) << op_name(op);
  }
  EXPECT_EQ(d->ops().rms_norm, nullptr);
}

// An older plugin's shorter ops table is read only up to its struct_size; a newer, longer one is read up to ours.
TEST(PluginRegistry, OpsTableIsReadUpToItsStructSize) {
  {
    Registry r;
    ScopedEnv size("CAI_ECHO_OPS_SIZE", std::to_string(offsetof(CaiOps, rms_norm)));
    Device* d = load_echo(r);
    ASSERT_NE(d, nullptr);
    EXPECT_TRUE(d->supports(OpId::kEmbed));
    EXPECT_FALSE(d->supports(OpId::kAdd));  // beyond the claimed size
  }
  Registry r;
  ScopedEnv size("CAI_ECHO_OPS_SIZE", std::to_string(sizeof(CaiOps) + 64));
  Device* d = load_echo(r);
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(d->supports(OpId::kEmbed));
  EXPECT_TRUE(d->supports(OpId::kAdd));
}

// The entry names what the backend runs on (ABI 4.2, `cai doctor` shows it); a v4.0/4.1 entry, which ends before
// runtime_versions, still loads without it, and a shorter one is refused with the sizes.
TEST(PluginRegistry, EntryNamesItsRuntimeWhereItsSizeCoversIt) {
  {
    Registry r;
    Device* d = load_echo(r);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(r.backend_of(*d), r.find_backend("echo"));
    EXPECT_EQ(r.find_backend("echo")->runtime(), "plugin " + echo_plugin() + " (echo runtime 1.0)");
    EXPECT_EQ(Registry::global().find_backend("cpu")->runtime(), "built into cai");
  }
  {
    Registry r;
    ScopedEnv size("CAI_ECHO_ENTRY_SIZE", std::to_string(offsetof(CaiBackendEntry, runtime_versions)));
    ASSERT_NE(load_echo(r), nullptr);
    EXPECT_EQ(r.find_backend("echo")->runtime(), "plugin " + echo_plugin());
  }
  Registry r;
  ScopedEnv size("CAI_ECHO_ENTRY_SIZE", std::to_string(offsetof(CaiBackendEntry, collectives)));
  const Status st = r.load_plugin(echo_plugin());
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  EXPECT_NE(st.message().find("entry is " + std::to_string(offsetof(CaiBackendEntry, collectives)) + " bytes"),
            std::string::npos)
      << st.message();
}

TEST(PluginRegistry, HostSyncsAreCounted) {
  Registry r;
  Device* d = load_echo(r);
  ASSERT_NE(d, nullptr);
  Stream& s = d->default_stream();
  Buffer a = upload(*d, {1, 2});
  const TensorView v = TensorView::make(a.data(), DType::kF32, {2});
  ASSERT_TRUE(d->ops().add(d->op_context(), v, v, v).ok());
  EXPECT_EQ(s.n_host_syncs(), 0u);  // copies to the device and ops do not block
  EXPECT_EQ(download(*d, a, 2), (std::vector<float>{2, 4}));
  EXPECT_EQ(s.n_host_syncs(), 1u);
  ASSERT_TRUE(s.synchronize().ok());
  EXPECT_EQ(s.n_host_syncs(), 2u);
  std::unique_ptr<Event> e = s.record();
  EXPECT_TRUE(e->done());
  EXPECT_EQ(s.n_host_syncs(), 2u);  // polling does not block
  ASSERT_TRUE(e->wait().ok());
  EXPECT_EQ(s.n_host_syncs(), 3u);
}

TEST(PluginRegistry, PluginSearchPath) {
  Registry r;
  const std::string dir = std::filesystem::path(echo_plugin()).parent_path().string();
  ScopedEnv path("CAI_BACKEND_PATH", "/nonexistent:" + dir);
  EXPECT_GE(r.load_plugins_from_default_paths(), 1);
  EXPECT_NE(r.find_backend("echo"), nullptr);
}

}  // namespace
}  // namespace cai::hal
