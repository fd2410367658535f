// `cai doctor`: every step passes on the CPU and on simt; and each kind of fault fails the step it belongs to, named,
// with the exit status 1: corrupted references (the DeepSeek model's and a quantized model's), a simt device with too
// little memory, a plugin op that returns wrong numbers, and one that never returns (killed after --step-timeout).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "test_paths.h"

namespace cai {
namespace {

using test::cai_bin;

const std::vector<std::string> kSteps = {"backend",   "memory",      "ops",      "model_bf16",
                                         "model_fp8", "model_quant", "bandwidth"};

struct Doctor {
  int exit_code = 0;
  nlohmann::json devices;  // by name: {step: {ok, detail}}
  std::string err;
};

// `cai doctor --json ARGS` with the echo test plugin's folder on the plugin path (and 64 MiB buffers: quicker).
Doctor doctor(const std::string& env, const std::string& args) {
  const test::CommandResult r = test::run_command("CAI_BACKEND_PATH=" + test::binary_path("test-plugins") + " " + env +
                                                  " " + cai_bin() + " doctor --json --memory-mib 64 " + args);
  Doctor d{r.exit_code, nlohmann::json::object(), r.err};
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
  if (j.is_discarded()) return d;
  EXPECT_EQ(j["ok"], r.exit_code == 0);
  for (const auto& dev : j["devices"]) {
    std::vector<std::string> names;
    for (const auto& s : dev["steps"]) {
      names.push_back(s["step"]);
      d.devices[dev["device"].get<std::string>()][s["step"].get<std::string>()] = s;
    }
    EXPECT_EQ(names, kSteps) << dev.dump(2);  // every step reported, in order, whatever failed
  }
  return d;
}

std::string detail(const Doctor& d, const std::string& device, const std::string& step) {
  return d.devices[device][step]["detail"].get<std::string>();
}
bool ok(const Doctor& d, const std::string& device, const std::string& step) {
  return d.devices[device][step]["ok"].get<bool>();
}

TEST(DoctorCli, CpuAndSimtPassEveryStep) {
  const Doctor d = doctor("", "--device cpu,simt:0");
  ASSERT_EQ(d.exit_code, 0) << d.devices.dump(2) << d.err;
  for (const char* dev : {"cpu:0", "simt:0"}) {
    for (const std::string& step : kSteps) EXPECT_TRUE(ok(d, dev, step)) << dev << " " << step;
    EXPECT_NE(detail(d, dev, "ops").find("cases passed"), std::string::npos) << detail(d, dev, "ops");
    for (const char* m : {"model_bf16", "model_fp8"})
      EXPECT_NE(detail(d, dev, m).find("every greedy token the reference's"), std::string::npos) << detail(d, dev, m);
    EXPECT_NE(detail(d, dev, "model_quant").find("Q8_0 "), std::string::npos) << detail(d, dev, "model_quant");
  }
  EXPECT_NE(detail(d, "cpu:0", "backend").find("built into cai"), std::string::npos);
  EXPECT_NE(detail(d, "simt:0", "backend").find("simt emulator on the CPU, warp"), std::string::npos);
}

// A copy of the reference folder (BF16 at its top, FP8 in fp8/) that the test may damage.
std::string copy_reference() {
  namespace fs = std::filesystem;
  const std::string dir = test::make_temp_dir("doctor-ref");
  const fs::path src = test::data_path("oracle/deepseek_v3_tiny");
  for (const char* variant : {"", "fp8"}) {
    fs::create_directories(fs::path(dir) / variant);
    for (const auto& e : fs::directory_iterator(src / variant))
      if (e.is_regular_file()) fs::copy_file(e.path(), fs::path(dir) / variant / e.path().filename());
  }
  return dir;
}

TEST(DoctorCli, CorruptedReferenceFailsTheModelStepNamingThePrompt) {
  const std::string ref = copy_reference();
  {  // one logit of prompt2 off by 0.5
    std::fstream f(ref + "/prompt2_logits.f32", std::ios::in | std::ios::out | std::ios::binary);
    float v = 0;
    f.seekg(1000 * sizeof(float));
    f.read(reinterpret_cast<char*>(&v), sizeof v);
    v += 0.5f;
    f.seekp(1000 * sizeof(float));
    f.write(reinterpret_cast<const char*>(&v), sizeof v);
  }
  std::filesystem::resize_file(ref + "/fp8/prompt0_gen_logits.f32", 100);  // truncated
  // The quantized models' folder with Q4_K's twin logits scaled by 2: its model then misses by about half the range.
  const std::string quants = test::make_temp_dir("doctor-quants");
  for (const char* type : {"Q8_0", "Q4_0", "Q4_K", "Q6_K"})
    for (const std::string ext : {".gguf", ".twin_logits.f32"})
      std::filesystem::copy_file(test::data_path(std::string("quants/") + type + ext), quants + "/" + type + ext);
  std::vector<float> twin = test::read_f32(quants + "/Q4_K.twin_logits.f32");
  for (float& v : twin) v *= 2;
  std::ofstream(quants + "/Q4_K.twin_logits.f32", std::ios::binary)
      .write(reinterpret_cast<const char*>(twin.data()), static_cast<std::streamsize>(twin.size() * sizeof(float)));
  const Doctor d = doctor("CAI_DOCTOR_DIR=" + ref + " CAI_DOCTOR_QUANTS_DIR=" + quants, "--device cpu");
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_FALSE(ok(d, "cpu:0", "model_bf16"));
  // Row 1000 / 512 = token 1, id 1000 % 512 = 488.
  EXPECT_NE(detail(d, "cpu:0", "model_bf16").find("prompt2: the logit of id 488 at prompt token 1"), std::string::npos)
      << detail(d, "cpu:0", "model_bf16");
  EXPECT_FALSE(ok(d, "cpu:0", "model_fp8"));
  EXPECT_NE(detail(d, "cpu:0", "model_fp8").find("prompt0_gen_logits.f32 is not 8 × 512 float32 values"),
            std::string::npos)
      << detail(d, "cpu:0", "model_fp8");
  EXPECT_FALSE(ok(d, "cpu:0", "model_quant"));
  EXPECT_NE(detail(d, "cpu:0", "model_quant").find("Q4_K: max |logit - twin| is"), std::string::npos)
      << detail(d, "cpu:0", "model_quant");
  for (const char* step : {"backend", "memory", "ops", "bandwidth"}) EXPECT_TRUE(ok(d, "cpu:0", step)) << step;
}

TEST(DoctorCli, TooLittleSimtMemoryFailsTheMemoryStep) {
  const Doctor d = doctor("CAI_SIMT_MEMORY=32M", "--device simt:0");
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_FALSE(ok(d, "simt:0", "memory"));
  EXPECT_NE(detail(d, "simt:0", "memory").find("allocating 64 MiB (32 MiB free)"), std::string::npos)
      << detail(d, "simt:0", "memory");
  EXPECT_TRUE(ok(d, "simt:0", "backend"));
}

// The echo test plugin has add and embed (F32): its add checks out, until CAI_ECHO_WRONG makes it add 0.25.
TEST(DoctorCli, PluginOpWithWrongNumbersFailsTheOpStepNamingTheOp) {
  const Doctor healthy = doctor("", "--device echo");  // a backend's name: all its devices
  EXPECT_EQ(healthy.devices.size(), 1u);
  EXPECT_TRUE(ok(healthy, "echo:0", "ops")) << detail(healthy, "echo:0", "ops");
  EXPECT_NE(detail(healthy, "echo:0", "ops").find("2 cases passed"), std::string::npos)
      << detail(healthy, "echo:0", "ops");
  EXPECT_NE(detail(healthy, "echo:0", "backend").find("(echo runtime 1.0)"), std::string::npos);
  // The plugin lacks the model's ops: the model steps fail and say which.
  EXPECT_NE(detail(healthy, "echo:0", "model_bf16").find("unsupported"), std::string::npos);

  const Doctor d = doctor("CAI_ECHO_WRONG=1", "--device echo:0");
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_FALSE(ok(d, "echo:0", "ops"));
  EXPECT_NE(detail(d, "echo:0", "ops").find("1 of "), std::string::npos) << detail(d, "echo:0", "ops");
  EXPECT_NE(detail(d, "echo:0", "ops").find("add: at "), std::string::npos) << detail(d, "echo:0", "ops");
}

TEST(DoctorCli, HangingDeviceIsKilledAfterTheStepTimeout) {
  const auto t0 = std::chrono::steady_clock::now();
  // 12 s: each of the CPU's steps takes under 2.5 s alone, under AddressSanitizer too; beside another test on a
  // 2-core machine the bandwidth step took over 6.
  const Doctor d = doctor("CAI_ECHO_HANG=1", "--device echo:0,cpu --step-timeout 12");
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_TRUE(ok(d, "echo:0", "memory"));
  EXPECT_FALSE(ok(d, "echo:0", "ops"));
  EXPECT_NE(detail(d, "echo:0", "ops").find("no answer within 12 s"), std::string::npos) << detail(d, "echo:0", "ops");
  for (const char* step : {"model_bf16", "model_fp8", "model_quant", "bandwidth"})
    EXPECT_EQ(detail(d, "echo:0", step), "not run: the check of ops did not end");
  for (const std::string& step : kSteps) EXPECT_TRUE(ok(d, "cpu:0", step)) << step;  // the next device still runs
  EXPECT_LT(sec, 60);
}

TEST(DoctorCli, UnknownDeviceListsTheDevices) {
  const test::CommandResult r = test::run_command(cai_bin() + " doctor --device nosuch:0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cpu:0"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace cai
