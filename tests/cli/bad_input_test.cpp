// Bad input to `cai` is a clear error with a non-zero exit, never a crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_paths.h"

namespace cai {
namespace {

namespace fs = std::filesystem;

using test::cai_bin;

// Expect exit code 1 (an error we reported, not a signal) and an "error:" line mentioning `needle`.
void expect_clean_error(const std::string& args, const std::string& needle) {
  test::CommandResult r = test::run_command(cai_bin() + " " + args);
  EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.err;
  EXPECT_NE(r.err.find("error:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "wanted '" << needle << "' in: " << r.err;
}

void write_bytes(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

TEST(BadInput, TruncatedGgufAtManyOffsets) {
  const std::string full = test::read_file(test::data_path("models/TinyStories-656K-Q8_0.gguf"));
  const std::string dir = test::make_temp_dir("trunc");
  for (size_t cut : {size_t(0), size_t(3), size_t(4), size_t(17), size_t(100), size_t(5000), size_t(50840),
                     size_t(60000), full.size() - 1}) {
    const std::string path = dir + "/m.gguf";
    write_bytes(path, full.substr(0, cut));
    test::CommandResult r = test::run_command(cai_bin() + " run -m " + path + " -p hi -n 1");
    EXPECT_EQ(r.exit_code, 1) << "cut at " << cut << ": " << r.err;
    EXPECT_NE(r.err.find("error:"), std::string::npos) << r.err;
  }
}

TEST(BadInput, CorruptGgufHeader) {
  std::string bytes = test::read_file(test::data_path("models/stories260K.gguf"));
  const std::string path = test::make_temp_dir("corrupt") + "/m.gguf";
  bytes[0] = 'X';
  write_bytes(path, bytes);
  expect_clean_error("run -m " + path + " -p hi", "magic");
}

TEST(BadInput, MissingModel) { expect_clean_error("run -m /nonexistent/model.gguf -p hi", "does not exist"); }

// Copies an HF directory so a test can edit its config.json.
std::string copy_hf_dir(const std::string& src, const std::string& tag) {
  const std::string dir = test::make_temp_dir(tag);
  for (const auto& e : fs::directory_iterator(src)) fs::copy(e.path(), dir + "/" + e.path().filename().string());
  return dir;
}

void patch_config(const std::string& dir, const std::string& from, const std::string& to) {
  std::string cfg = test::read_file(dir + "/config.json");
  const size_t at = cfg.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  cfg.replace(at, from.size(), to);
  write_bytes(dir + "/config.json", cfg);
}

TEST(BadInput, WrongShapeNamesTheTensor) {
  const std::string dir = copy_hf_dir(test::data_path("oracle/qwen2_tiny"), "shape");
  patch_config(dir, "\"intermediate_size\": 352", "\"intermediate_size\": 350");
  expect_clean_error("eval -m " + dir + " --tokens 0,1", "blk.0.ffn_gate.weight");
}

TEST(BadInput, UnknownArchitecture) {
  const std::string dir = copy_hf_dir(test::data_path("oracle/qwen2_tiny"), "arch");
  patch_config(dir, "\"Qwen2ForCausalLM\"", "\"MambaForCausalLM\"");
  patch_config(dir, "\"model_type\": \"qwen2\"", "\"model_type\": \"mamba\"");
  expect_clean_error("eval -m " + dir + " --tokens 0,1", "unknown architecture 'MambaForCausalLM'");
}

TEST(BadInput, MissingTokenizer) {
  expect_clean_error("run -m " + test::data_path("oracle/qwen2_tiny") + " -p hi", "no tokenizer");
}

TEST(BadInput, CorruptSafetensors) {
  const std::string dir = copy_hf_dir(test::data_path("oracle/qwen2_tiny"), "st");
  std::string bytes = test::read_file(dir + "/model.safetensors");
  write_bytes(dir + "/model.safetensors", bytes.substr(0, bytes.size() / 2));
  expect_clean_error("eval -m " + dir + " --tokens 0,1", "safetensors");
}

TEST(BadInput, BadTokensAndContext) {
  const std::string m = test::data_path("oracle/qwen2_tiny");
  expect_clean_error("eval -m " + m + " --tokens 0,512", "outside the vocabulary");
  expect_clean_error("eval -m " + m + " --tokens 0,x", "not an integer");
  expect_clean_error("run -m " + test::data_path("models/stories260K.gguf") + " -p 'Once upon a time' -c 3",
                     "does not fit the context");
}

TEST(BadInput, BadKvDtype) {
  const std::string qwen = "eval -m " + test::data_path("oracle/qwen2_tiny") + " --tokens 0,1 --kv-dtype ";
  expect_clean_error(qwen + "q4_0", "--kv-dtype 'q4_0': accepted values are f32, bf16, f16 and q8_0");
  // Q8_0 KV is CPU-only: the GPU backends (here the simt emulator) refuse it at load, before any weight is read.
  expect_clean_error(qwen + "q8_0 --device simt:0",
                     "load_model: a KV cache of q8_0 is not supported on simt:0 (it takes f32, f16, bf16)");
  // Q8_0 rows hold whole 32-element blocks per latent part: deepseek_v3_tiny's 8-wide k_rope is refused.
  expect_clean_error("eval -m " + test::data_path("oracle/deepseek_v3_tiny") + " --tokens 0,1 --kv-dtype q8_0",
                     "a q8_0 KV cache stores 32-element blocks: qk_rope_head_dim 8 is not a multiple of 32");
}

TEST(BadInput, TokenizerJsonGarbage) {
  const std::string path = test::make_temp_dir("tok") + "/tokenizer.json";
  write_bytes(path, "{\"model\": {\"type\": \"BPE\", \"vocab\": 7}}");
  test::CommandResult r = test::run_command(cai_bin() + " tokenize -m " + path + " -p hi");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("error:"), std::string::npos);
}

}  // namespace
}  // namespace cai
