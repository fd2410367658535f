// The profile of the device a verb runs on (the CPU's, or the n-th accelerator a backend serves in PCI order, or
// --profile) and how policies fill the options a user left unset, naming those without an effect yet.
#include <gtest/gtest.h>

#include <algorithm>

#include "chips/device_policy.h"
#include "shipped_profiles.h"
#include "test_paths.h"

namespace cai::chips {
namespace {

using test_support::shipped_profiles;

// The mixed fixture host: H200 at 17:00.0 (cuda), Ascend 910B at 81:00.0 (no backend yet), A100 at ca:00.0 (cuda,
// no profile of its own), on an x86 CPU.
DetectReport mixed_host(const std::vector<DeviceProfile>& ps) {
  DetectOptions o;
  o.sysfs_root = test::data_path("chips/sysfs-mixed");
  o.proc_root = test::data_path("chips/proc-x86");
  o.probe = [](const std::string& lib) { return LibraryProbe{lib, false, "not probed"}; };
  hal::Registry none;
  return detect(ps, none, o);
}

bool has_line(const std::vector<std::string>& lines, const std::string& want) {
  return std::find(lines.begin(), lines.end(), want) != lines.end();
}

TEST(DevicePolicy, ProfileOfEachDeviceOnTheMixedHost) {
  const auto ps = shipped_profiles();
  const DetectReport r = mixed_host(ps);
  auto id_of = [&](const std::string& device) {
    Result<ProfileChoice> c = profile_for_device(r, ps, device);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() && c->profile ? c->profile->id : std::string("(none)");
  };
  EXPECT_EQ(id_of("cpu:0"), "cpu-x86-64");
  EXPECT_EQ(id_of("cuda:0"), "nvidia-h200-sxm");  // the first cuda accelerator by PCI address
  EXPECT_EQ(id_of("cuda:1"), "(none)");           // the A100: served by cuda, but no profile
  EXPECT_EQ(id_of("cuda:2"), "(none)");           // no third cuda accelerator
  EXPECT_EQ(id_of("simt:0"), "(none)");           // the emulator describes no chip
  const ProfileChoice a100 = profile_for_device(r, ps, "cuda:1").value();
  EXPECT_NE(a100.reason.find("PCI 0000:ca:00.0"), std::string::npos) << a100.reason;
  const ProfileChoice h200 = profile_for_device(r, ps, "cuda:0").value();
  EXPECT_NE(h200.reason.find("PCI 0000:17:00.0"), std::string::npos) << h200.reason;
}

TEST(DevicePolicy, OverrideWinsAndAnUnknownIdListsTheKnownOnes) {
  const auto ps = shipped_profiles();
  const DetectReport r = mixed_host(ps);
  Result<ProfileChoice> c = profile_for_device(r, ps, "cpu:0", "ascend-910b4");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->profile->id, "ascend-910b4");
  c = profile_for_device(r, ps, "cpu:0", "h9000");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("--profile h9000: no such device profile (known: amd-mi300x, "),
            std::string::npos)
      << c.status().message();
}

TEST(DevicePolicy, UnsetOptionsTakeThePolicyAndUserValuesStay) {
  ChipPolicies p;
  p.kv_dtype = "bf16";
  p.expert_prewarm = true;
  p.thermal_limit_c = 82;
  PolicyOptions unset;
  unset.has_engine = true;
  std::vector<std::string> lines = apply_policies(p, unset);
  EXPECT_EQ(unset.kv_dtype.value_or(""), "bf16");
  EXPECT_EQ(unset.prewarm_experts, std::optional<bool>(true));
  EXPECT_EQ(unset.thermal_limit_c, std::optional<float>(82));
  EXPECT_TRUE(has_line(lines, "kv_dtype bf16: applied"));
  EXPECT_TRUE(has_line(lines, "thermal_limit_c 82: applied"));

  PolicyOptions user;
  user.has_engine = true;
  user.kv_dtype = "f16";
  user.prewarm_experts = false;
  user.thermal_limit_c = 0;
  lines = apply_policies(p, user);
  EXPECT_EQ(user.kv_dtype.value_or(""), "f16");
  EXPECT_EQ(user.prewarm_experts, std::optional<bool>(false));
  EXPECT_EQ(user.thermal_limit_c, std::optional<float>(0));
  EXPECT_TRUE(has_line(lines, "kv_dtype bf16: not applied, --kv-dtype f16 given"));
  EXPECT_TRUE(has_line(lines, "expert_prewarm true: not applied, --prewarm-experts=false given"));
  EXPECT_TRUE(has_line(lines, "thermal_limit_c 82: not applied, --thermal-limit 0 given"));
}

// A serving verb takes host_offload_below unless --kv-offload-layers was given (then the user's count stands).
TEST(DevicePolicy, HostOffloadAppliesToServingVerbsWithoutAnExplicitCount) {
  ChipPolicies p;
  p.host_offload_below = 1.0;
  PolicyOptions serving;
  serving.has_engine = true;
  EXPECT_TRUE(has_line(apply_policies(p, serving),
                       "host_offload_below 1: applied (KV layers the device cannot hold go to host memory, as `cai "
                       "plan` plans them)"));
  EXPECT_EQ(serving.host_offload_below, std::optional<double>(1.0));
  PolicyOptions user;
  user.has_engine = true;
  user.kv_offload_layers = 0;
  EXPECT_TRUE(has_line(apply_policies(p, user), "host_offload_below 1: not applied, --kv-offload-layers 0 given"));
  EXPECT_FALSE(user.host_offload_below.has_value());
}

TEST(DevicePolicy, PoliciesWithoutAConsumerSaySo) {
  ChipPolicies p;
  p.host_offload_below = 0.5;
  p.pool_length_buckets = {512, 2048};
  p.sync_launch = true;
  p.thermal_limit_c = 90;
  PolicyOptions o;  // a verb without a serving engine
  const std::vector<std::string> lines = apply_policies(p, o);
  EXPECT_TRUE(has_line(lines, "host_offload_below 0.5: no effect (this verb runs no serving engine)"));
  EXPECT_FALSE(o.host_offload_below.has_value());
  EXPECT_TRUE(has_line(lines, "pool_length_buckets [512, 2048]: no effect yet (one pool for every length)"));
  EXPECT_TRUE(has_line(lines, "sync_launch: no effect yet (launches stay asynchronous)"));
  EXPECT_TRUE(has_line(lines, "thermal_limit_c 90: no effect (this verb runs no serving engine)"));
  EXPECT_FALSE(o.thermal_limit_c.has_value());
  EXPECT_FALSE(o.kv_dtype.has_value());  // the profile names none: the device's default stays
}

}  // namespace
}  // namespace cai::chips
