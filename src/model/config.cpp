// Reading ModelConfig from HF config.json and from GGUF metadata, with clear errors for missing or bad fields.
#include "model/config.h"

#include <algorithm>
#include <cmath>

namespace cai {

namespace {

using nlohmann::json;

constexpr int kMaxHeadDim = 1 << 16;  // far above any real model; bounds the per-pair RoPE tables sized from it

Result<int> get_int(const json& obj, const std::string& key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return not_found("{}: missing required field '{}'", where, key);
  if (it->is_array() && !it->empty()) {  // GGUF per-layer arrays: all layers must agree
    const json& first = it->front();
    for (const json& v : *it)
      if (v != first) return unsupported("{}: '{}' differs per layer, which is not supported", where, key);
    return get_int(json{{key, first}}, key, where);
  }
  if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > (1 << 30))
    return invalid_argument("{}: field '{}' must be a non-negative integer, got {}", where, key, it->dump());
  return static_cast<int>(it->get<int64_t>());
}

int opt_int(const json& obj, const std::string& key, int dflt) {
  auto it = obj.find(key);
  return (it != obj.end() && it->is_number_integer()) ? static_cast<int>(it->get<int64_t>()) : dflt;
}

float opt_float(const json& obj, const std::string& key, float dflt) {
  auto it = obj.find(key);
  return (it != obj.end() && it->is_number()) ? it->get<float>() : dflt;
}

// A string field, `dflt` when absent or not a string (json::value() would throw on another type).
std::string opt_string(const json& obj, const std::string& key, const std::string& dflt) {
  auto it = obj.find(key);
  return (it != obj.end() && it->is_string()) ? it->get<std::string>() : dflt;
}

bool opt_bool(const json& obj, const std::string& key, bool dflt) {
  auto it = obj.find(key);
  return (it != obj.end() && it->is_boolean()) ? it->get<bool>() : dflt;
}

Status finish(ModelConfig& c, const std::string& where) {
  if (c.hidden_size <= 0 || c.num_hidden_layers <= 0 || c.num_attention_heads <= 0 || c.vocab_size <= 0)
    return invalid_argument("{}: hidden_size, num_hidden_layers, num_attention_heads and vocab_size must be positive",
                            where);
  if (c.num_key_value_heads <= 0) c.num_key_value_heads = c.num_attention_heads;
  if (c.num_attention_heads % c.num_key_value_heads)
    return invalid_argument("{}: {} attention heads is not a multiple of {} KV heads", where, c.num_attention_heads,
                            c.num_key_value_heads);
  if (c.head_dim <= 0) c.head_dim = c.hidden_size / c.num_attention_heads;
  if (c.head_dim > kMaxHeadDim)
    return invalid_argument("{}: head dimension {} is above {}", where, c.head_dim, kMaxHeadDim);
  if (c.rope_dim <= 0) c.rope_dim = c.head_dim;
  if (c.rope_dim > c.head_dim || c.rope_dim % 2) return invalid_argument("{}: rope dims {} invalid", where, c.rope_dim);
  if (c.max_position_embeddings <= 0) c.max_position_embeddings = 2048;
  return {};
}

// rope_scaling of HF configs: llama3, linear, yarn (or null).
Status read_hf_rope_scaling(const json& cfg, ModelConfig& c) {
  auto it = cfg.find("rope_scaling");
  if (it == cfg.end() || it->is_null()) return {};
  if (!it->is_object()) return invalid_argument("config.json: rope_scaling must be an object or null");
  const json& rs = *it;
  std::string type = opt_string(rs, "rope_type", opt_string(rs, "type", "default"));
  const float factor = opt_float(rs, "factor", 1.0f);
  if (type == "default") return {};
  if (type == "linear") {
    c.rope_freq_divisors.assign(static_cast<size_t>(c.rope_dim / 2), factor);
  } else if (type == "llama3") {
    c.rope_freq_divisors = llama3_rope_divisors(
        c.rope_dim, c.rope_theta, factor, opt_float(rs, "low_freq_factor", 1.0f),
        opt_float(rs, "high_freq_factor", 4.0f), opt_int(rs, "original_max_position_embeddings", 8192));
  } else if (type == "yarn") {
    c.yarn_factor = factor;
    c.yarn_mscale = opt_float(rs, "mscale", 1.0f);
    c.yarn_mscale_all_dim = opt_float(rs, "mscale_all_dim", 0.0f);
    c.yarn_original_max_position_embeddings =
        opt_int(rs, "original_max_position_embeddings", c.max_position_embeddings);
    c.yarn_beta_fast = opt_float(rs, "beta_fast", 32.0f);
    c.yarn_beta_slow = opt_float(rs, "beta_slow", 1.0f);
  } else {
    return unsupported("config.json: rope_scaling type '{}' is not supported", type);
  }
  return {};
}

// DeepSeek V2/V3 fields (absent elsewhere). DeepSeek checkpoints are natively interleaved: NORM RoPE on the rope dims.
Status read_hf_mla_moe(const json& cfg, ModelConfig& c, const std::string& where) {
  if (!cfg.contains("kv_lora_rank")) return {};
  CAI_ASSIGN_OR_RETURN(c.kv_lora_rank, get_int(cfg, "kv_lora_rank", where));
  CAI_ASSIGN_OR_RETURN(c.qk_nope_head_dim, get_int(cfg, "qk_nope_head_dim", where));
  CAI_ASSIGN_OR_RETURN(c.qk_rope_head_dim, get_int(cfg, "qk_rope_head_dim", where));
  CAI_ASSIGN_OR_RETURN(c.v_head_dim, get_int(cfg, "v_head_dim", where));
  c.q_lora_rank = opt_int(cfg, "q_lora_rank", 0);  // null → 0
  if (c.qk_nope_head_dim > kMaxHeadDim - c.qk_rope_head_dim)
    return invalid_argument("{}: qk_nope_head_dim + qk_rope_head_dim is above {}", where, kMaxHeadDim);
  c.head_dim = c.qk_nope_head_dim + c.qk_rope_head_dim;
  c.rope_dim = c.qk_rope_head_dim;
  c.rope_style = hal::RopeStyle::kNorm;
  c.n_routed_experts = opt_int(cfg, "n_routed_experts", 0);
  if (c.n_routed_experts > 0) {
    CAI_ASSIGN_OR_RETURN(c.moe_intermediate_size, get_int(cfg, "moe_intermediate_size", where));
    CAI_ASSIGN_OR_RETURN(c.num_experts_per_tok, get_int(cfg, "num_experts_per_tok", where));
    c.first_k_dense_replace = opt_int(cfg, "first_k_dense_replace", 0);
    c.n_shared_experts = opt_int(cfg, "n_shared_experts", 0);
    c.n_group = std::max(1, opt_int(cfg, "n_group", 1));
    c.topk_group = std::max(1, opt_int(cfg, "topk_group", 1));
    c.norm_topk_prob = opt_bool(cfg, "norm_topk_prob", false);
    c.routed_scaling_factor = opt_float(cfg, "routed_scaling_factor", 1.0f);
    c.scoring_func = opt_string(cfg, "scoring_func", "softmax");
    c.n_mtp_layers = std::max(0, opt_int(cfg, "num_nextn_predict_layers", 0));
    if (c.scoring_func != "softmax" && c.scoring_func != "sigmoid")
      return unsupported("{}: scoring_func '{}' is not supported", where, c.scoring_func);
    if (c.num_experts_per_tok > c.n_routed_experts || c.n_routed_experts % c.n_group || c.topk_group > c.n_group)
      return invalid_argument("{}: inconsistent expert routing ({} experts, top-{}, {} groups, top-{} groups)", where,
                              c.n_routed_experts, c.num_experts_per_tok, c.n_group, c.topk_group);
  }
  return {};
}

// GGUF deepseek2 (llama.cpp converters, ik and mainline flavours; docs/design/formats.md#gguf-metadata-keys and
// docs/design/formats.md#deepseek-gguf-flavours).
Status read_gguf_mla_moe(const json& md, const std::string& arch, ModelConfig& c) {
  auto key = [&](const char* k) { return arch + "." + k; };
  const std::string where = "GGUF " + arch;
  c.architecture = "DeepseekV3ForCausalLM";
  c.q_lora_rank = opt_int(md, key("attention.q_lora_rank"), 0);
  CAI_ASSIGN_OR_RETURN(c.kv_lora_rank, get_int(md, key("attention.kv_lora_rank"), where));
  c.qk_rope_head_dim = c.rope_dim;
  const bool mainline = md.contains(key("attention.key_length_mla"));
  CAI_ASSIGN_OR_RETURN(int key_len,
                       get_int(md, key(mainline ? "attention.key_length_mla" : "attention.key_length"), where));
  CAI_ASSIGN_OR_RETURN(c.v_head_dim,
                       get_int(md, key(mainline ? "attention.value_length_mla" : "attention.value_length"), where));
  c.qk_nope_head_dim = key_len - c.qk_rope_head_dim;
  if (c.qk_nope_head_dim <= 0 || key_len > kMaxHeadDim)
    return invalid_argument("{}: key length {} must exceed the rope dims {} and be at most {}", where, key_len,
                            c.qk_rope_head_dim, kMaxHeadDim);
  c.head_dim = key_len;
  c.num_key_value_heads = c.num_attention_heads;  // MLA: every head reads the shared latent
  c.rope_style = hal::RopeStyle::kNorm;
  c.attention_bias = false;
  c.n_routed_experts = opt_int(md, key("expert_count"), 0);
  if (c.n_routed_experts > 0) {
    CAI_ASSIGN_OR_RETURN(c.num_experts_per_tok, get_int(md, key("expert_used_count"), where));
    CAI_ASSIGN_OR_RETURN(c.moe_intermediate_size, get_int(md, key("expert_feed_forward_length"), where));
    c.first_k_dense_replace = opt_int(md, key("leading_dense_block_count"), 0);
    c.n_shared_experts = opt_int(md, key("expert_shared_count"), 0);
    c.routed_scaling_factor = opt_float(md, key("expert_weights_scale"), 1.0f);
    c.norm_topk_prob = opt_bool(md, key("expert_weights_norm"), false);
    c.scoring_func = opt_int(md, key("expert_gating_func"), 1) == 2 ? "sigmoid" : "softmax";
    c.n_group = std::max(1, opt_int(md, key("expert_group_count"), 1));
    c.topk_group = std::max(1, opt_int(md, key("expert_group_used_count"), c.n_group));
    c.n_mtp_layers = std::max(0, opt_int(md, key("nextn_predict_layers"), 0));
  }
  return {};
}

}  // namespace

float yarn_get_mscale(float factor, float k) { return factor <= 1.0f ? 1.0f : 0.1f * k * std::log(factor) + 1.0f; }

hal::RopeParams ModelConfig::rope_params() const {
  hal::RopeParams p;
  p.style = rope_style;
  p.n_rot = rope_dim;
  return p;
}

RopeFreqConfig ModelConfig::rope_freq_config() const {
  RopeFreqConfig c;
  c.n_rot = rope_dim;
  c.freq_base = rope_theta;
  c.freq_divisors = rope_freq_divisors;
  c.yarn_factor = yarn_factor;
  c.yarn_orig_ctx = yarn_original_max_position_embeddings;
  c.yarn_beta_fast = yarn_beta_fast;
  c.yarn_beta_slow = yarn_beta_slow;
  return c;
}

std::vector<float> llama3_rope_divisors(int rope_dim, float theta, float factor, float low_freq_factor,
                                        float high_freq_factor, int original_ctx) {
  std::vector<float> out;
  const double low_wavelen = original_ctx / low_freq_factor, high_wavelen = original_ctx / high_freq_factor;
  for (int i = 0; i < rope_dim / 2; ++i) {
    const double freq = std::pow(static_cast<double>(theta), -2.0 * i / rope_dim);
    const double wavelen = 2 * M_PI / freq;
    double div = 1.0;
    if (wavelen > low_wavelen) {
      div = factor;
    } else if (wavelen >= high_wavelen) {
      const double t = (original_ctx / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      div = 1.0 / ((1.0 - t) / factor + t);
    }
    out.push_back(static_cast<float>(div));
  }
  return out;
}

Result<ModelConfig> config_from_hf(const json& cfg) {
  const std::string where = "config.json";
  if (!cfg.is_object()) return corrupt("{}: not a JSON object", where);
  ModelConfig c;
  auto arch = cfg.find("architectures");
  if (arch != cfg.end() && arch->is_array() && !arch->empty() && arch->front().is_string())
    c.architecture = arch->front().get<std::string>();
  c.model_type = opt_string(cfg, "model_type", "");
  if (c.architecture.empty() && c.model_type.empty())
    return not_found("{}: neither 'architectures' nor 'model_type'", where);
  CAI_ASSIGN_OR_RETURN(c.hidden_size, get_int(cfg, "hidden_size", where));
  CAI_ASSIGN_OR_RETURN(c.num_hidden_layers, get_int(cfg, "num_hidden_layers", where));
  CAI_ASSIGN_OR_RETURN(c.num_attention_heads, get_int(cfg, "num_attention_heads", where));
  CAI_ASSIGN_OR_RETURN(c.vocab_size, get_int(cfg, "vocab_size", where));
  CAI_ASSIGN_OR_RETURN(c.intermediate_size, get_int(cfg, "intermediate_size", where));
  c.num_key_value_heads = opt_int(cfg, "num_key_value_heads", c.num_attention_heads);
  c.head_dim = opt_int(cfg, "head_dim", 0);
  c.max_position_embeddings = opt_int(cfg, "max_position_embeddings", 0);
  c.rms_norm_eps = opt_float(cfg, "rms_norm_eps", 1e-6f);
  c.rope_theta = opt_float(cfg, "rope_theta", 10000.0f);
  c.tie_word_embeddings = opt_bool(cfg, "tie_word_embeddings", false);
  c.attention_bias = c.model_type == "qwen2" || opt_bool(cfg, "attention_bias", false);
  c.rope_style = hal::RopeStyle::kNeox;  // HF checkpoints keep the half-split (rotate_half) layout
  CAI_TRY(read_hf_mla_moe(cfg, c, where));
  CAI_TRY(finish(c, where));
  CAI_TRY(read_hf_rope_scaling(cfg, c));
  return c;
}

Result<ModelConfig> config_from_gguf(const json& md) {
  auto a = md.find("general.architecture");
  if (a == md.end() || !a->is_string()) return not_found("GGUF: missing general.architecture");
  const std::string arch = a->get<std::string>();
  const std::string where = "GGUF " + arch;
  auto key = [&](const char* k) { return arch + "." + k; };
  ModelConfig c;
  c.model_type = arch;
  if (arch == "llama")
    c.architecture = "LlamaForCausalLM";
  else if (arch == "qwen2")
    c.architecture = "Qwen2ForCausalLM";
  else
    c.architecture = arch;
  CAI_ASSIGN_OR_RETURN(c.hidden_size, get_int(md, key("embedding_length"), where));
  CAI_ASSIGN_OR_RETURN(c.num_hidden_layers, get_int(md, key("block_count"), where));
  CAI_ASSIGN_OR_RETURN(c.num_attention_heads, get_int(md, key("attention.head_count"), where));
  if (md.contains(key("attention.head_count_kv"))) {
    CAI_ASSIGN_OR_RETURN(c.num_key_value_heads, get_int(md, key("attention.head_count_kv"), where));
  }
  if (md.contains(key("feed_forward_length"))) {
    CAI_ASSIGN_OR_RETURN(c.intermediate_size, get_int(md, key("feed_forward_length"), where));
  }
  c.vocab_size = opt_int(md, key("vocab_size"), 0);
  if (c.vocab_size == 0) {
    auto toks = md.find("tokenizer.ggml.tokens");
    if (toks != md.end() && toks->is_array()) c.vocab_size = static_cast<int>(toks->size());
  }
  c.max_position_embeddings = opt_int(md, key("context_length"), 0);
  c.rms_norm_eps = opt_float(md, key("attention.layer_norm_rms_epsilon"), 1e-5f);
  c.rope_theta = opt_float(md, key("rope.freq_base"), 10000.0f);
  c.rope_dim = opt_int(md, key("rope.dimension_count"), 0);
  c.head_dim = opt_int(md, key("attention.key_length"), 0);
  c.attention_bias = arch == "qwen2";
  // GGUF llama rows were permuted to interleaved pairs at conversion; qwen2 keeps the half-split layout.
  c.rope_style = arch == "qwen2" ? hal::RopeStyle::kNeox : hal::RopeStyle::kNorm;
  CAI_TRY(finish(c, where));
  if (arch == "deepseek2") CAI_TRY(read_gguf_mla_moe(md, arch, c));
  const std::string scaling = opt_string(md, key("rope.scaling.type"), "none");
  const float factor = opt_float(md, key("rope.scaling.factor"), 1.0f);
  if (scaling == "linear" && factor != 1.0f) {
    c.rope_freq_divisors.assign(static_cast<size_t>(c.rope_dim / 2), factor);
  } else if (scaling == "yarn") {
    c.yarn_factor = factor;
    c.yarn_original_max_position_embeddings =
        opt_int(md, key("rope.scaling.original_context_length"), c.max_position_embeddings);
    c.yarn_beta_fast = opt_float(md, key("rope.scaling.yarn_beta_fast"), 32.0f);
    c.yarn_beta_slow = opt_float(md, key("rope.scaling.yarn_beta_slow"), 1.0f);
    // GGUF stores 0.1 × mscale_all_dim; converters assume mscale == mscale_all_dim (true for V2-Lite, V3, R1).
    const float log_mult = opt_float(md, key("rope.scaling.yarn_log_multiplier"), 0.0f);
    if (c.is_mla() && log_mult > 0.0f) c.yarn_mscale = c.yarn_mscale_all_dim = log_mult / 0.1f;
  } else if (scaling != "none" && scaling != "linear") {
    return unsupported("{}: rope scaling type '{}' is not supported", where, scaling);
  }
  return c;
}

}  // namespace cai
