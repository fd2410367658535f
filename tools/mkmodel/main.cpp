// cai-mkmodel: random-weight models (GGUF or HF directory) of a chosen shape, or HF checkpoints converted to GGUF.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string_view>

#include "core/thread_pool.h"
#include "convert.h"
#include "emit.h"
#include "model_spec.h"
#include "vocab.h"

namespace cai::mkmodel {
namespace {

// The single place that names architectures: adding one = one builder file + one row here.
struct ArchEntry {
  std::string_view name;
  std::string_view family;  // which presets apply
  Result<ModelSpec> (*build)(const ModelShape&, uint64_t seed);
  float rope_theta;
  float rms_eps;
  bool tied;  // for presets that do not fix it
};
constexpr std::array kArchs = {
    ArchEntry{"qwen2", "llama", build_llama_family, 1000000.0f, 1e-6f, true},
    ArchEntry{"llama", "llama", build_llama_family, 500000.0f, 1e-5f, false},
    ArchEntry{"deepseek2", "deepseek2", build_deepseek2, 10000.0f, 1e-6f, false},
};

struct Yarn {
  float factor = 0.0f;  // 0 = no rope scaling
  int64_t original_ctx = 0;
  float mscale = 1.0f, mscale_all_dim = 0.0f;
};

struct Preset {
  std::string_view family, name;
  int64_t hidden, n_layers, n_heads, n_kv_heads, ffn, vocab, ctx;
  std::optional<bool> tied;
  MlaMoeShape mla = {};
  Yarn yarn = {};
};
constexpr std::array kPresets = {
    Preset{"llama", "qwen2-0.5b", 896, 24, 14, 2, 4864, 151936, 32768, true},
    Preset{"llama", "qwen2-1.5b", 1536, 28, 12, 2, 8960, 151936, 32768, true},
    // Small enough for unit tests, rows long enough (256) for the K-quants.
    Preset{"llama", "tiny", 256, 2, 4, 2, 512, 300, 256, std::nullopt},
    // DeepSeek-V2-Lite (16B): MLA without q LoRA, 64 experts with softmax gating.
    Preset{"deepseek2",
           "deepseek-v2-lite",
           2048,
           27,
           16,
           16,
           10944,
           102400,
           163840,
           false,
           {.q_lora_rank = 0,
            .kv_lora_rank = 512,
            .qk_nope_head_dim = 128,
            .qk_rope_head_dim = 64,
            .v_head_dim = 128,
            .first_k_dense_replace = 1,
            .n_routed_experts = 64,
            .moe_ffn = 1408,
            .n_shared_experts = 2,
            .top_k = 6,
            .n_group = 1,
            .topk_group = 1,
            .sigmoid = false,
            .norm_topk_prob = false,
            .routed_scaling_factor = 1.0f},
           {40.0f, 4096, 0.707f, 0.707f}},
    // R1 / V3 layer shapes with 4 layers (3 dense + 1 MoE) and a 32000-token vocabulary.
    Preset{"deepseek2",
           "r1-reduced",
           7168,
           4,
           128,
           128,
           18432,
           32000,
           163840,
           false,
           {.q_lora_rank = 1536,
            .kv_lora_rank = 512,
            .qk_nope_head_dim = 128,
            .qk_rope_head_dim = 64,
            .v_head_dim = 128,
            .first_k_dense_replace = 3,
            .n_routed_experts = 256,
            .moe_ffn = 2048,
            .n_shared_experts = 1,
            .top_k = 8,
            .n_group = 8,
            .topk_group = 4,
            .sigmoid = true,
            .norm_topk_prob = true,
            .routed_scaling_factor = 2.5f},
           {40.0f, 4096, 1.0f, 1.0f}},
    // Tests: every R1 feature (q LoRA, grouped sigmoid routing with bias, shared expert, YaRN), 128-wide FP8
    // blocks with partial edges.
    Preset{"deepseek2",
           "tiny",
           256,
           3,
           4,
           4,
           384,
           300,
           512,
           false,
           {.q_lora_rank = 160,
            .kv_lora_rank = 64,
            .qk_nope_head_dim = 32,
            .qk_rope_head_dim = 16,
            .v_head_dim = 32,
            .first_k_dense_replace = 1,
            .n_routed_experts = 16,
            .moe_ffn = 64,
            .n_shared_experts = 1,
            .top_k = 4,
            .n_group = 4,
            .topk_group = 2,
            .sigmoid = true,
            .norm_topk_prob = true,
            .routed_scaling_factor = 2.5f},
           {4.0f, 128, 1.0f, 1.0f}},
};

struct Args {
  std::string arch = "qwen2";
  std::string preset = "tiny";
  std::string from;  // HF directory to convert
  std::optional<int64_t> hidden, n_layers, n_heads, n_kv_heads, ffn, vocab, ctx;
  std::optional<int64_t> kv_lora, qk_nope, v_head;  // deepseek2's MLA sizes
  std::optional<bool> tied;
  std::optional<float> rope_theta;
  bool mtp = false;  // deepseek2: one multi-token-prediction module after the layers
  std::string format = "gguf";
  std::string dtype = "f32";
  uint64_t seed = 0;
  std::string out;
  int n_threads = 0;
  double shard_mb = 0;
  std::vector<std::string> chain;  // --chain FROM:TO links (token_chain.cpp)
};

std::string preset_names(std::string_view family) {
  std::string names;
  for (const Preset& x : kPresets) {
    if (x.family == family) names += (names.empty() ? "" : ", ") + std::string(x.name);
  }
  return names;
}

Result<ModelShape> resolve_shape(const Args& a, const ArchEntry& arch) {
  const Preset* p = nullptr;
  for (const Preset& x : kPresets) {
    if (x.family == arch.family && x.name == a.preset) p = &x;
  }
  if (!p) return invalid_argument("unknown {} preset '{}' ({})", arch.name, a.preset, preset_names(arch.family));
  ModelShape s;
  s.arch = std::string(arch.name);
  s.hidden = a.hidden.value_or(p->hidden);
  s.n_layers = a.n_layers.value_or(p->n_layers);
  s.n_heads = a.n_heads.value_or(p->n_heads);
  s.n_kv_heads = arch.family == "deepseek2" ? s.n_heads : a.n_kv_heads.value_or(p->n_kv_heads);
  s.ffn = a.ffn.value_or(p->ffn);
  s.vocab = a.vocab.value_or(p->vocab);
  s.ctx = a.ctx.value_or(p->ctx);
  s.tied = a.tied.value_or(p->tied.value_or(arch.tied));
  if (a.mtp && arch.family != "deepseek2") return invalid_argument("--mtp: only DeepSeek models (--arch deepseek2)");
  s.n_mtp_layers = a.mtp ? 1 : 0;
  s.rope_theta = a.rope_theta.value_or(arch.rope_theta);
  s.rms_eps = arch.rms_eps;
  s.mla = p->mla;
  if ((a.kv_lora || a.qk_nope || a.v_head) && arch.family != "deepseek2")
    return invalid_argument("--kv-lora, --qk-nope and --v-head are MLA sizes (--arch deepseek2), not {}'s", arch.name);
  s.mla.kv_lora_rank = a.kv_lora.value_or(s.mla.kv_lora_rank);
  s.mla.qk_nope_head_dim = a.qk_nope.value_or(s.mla.qk_nope_head_dim);
  s.mla.v_head_dim = a.v_head.value_or(s.mla.v_head_dim);
  s.yarn_factor = p->yarn.factor;
  s.yarn_original_ctx = p->yarn.original_ctx;
  s.yarn_mscale = p->yarn.mscale;
  s.yarn_mscale_all_dim = p->yarn.mscale_all_dim;
  return s;
}

std::optional<DType> parse_dtype(const std::string& name) {
  return name == "fp8" ? std::optional<DType>(DType::kF8_E4M3) : dtype_from_name(name);
}

Status convert(const Args& a, DType dtype) {
  if (a.format != "gguf") return invalid_argument("--from converts to --format gguf only, not '{}'", a.format);
  ThreadPool pool(a.n_threads);
  EmitOptions o;
  o.dtype = dtype;
  o.name = fmt::format("cai-mkmodel --from {}", a.from);
  o.pool = &pool;
  const auto t0 = std::chrono::steady_clock::now();
  CAI_ASSIGN_OR_RETURN(ConvertStats st, convert_hf_to_gguf(a.from, o, a.out));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print(
      "wrote {} ({} gguf {} from {}): {} tensors, {:.1f} MiB of tensor data in {:.1f} s with {} threads; "
      "{} HF tensors dropped; tokenizer: {}\n",
      a.out, st.arch, a.dtype, a.from, st.emit.n_tensors, static_cast<double>(st.emit.n_bytes) / (1 << 20), secs,
      pool.size(), st.n_dropped, st.has_tokenizer ? "converted" : "none (" + st.tokenizer_note + ")");
  return Status::ok_status();
}

Status run(const Args& a) {
  const ArchEntry* arch = nullptr;
  for (const ArchEntry& x : kArchs) {
    if (x.name == a.arch) arch = &x;
  }
  const std::optional<DType> dtype = parse_dtype(a.dtype);
  if (!dtype) return invalid_argument("unknown dtype '{}'", a.dtype);
  if (!a.from.empty()) return convert(a, *dtype);
  if (!arch) return invalid_argument("unknown architecture '{}' (qwen2, llama, deepseek2)", a.arch);
  CAI_ASSIGN_OR_RETURN(ModelShape shape, resolve_shape(a, *arch));
  CAI_ASSIGN_OR_RETURN(ModelSpec spec, arch->build(shape, a.seed));
  if (!a.chain.empty()) {
    std::vector<std::pair<int64_t, int64_t>> links;
    for (const std::string& link : a.chain) {
      int64_t from = 0, to = 0;
      char sep = 0, extra = 0;
      if (std::sscanf(link.c_str(), "%ld%c%ld%c", &from, &sep, &to, &extra) != 3 || sep != ':')
        return invalid_argument("--chain takes FROM:TO token id pairs, not '{}'", link);
      links.push_back({from, to});
    }
    CAI_TRY(add_token_chain(spec, links));
  }
  CAI_ASSIGN_OR_RETURN(SyntheticVocab vocab, make_vocab(shape.vocab));

  ThreadPool pool(a.n_threads);
  EmitOptions o;
  o.dtype = *dtype;
  o.name = fmt::format("cai-mkmodel {} {} seed {}", a.arch, a.preset, a.seed);
  o.max_shard_bytes = static_cast<uint64_t>(a.shard_mb * 1024.0 * 1024.0);
  o.pool = &pool;
  const auto t0 = std::chrono::steady_clock::now();
  EmitStats stats;
  if (a.format == "gguf") {
    CAI_ASSIGN_OR_RETURN(stats, write_gguf(spec, vocab, o, a.out));
  } else if (a.format == "hf") {
    CAI_ASSIGN_OR_RETURN(stats, write_hf(spec, vocab, o, a.out));
  } else {
    return invalid_argument("unknown format '{}' (gguf, hf)", a.format);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("wrote {} ({} {}, {} {}): {} tensors, {:.1f} MiB of tensor data in {:.1f} s with {} threads\n", a.out,
             a.arch, a.format, a.preset, a.dtype, stats.n_tensors, static_cast<double>(stats.n_bytes) / (1 << 20), secs,
             pool.size());
  return Status::ok_status();
}

}  // namespace
}  // namespace cai::mkmodel

int main(int argc, char** argv) {
  cai::mkmodel::Args a;
  CLI::App app{"cai-mkmodel: write a random-weight model (GGUF file or Hugging Face directory)"};
  app.add_option("--arch", a.arch, "architecture: qwen2 | llama | deepseek2")->capture_default_str();
  app.add_option("--preset", a.preset,
                 "shape: qwen2-0.5b | qwen2-1.5b | tiny; deepseek2: deepseek-v2-lite | r1-reduced | tiny")
      ->capture_default_str();
  app.add_option("--from", a.from, "convert this Hugging Face directory (llama, qwen2, deepseek_v3) to GGUF");
  app.add_option("--hidden", a.hidden, "hidden_size");
  app.add_option("--layers", a.n_layers, "num_hidden_layers");
  app.add_option("--heads", a.n_heads, "num_attention_heads");
  app.add_option("--kv-heads", a.n_kv_heads, "num_key_value_heads");
  app.add_option("--ffn", a.ffn, "intermediate_size");
  app.add_option("--vocab", a.vocab, "vocab_size (>= 259)");
  app.add_option("--ctx", a.ctx, "max_position_embeddings");
  app.add_option("--kv-lora", a.kv_lora, "deepseek2: kv_lora_rank")->check(CLI::PositiveNumber);
  app.add_option("--qk-nope", a.qk_nope, "deepseek2: qk_nope_head_dim")->check(CLI::PositiveNumber);
  app.add_option("--v-head", a.v_head, "deepseek2: v_head_dim")->check(CLI::PositiveNumber);
  app.add_option("--tie-embeddings", a.tied, "share token_embd and output (default: preset / architecture)");
  app.add_flag("--mtp", a.mtp, "deepseek2: add a multi-token-prediction module after the layers, as R1 ships one");
  app.add_option("--rope-theta", a.rope_theta, "rope_theta (default: architecture)");
  app.add_option("--format", a.format, "gguf | hf")->capture_default_str();
  app.add_option("--dtype", a.dtype, "f32|f16|bf16|q8_0|q4_0|q4_K|q5_K|q6_K (hf: f32|f16|bf16|fp8)")
      ->capture_default_str();
  app.add_option("--seed", a.seed, "weight seed")->capture_default_str();
  app.add_option("-o,--output", a.out, "GGUF file, or HF directory")->required();
  app.add_option("--threads", a.n_threads, "worker threads (0 = all cores)")->capture_default_str();
  app.add_option("--shard-mb", a.shard_mb, "hf: shard size in MiB (0 = one model.safetensors)")->capture_default_str();
  app.add_option("--chain", a.chain,
                 "FROM:TO token id pairs, comma-separated: a model that reads FROM writes TO next (tests of clients "
                 "that need a model to write a given text; needs --tie-embeddings false)")
      ->delimiter(',');
  CLI11_PARSE(app, argc, argv);

  const cai::Status st = cai::mkmodel::run(a);
  if (!st.ok()) {
    std::fprintf(stderr, "cai-mkmodel: %s\n", st.to_string().c_str());
    return 1;
  }
  return 0;
}
