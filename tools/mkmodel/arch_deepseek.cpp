// DeepSeek V2/V3 random models: HF deepseek_v3 weights, GGUF deepseek2 tensors in mainline llama.cpp's layout (experts
// stacked, kv_b split into attn_k_b / attn_v_b), configs.
#include <fmt/format.h>

#include <atomic>
#include <memory>

#include "model_spec.h"

namespace cai::mkmodel {
namespace {

Status check_deepseek_shape(const ModelShape& s) {
  const MlaMoeShape& d = s.mla;
  if (s.hidden <= 0 || s.n_layers <= 0 || s.n_heads <= 0 || s.ffn <= 0 || s.ctx <= 0 || d.kv_lora_rank <= 0 ||
      d.qk_nope_head_dim <= 0 || d.qk_rope_head_dim <= 0 || d.v_head_dim <= 0 || d.q_lora_rank < 0) {
    return invalid_argument("deepseek2: hidden, layers, heads, ffn, ctx, kv_lora and the head dims must be positive");
  }
  if (d.qk_rope_head_dim % 2 != 0) return invalid_argument("qk_rope_head_dim {} must be even", d.qk_rope_head_dim);
  if (d.first_k_dense_replace < s.n_layers) {
    if (d.n_routed_experts <= 0 || d.moe_ffn <= 0 || d.top_k <= 0 || d.top_k > d.n_routed_experts) {
      return invalid_argument("deepseek2: MoE layers need experts > 0, moe_ffn > 0 and 0 < top-k <= experts");
    }
    if (d.n_group <= 0 || d.n_routed_experts % d.n_group != 0 || d.topk_group <= 0 || d.topk_group > d.n_group ||
        d.top_k > d.topk_group * (d.n_routed_experts / d.n_group)) {
      return invalid_argument("deepseek2: {} experts in {} groups with top-{} groups cannot give top-{}",
                              d.n_routed_experts, d.n_group, d.topk_group, d.top_k);
    }
  }
  return Status::ok_status();
}

nlohmann::json deepseek_hf_config(const ModelShape& s) {
  const MlaMoeShape& d = s.mla;
  nlohmann::json rope_scaling = nullptr;
  if (s.yarn_factor > 1.0f) {
    rope_scaling = {{"beta_fast", s.yarn_beta_fast},
                    {"beta_slow", s.yarn_beta_slow},
                    {"factor", s.yarn_factor},
                    {"mscale", s.yarn_mscale},
                    {"mscale_all_dim", s.yarn_mscale_all_dim},
                    {"original_max_position_embeddings", s.yarn_original_ctx},
                    {"type", "yarn"}};
  }
  return {
      {"architectures", {"DeepseekV3ForCausalLM"}},
      {"model_type", "deepseek_v3"},
      {"attention_bias", false},
      {"attention_dropout", 0.0},
      {"first_k_dense_replace", d.first_k_dense_replace},
      {"hidden_act", "silu"},
      {"hidden_size", s.hidden},
      {"initializer_range", 0.02},
      {"intermediate_size", s.ffn},
      {"kv_lora_rank", d.kv_lora_rank},
      {"max_position_embeddings", s.ctx},
      {"moe_intermediate_size", d.moe_ffn},
      {"moe_layer_freq", 1},
      {"n_group", d.n_group},
      {"n_routed_experts", d.n_routed_experts},
      {"n_shared_experts", d.n_shared_experts},
      {"norm_topk_prob", d.norm_topk_prob},
      {"num_attention_heads", s.n_heads},
      {"num_experts_per_tok", d.top_k},
      {"num_hidden_layers", s.n_layers},
      {"num_key_value_heads", s.n_heads},
      {"num_nextn_predict_layers", s.n_mtp_layers},
      {"q_lora_rank", d.q_lora_rank > 0 ? nlohmann::json(d.q_lora_rank) : nlohmann::json(nullptr)},
      {"qk_nope_head_dim", d.qk_nope_head_dim},
      {"qk_rope_head_dim", d.qk_rope_head_dim},
      {"rms_norm_eps", s.rms_eps},
      {"rope_scaling", rope_scaling},
      {"rope_theta", s.rope_theta},
      {"routed_scaling_factor", d.routed_scaling_factor},
      {"scoring_func", d.sigmoid ? "sigmoid" : "softmax"},
      {"tie_word_embeddings", s.tied},
      {"topk_group", d.topk_group},
      {"topk_method", d.sigmoid       ? "noaux_tc"
                      : d.n_group > 1 ? "group_limited_greedy"
                                      : "greedy"},
      {"use_cache", true},
      {"v_head_dim", d.v_head_dim},
      {"vocab_size", s.vocab},
  };
}

// Adds one HF weight and its GGUF counterpart (same shape, same rows).
void add(ModelSpec& m, std::string hf, std::string gguf, std::vector<int64_t> shape, Init init, GgufRole role,
         HfRole hf_role) {
  WeightSpec w{std::move(hf), shape, init, hf_role, nullptr};
  RowMaker make_row = [values = WeightValues(w, m.seed)](int64_t r, float* dst) { values.row(r, dst); };
  m.weights.push_back(std::move(w));
  m.gguf_tensors.push_back({std::move(gguf), std::move(shape), role, std::move(make_row)});
}

// Adds the HF weights mlp.experts.{e}.<proj>_proj [out, in] and the stacked GGUF ffn_<proj>_exps [n_expert, out, in]
// whose row r is row r % out of expert r / out.
void add_experts(ModelSpec& m, int64_t layer, const std::string& proj, int64_t n_expert, int64_t out, int64_t in) {
  auto values = std::make_shared<std::vector<WeightValues>>();
  for (int64_t e = 0; e < n_expert; ++e) {
    WeightSpec w{fmt::format("model.layers.{}.mlp.experts.{}.{}_proj.weight", layer, e, proj),
                 {out, in},
                 Init::kNormal,
                 HfRole::kProjection,
                 nullptr};
    values->emplace_back(w, m.seed);
    m.weights.push_back(std::move(w));
  }
  m.gguf_tensors.push_back({fmt::format("blk.{}.ffn_{}_exps.weight", layer, proj),
                            {n_expert, out, in},
                            GgufRole::kMatrix,
                            [values, out](int64_t r, float* dst) { (*values)[r / out].row(r % out, dst); }});
}

void add_attention(ModelSpec& m, const ModelShape& s, const std::string& L, const std::string& B) {
  const MlaMoeShape& d = s.mla;
  const int64_t qk = d.qk_nope_head_dim + d.qk_rope_head_dim;
  constexpr auto kMat = GgufRole::kMatrix;
  constexpr auto kProj = HfRole::kProjection;
  if (d.q_lora_rank > 0) {
    add(m, L + "self_attn.q_a_proj.weight", B + "attn_q_a.weight", {d.q_lora_rank, s.hidden}, Init::kNormal, kMat,
        kProj);
    add(m, L + "self_attn.q_a_layernorm.weight", B + "attn_q_a_norm.weight", {d.q_lora_rank}, Init::kNormWeight,
        GgufRole::kF32, HfRole::kPlain);
    add(m, L + "self_attn.q_b_proj.weight", B + "attn_q_b.weight", {s.n_heads * qk, d.q_lora_rank}, Init::kNormal, kMat,
        kProj);
  } else {
    add(m, L + "self_attn.q_proj.weight", B + "attn_q.weight", {s.n_heads * qk, s.hidden}, Init::kNormal, kMat, kProj);
  }
  add(m, L + "self_attn.kv_a_proj_with_mqa.weight", B + "attn_kv_a_mqa.weight",
      {d.kv_lora_rank + d.qk_rope_head_dim, s.hidden}, Init::kNormal, kMat, kProj);
  add(m, L + "self_attn.kv_a_layernorm.weight", B + "attn_kv_a_norm.weight", {d.kv_lora_rank}, Init::kNormWeight,
      GgufRole::kF32, HfRole::kPlain);
  WeightSpec kv_b{L + "self_attn.kv_b_proj.weight",
                  {s.n_heads * (d.qk_nope_head_dim + d.v_head_dim), d.kv_lora_rank},
                  Init::kNormal,
                  kProj,
                  nullptr};
  add_kv_b_split(
      s, B, [values = WeightValues(kv_b, m.seed)](int64_t r, float* dst) { values.row(r, dst); }, m.gguf_tensors);
  m.weights.push_back(std::move(kv_b));
  add(m, L + "self_attn.o_proj.weight", B + "attn_output.weight", {s.hidden, s.n_heads * d.v_head_dim}, Init::kNormal,
      kMat, kProj);
}

void add_ffn(ModelSpec& m, const ModelShape& s, int64_t layer, const std::string& L, const std::string& B) {
  const MlaMoeShape& d = s.mla;
  constexpr auto kMat = GgufRole::kMatrix;
  constexpr auto kProj = HfRole::kProjection;
  if (layer < d.first_k_dense_replace) {
    add(m, L + "mlp.gate_proj.weight", B + "ffn_gate.weight", {s.ffn, s.hidden}, Init::kNormal, kMat, kProj);
    add(m, L + "mlp.up_proj.weight", B + "ffn_up.weight", {s.ffn, s.hidden}, Init::kNormal, kMat, kProj);
    add(m, L + "mlp.down_proj.weight", B + "ffn_down.weight", {s.hidden, s.ffn}, Init::kNormal, kMat, kProj);
    return;
  }
  // The router is a random projection of the normed hidden state, so each token picks its own experts; the
  // correction bias (N(0, 0.02²)-like) is small against the spread of the scores and only nudges the choice.
  add(m, L + "mlp.gate.weight", B + "ffn_gate_inp.weight", {d.n_routed_experts, s.hidden}, Init::kNormal,
      GgufRole::kF32, HfRole::kPlain);
  if (d.sigmoid) {
    add(m, L + "mlp.gate.e_score_correction_bias", B + "exp_probs_b.bias", {d.n_routed_experts}, Init::kNormal,
        GgufRole::kF32, HfRole::kF32);
  }
  add_experts(m, layer, "gate", d.n_routed_experts, d.moe_ffn, s.hidden);
  add_experts(m, layer, "up", d.n_routed_experts, d.moe_ffn, s.hidden);
  add_experts(m, layer, "down", d.n_routed_experts, s.hidden, d.moe_ffn);
  if (d.n_shared_experts > 0) {
    const int64_t sh = d.n_shared_experts * d.moe_ffn;
    add(m, L + "mlp.shared_experts.gate_proj.weight", B + "ffn_gate_shexp.weight", {sh, s.hidden}, Init::kNormal, kMat,
        kProj);
    add(m, L + "mlp.shared_experts.up_proj.weight", B + "ffn_up_shexp.weight", {sh, s.hidden}, Init::kNormal, kMat,
        kProj);
    add(m, L + "mlp.shared_experts.down_proj.weight", B + "ffn_down_shexp.weight", {s.hidden, sh}, Init::kNormal, kMat,
        kProj);
  }
}

// The k_nope rows of one kv_b head, as the thread building attn_k_b rows last read them.
struct KNopeRows {
  uint64_t split = 0;  // which add_kv_b_split call
  int64_t head = -1;
  std::vector<float> rows;  // [nope, kv_lora]
};

}  // namespace

void add_kv_b_split(const ModelShape& s, const std::string& block, RowMaker kv_b_row,
                    std::vector<GgufTensorSpec>& out) {
  const int64_t nope = s.mla.qk_nope_head_dim, v = s.mla.v_head_dim, lora = s.mla.kv_lora_rank, per_head = nope + v;
  auto kv_b = std::make_shared<const RowMaker>(std::move(kv_b_row));
  static std::atomic<uint64_t> n_splits{0};
  const uint64_t split = ++n_splits;
  // Row (h, c) of k_b is column c of head h's k_nope rows. The emitter gives each thread runs of consecutive rows, so
  // a thread keeps the head it read last and reads each head about once.
  out.push_back({block + "attn_k_b.weight",
                 {s.n_heads, lora, nope},
                 GgufRole::kMatrix,
                 [kv_b, split, nope, lora, per_head](int64_t r, float* dst) {
                   thread_local KNopeRows cache;
                   const int64_t h = r / lora, c = r % lora;
                   if (cache.split != split || cache.head != h) {
                     cache.rows.resize(static_cast<size_t>(nope * lora));
                     for (int64_t i = 0; i < nope; ++i) (*kv_b)(h * per_head + i, cache.rows.data() + i * lora);
                     cache.split = split;
                     cache.head = h;
                   }
                   for (int64_t i = 0; i < nope; ++i) dst[i] = cache.rows[static_cast<size_t>(i * lora + c)];
                 }});
  out.push_back({block + "attn_v_b.weight",
                 {s.n_heads, v, lora},
                 GgufRole::kMatrix,
                 [kv_b, nope, v, per_head](int64_t r, float* dst) { (*kv_b)(r / v * per_head + nope + r % v, dst); }});
}

void deepseek2_gguf_keys(const ModelShape& s, GgufWriter& w) {
  const MlaMoeShape& d = s.mla;
  const std::string& a = s.arch;
  ModelShape mqa = s;
  mqa.n_kv_heads = 1;  // mainline llama.cpp runs MLA as MQA over the latent: one KV head of kv_lora + rope
  common_gguf_keys(mqa, d.qk_rope_head_dim, w);
  w.set_u32(a + ".attention.key_length", static_cast<uint32_t>(d.kv_lora_rank + d.qk_rope_head_dim));
  w.set_u32(a + ".attention.value_length", static_cast<uint32_t>(d.kv_lora_rank));
  w.set_u32(a + ".attention.key_length_mla", static_cast<uint32_t>(d.qk_nope_head_dim + d.qk_rope_head_dim));
  w.set_u32(a + ".attention.value_length_mla", static_cast<uint32_t>(d.v_head_dim));
  w.set_u32(a + ".leading_dense_block_count", static_cast<uint32_t>(d.first_k_dense_replace));
  if (s.n_mtp_layers > 0) w.set_u32(a + ".nextn_predict_layers", static_cast<uint32_t>(s.n_mtp_layers));
  if (d.q_lora_rank > 0) w.set_u32(a + ".attention.q_lora_rank", static_cast<uint32_t>(d.q_lora_rank));
  w.set_u32(a + ".attention.kv_lora_rank", static_cast<uint32_t>(d.kv_lora_rank));
  if (d.n_routed_experts > 0) {
    w.set_u32(a + ".expert_count", static_cast<uint32_t>(d.n_routed_experts));
    w.set_u32(a + ".expert_used_count", static_cast<uint32_t>(d.top_k));
    w.set_u32(a + ".expert_shared_count", static_cast<uint32_t>(d.n_shared_experts));
    w.set_u32(a + ".expert_feed_forward_length", static_cast<uint32_t>(d.moe_ffn));
    w.set_f32(a + ".expert_weights_scale", d.routed_scaling_factor);
    w.set_bool(a + ".expert_weights_norm", d.norm_topk_prob);
    w.set_u32(a + ".expert_gating_func", d.sigmoid ? 2u : 1u);
    w.set_u32(a + ".expert_group_count", static_cast<uint32_t>(d.n_group));
    w.set_u32(a + ".expert_group_used_count", static_cast<uint32_t>(d.topk_group));
  }
  if (s.yarn_factor > 1.0f) w.set_f32(a + ".rope.scaling.yarn_log_multiplier", 0.1f * s.yarn_mscale_all_dim);
}

// A multi-token-prediction module's own tensors besides its decoder block (the HF names R1 ships, GGUF nextn.*); its
// copies of the embedding and head are not written (CAI reads the main model's).
void add_mtp_inputs(ModelSpec& m, const ModelShape& s, const std::string& L, const std::string& B) {
  add(m, L + "enorm.weight", B + "nextn.enorm.weight", {s.hidden}, Init::kNormWeight, GgufRole::kF32, HfRole::kPlain);
  add(m, L + "hnorm.weight", B + "nextn.hnorm.weight", {s.hidden}, Init::kNormWeight, GgufRole::kF32, HfRole::kPlain);
  add(m, L + "eh_proj.weight", B + "nextn.eh_proj.weight", {s.hidden, 2 * s.hidden}, Init::kNormal, GgufRole::kMatrix,
      HfRole::kProjection);
  add(m, L + "shared_head.norm.weight", B + "nextn.shared_head_norm.weight", {s.hidden}, Init::kNormWeight,
      GgufRole::kF32, HfRole::kPlain);
}

Result<ModelSpec> build_deepseek2(const ModelShape& s, uint64_t seed) {
  if (s.arch != "deepseek2") return unsupported("architecture '{}' is not deepseek2", s.arch);
  CAI_TRY(check_deepseek_shape(s));
  ModelSpec m;
  m.shape = s;
  m.seed = seed;
  m.tokenizer_pre = "qwen2";  // the synthetic vocabulary's pre-tokenizer (see vocab.h)
  m.add_bos = true;
  add(m, "model.embed_tokens.weight", "token_embd.weight", {s.vocab, s.hidden}, Init::kNormal,
      s.tied ? GgufRole::kOutput : GgufRole::kMatrix, HfRole::kPlain);
  for (int64_t i = 0; i < s.n_layers + s.n_mtp_layers; ++i) {
    const std::string L = fmt::format("model.layers.{}.", i);
    const std::string B = fmt::format("blk.{}.", i);
    if (i >= s.n_layers) add_mtp_inputs(m, s, L, B);
    add(m, L + "input_layernorm.weight", B + "attn_norm.weight", {s.hidden}, Init::kNormWeight, GgufRole::kF32,
        HfRole::kPlain);
    add_attention(m, s, L, B);
    add(m, L + "post_attention_layernorm.weight", B + "ffn_norm.weight", {s.hidden}, Init::kNormWeight, GgufRole::kF32,
        HfRole::kPlain);
    add_ffn(m, s, i, L, B);
  }
  add(m, "model.norm.weight", "output_norm.weight", {s.hidden}, Init::kNormWeight, GgufRole::kF32, HfRole::kPlain);
  if (!s.tied) {
    add(m, "lm_head.weight", "output.weight", {s.vocab, s.hidden}, Init::kNormal, GgufRole::kOutput, HfRole::kPlain);
  }
  m.gguf_metadata = [s](GgufWriter& w) { deepseek2_gguf_keys(s, w); };
  m.hf_config = deepseek_hf_config(s);
  return m;
}

}  // namespace cai::mkmodel
