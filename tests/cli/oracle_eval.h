// The reference-logit oracles (tests/data/oracle) run through `cai eval`: shared by the one-device and the
// several-device (layout) tests.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "test_paths.h"

namespace cai::test {

inline const std::vector<std::string> kOracles = {"qwen2_tiny", "deepseek_v3_tiny", "deepseek_v3_tiny/fp8",
                                                  "deepseek_v3_tiny/q_lora_none", "llama3_scaled_tiny"};
// The DeepSeek oracle in mainline llama.cpp's GGUF layout (attn_k_b/attn_v_b, no attn_kv_b: CAI rebuilds it at load).
inline const char* const kMainlineGguf = "deepseek_v3_tiny/mainline.gguf";

// max|mine - ref| and max|ref| over two logit dumps of the same size.
inline std::pair<float, float> max_diff_and_ref(const std::vector<float>& mine, const std::vector<float>& ref) {
  EXPECT_EQ(mine.size(), ref.size());
  float max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < std::min(mine.size(), ref.size()); ++i) {
    max_diff = std::max(max_diff, std::fabs(mine[i] - ref[i]));
    max_ref = std::max(max_ref, std::fabs(ref[i]));
  }
  return {max_diff, max_ref};
}

// tests/data/oracle/*: the 8 greedy tokens and logits within tol + rel_tol × max|reference logit| (per file), for every
// prompt; decode runs one token per step through the KV cache (the latent cache for DeepSeek). `device_args` picks the
// device and KV dtype, e.g. "--device simt:0 --kv-dtype f32" (with CAI_SIMT_WARP in `env`). `name` is an oracle
// folder, or a .gguf file in one (the same weights in another layout), checked against that folder's references.
inline void expect_oracle(const std::string& name, const std::string& env, const std::string& device_args, float tol,
                          float rel_tol = 0.0f) {
  const std::string model = data_path("oracle/" + name);
  const std::string dir = name.ends_with(".gguf") ? model.substr(0, model.rfind('/')) : model;
  const nlohmann::json spec = nlohmann::json::parse(read_file(dir + "/tokens.json"));
  const std::string tmp = make_temp_dir("eval");
  for (const auto& p : spec["prompts"]) {
    std::string toks;
    for (const auto& t : p["input_ids"]) toks += (toks.empty() ? "" : ",") + std::to_string(t.get<int>());
    const std::string logits = tmp + "/logits.f32", gen = tmp + "/gen.f32";
    CommandResult r = run_command(env + " " + cai_bin() + " eval -m " + model + " " + device_args + " --tokens " +
                                  toks + " --greedy 8 --logits " + logits + " --gen-logits " + gen + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json out = nlohmann::json::parse(last_line(r.out));
    EXPECT_EQ(out["greedy"], p["greedy_next_tokens"]) << p["name"];
    EXPECT_EQ(out["n_vocab"], spec["vocab_size"]);
    for (const auto& [mine, theirs] : {std::pair{logits, p["logits_file"]}, std::pair{gen, p["gen_logits_file"]}}) {
      const auto [max_diff, max_ref] =
          max_diff_and_ref(read_f32(mine), read_f32(dir + "/" + theirs.get<std::string>()));
      EXPECT_LE(max_diff, tol + rel_tol * max_ref) << p["name"] << " " << theirs;
    }
  }
}

inline std::string param_name(std::string n) {
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

}  // namespace cai::test
