// Llama and Qwen2 random models: HF weight list, GGUF tensors (llama Q/K rows permuted), config.json, GGUF keys.
#include <fmt/format.h>

#include "model_spec.h"

namespace cai::mkmodel {
namespace {

Status check_llama_shape(const ModelShape& s) {
  if (s.hidden <= 0 || s.n_layers <= 0 || s.n_heads <= 0 || s.n_kv_heads <= 0 || s.ffn <= 0 || s.ctx <= 0) {
    return invalid_argument("hidden, layers, heads, kv-heads, ffn and ctx must all be positive");
  }
  if (s.hidden % s.n_heads != 0) {
    return invalid_argument("hidden {} is not a multiple of heads {}", s.hidden, s.n_heads);
  }
  if (s.n_heads % s.n_kv_heads != 0) {
    return invalid_argument("heads {} is not a multiple of kv-heads {}", s.n_heads, s.n_kv_heads);
  }
  if (s.head_dim() % 2 != 0) return invalid_argument("head dim {} must be even for RoPE", s.head_dim());
  return Status::ok_status();
}

nlohmann::json llama_hf_config(const ModelShape& s) {
  const bool qwen2 = s.arch == "qwen2";
  nlohmann::json c = {
      {"architectures", {qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM"}},
      {"model_type", s.arch},
      {"hidden_size", s.hidden},
      {"intermediate_size", s.ffn},
      {"num_hidden_layers", s.n_layers},
      {"num_attention_heads", s.n_heads},
      {"num_key_value_heads", s.n_kv_heads},
      {"max_position_embeddings", s.ctx},
      {"vocab_size", s.vocab},
      {"rms_norm_eps", s.rms_eps},
      {"rope_theta", s.rope_theta},
      {"rope_scaling", nullptr},
      {"tie_word_embeddings", s.tied},
      {"hidden_act", "silu"},
      {"initializer_range", 0.02},
      {"attention_dropout", 0.0},
      {"use_cache", true},
  };
  if (qwen2) {
    c["use_sliding_window"] = false;
    c["sliding_window"] = s.ctx;
    c["max_window_layers"] = s.n_layers;
  } else {
    c["attention_bias"] = false;
    c["mlp_bias"] = false;
    c["head_dim"] = s.head_dim();
    c["pretraining_tp"] = 1;
  }
  return c;
}

// Adds HF weight `hf` and its GGUF counterpart `gguf`. permute_head_dim > 0 applies the llama Q/K row order.
void add(ModelSpec& m, uint64_t seed, std::string hf, std::string gguf, std::vector<int64_t> shape, Init init,
         GgufRole role, int64_t permute_head_dim = 0) {
  const HfRole hf_role = role == GgufRole::kF32 || hf == "model.embed_tokens.weight" || hf == "lm_head.weight"
                             ? HfRole::kPlain
                             : HfRole::kProjection;
  WeightSpec w{std::move(hf), shape, init, hf_role, nullptr};
  WeightValues values(w, seed);
  RowMaker make_row = [values](int64_t r, float* dst) { values.row(r, dst); };
  if (permute_head_dim > 0) {
    make_row = [values, permute_head_dim](int64_t r, float* dst) {
      values.row(llama_permuted_row(r, permute_head_dim), dst);
    };
  }
  m.weights.push_back(std::move(w));
  m.gguf_tensors.push_back({std::move(gguf), std::move(shape), role, std::move(make_row)});
}

}  // namespace

// Within each head of d rows, GGUF 2i ← HF i and GGUF 2i+1 ← HF i + d/2, turning HF's half-split RoPE order into
// interleaved pairs.
int64_t llama_permuted_row(int64_t r, int64_t head_dim) {
  const int64_t head = r / head_dim;
  const int64_t j = r % head_dim;
  return head * head_dim + j / 2 + (j % 2) * (head_dim / 2);
}

void common_gguf_keys(const ModelShape& s, int64_t rope_dims, GgufWriter& w) {
  const std::string& a = s.arch;
  w.set_string("general.architecture", a);
  w.set_u32(a + ".context_length", static_cast<uint32_t>(s.ctx));
  w.set_u32(a + ".embedding_length", static_cast<uint32_t>(s.hidden));
  w.set_u32(a + ".block_count", static_cast<uint32_t>(s.n_layers + s.n_mtp_layers));  // MTP modules: last blocks
  w.set_u32(a + ".feed_forward_length", static_cast<uint32_t>(s.ffn));
  w.set_u32(a + ".attention.head_count", static_cast<uint32_t>(s.n_heads));
  w.set_u32(a + ".attention.head_count_kv", static_cast<uint32_t>(s.n_kv_heads));
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", s.rms_eps);
  w.set_f32(a + ".rope.freq_base", s.rope_theta);
  w.set_u32(a + ".rope.dimension_count", static_cast<uint32_t>(rope_dims));
  w.set_u32(a + ".vocab_size", static_cast<uint32_t>(s.vocab));
  if (s.yarn_factor > 1.0f) {
    w.set_string(a + ".rope.scaling.type", "yarn");
    w.set_f32(a + ".rope.scaling.factor", s.yarn_factor);
    w.set_u32(a + ".rope.scaling.original_context_length", static_cast<uint32_t>(s.yarn_original_ctx));
    w.set_f32(a + ".rope.scaling.yarn_beta_fast", s.yarn_beta_fast);
    w.set_f32(a + ".rope.scaling.yarn_beta_slow", s.yarn_beta_slow);
  }
}

void llama_family_gguf_keys(const ModelShape& s, GgufWriter& w) { common_gguf_keys(s, s.head_dim(), w); }

Result<ModelSpec> build_llama_family(const ModelShape& s, uint64_t seed) {
  if (s.arch != "llama" && s.arch != "qwen2") return unsupported("architecture '{}' is not llama or qwen2", s.arch);
  CAI_TRY(check_llama_shape(s));
  const bool qwen2 = s.arch == "qwen2";
  const int64_t hd = s.head_dim();
  const int64_t q_dim = s.n_heads * hd;
  const int64_t kv_dim = s.n_kv_heads * hd;
  const int64_t permute = qwen2 ? 0 : hd;

  ModelSpec m;
  m.shape = s;
  m.seed = seed;
  m.tokenizer_pre = qwen2 ? "qwen2" : "llama-bpe";
  m.add_bos = !qwen2;
  add(m, seed, "model.embed_tokens.weight", "token_embd.weight", {s.vocab, s.hidden}, Init::kNormal,
      s.tied ? GgufRole::kOutput : GgufRole::kMatrix);
  for (int64_t i = 0; i < s.n_layers; ++i) {
    const std::string L = fmt::format("model.layers.{}.", i);
    const std::string B = fmt::format("blk.{}.", i);
    add(m, seed, L + "input_layernorm.weight", B + "attn_norm.weight", {s.hidden}, Init::kNormWeight, GgufRole::kF32);
    add(m, seed, L + "self_attn.q_proj.weight", B + "attn_q.weight", {q_dim, s.hidden}, Init::kNormal,
        GgufRole::kMatrix, permute);
    add(m, seed, L + "self_attn.k_proj.weight", B + "attn_k.weight", {kv_dim, s.hidden}, Init::kNormal,
        GgufRole::kMatrix, permute);
    add(m, seed, L + "self_attn.v_proj.weight", B + "attn_v.weight", {kv_dim, s.hidden}, Init::kNormal,
        GgufRole::kMatrix);
    if (qwen2) {
      add(m, seed, L + "self_attn.q_proj.bias", B + "attn_q.bias", {q_dim}, Init::kNormal, GgufRole::kF32);
      add(m, seed, L + "self_attn.k_proj.bias", B + "attn_k.bias", {kv_dim}, Init::kNormal, GgufRole::kF32);
      add(m, seed, L + "self_attn.v_proj.bias", B + "attn_v.bias", {kv_dim}, Init::kNormal, GgufRole::kF32);
    }
    add(m, seed, L + "self_attn.o_proj.weight", B + "attn_output.weight", {s.hidden, q_dim}, Init::kNormal,
        GgufRole::kMatrix);
    add(m, seed, L + "post_attention_layernorm.weight", B + "ffn_norm.weight", {s.hidden}, Init::kNormWeight,
        GgufRole::kF32);
    add(m, seed, L + "mlp.gate_proj.weight", B + "ffn_gate.weight", {s.ffn, s.hidden}, Init::kNormal,
        GgufRole::kMatrix);
    add(m, seed, L + "mlp.up_proj.weight", B + "ffn_up.weight", {s.ffn, s.hidden}, Init::kNormal, GgufRole::kMatrix);
    add(m, seed, L + "mlp.down_proj.weight", B + "ffn_down.weight", {s.hidden, s.ffn}, Init::kNormal,
        GgufRole::kMatrix);
  }
  add(m, seed, "model.norm.weight", "output_norm.weight", {s.hidden}, Init::kNormWeight, GgufRole::kF32);
  if (!s.tied) {
    add(m, seed, "lm_head.weight", "output.weight", {s.vocab, s.hidden}, Init::kNormal, GgufRole::kOutput);
  }
  m.gguf_metadata = [s](GgufWriter& w) { llama_family_gguf_keys(s, w); };
  m.hf_config = llama_hf_config(s);
  return m;
}

}  // namespace cai::mkmodel
