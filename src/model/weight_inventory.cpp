// weight_inventory: the shapes AttentionGqa / AttentionMla / DenseMlp / MoeFfn / DecoderModel load, per layer.
#include "model/weight_inventory.h"

namespace cai {

int64_t WeightEntry::n_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

using Shape = std::vector<int64_t>;

struct Builder {
  std::vector<WeightEntry>& out;
  int layer;
  void add(const std::string& suffix, Shape shape, WeightKind kind) {
    const std::string name = layer < 0 ? suffix : "blk." + std::to_string(layer) + "." + suffix;
    out.push_back({name, std::move(shape), kind, layer});
  }
};

void add_gqa(Builder& b, const ModelConfig& c) {
  const int64_t hidden = c.hidden_size, q = int64_t{c.num_attention_heads} * c.head_dim,
                kv = int64_t{c.num_key_value_heads} * c.head_dim;
  b.add("attn_q.weight", {q, hidden}, WeightKind::kLinear);
  b.add("attn_k.weight", {kv, hidden}, WeightKind::kLinear);
  b.add("attn_v.weight", {kv, hidden}, WeightKind::kLinear);
  b.add("attn_output.weight", {hidden, q}, WeightKind::kLinear);
  if (c.attention_bias) {
    b.add("attn_q.bias", {q}, WeightKind::kVector);
    b.add("attn_k.bias", {kv}, WeightKind::kVector);
    b.add("attn_v.bias", {kv}, WeightKind::kVector);
  }
}

void add_mla(Builder& b, const ModelConfig& c) {
  const int64_t hidden = c.hidden_size, nh = c.num_attention_heads, lora = c.kv_lora_rank;
  const int64_t qk = c.qk_nope_head_dim + c.qk_rope_head_dim;
  if (c.q_lora_rank > 0) {
    b.add("attn_q_a.weight", {c.q_lora_rank, hidden}, WeightKind::kLinear);
    b.add("attn_q_a_norm.weight", {c.q_lora_rank}, WeightKind::kVector);
    b.add("attn_q_b.weight", {nh * qk, c.q_lora_rank}, WeightKind::kLinear);
  } else {
    b.add("attn_q.weight", {nh * qk, hidden}, WeightKind::kLinear);
  }
  b.add("attn_kv_a_mqa.weight", {lora + c.qk_rope_head_dim, hidden}, WeightKind::kLinear);
  b.add("attn_kv_a_norm.weight", {lora}, WeightKind::kVector);
  b.add("attn_kv_b.weight", {nh * (c.qk_nope_head_dim + c.v_head_dim), lora}, WeightKind::kLinear);
  b.add("attn_output.weight", {hidden, nh * c.v_head_dim}, WeightKind::kLinear);
}

void add_mlp(Builder& b, const std::string& tag, int64_t hidden, int64_t ffn) {
  b.add("ffn_gate" + tag + ".weight", {ffn, hidden}, WeightKind::kLinear);
  b.add("ffn_up" + tag + ".weight", {ffn, hidden}, WeightKind::kLinear);
  b.add("ffn_down" + tag + ".weight", {hidden, ffn}, WeightKind::kLinear);
}

void add_moe(Builder& b, const ModelConfig& c) {
  const int64_t hidden = c.hidden_size, e = c.n_routed_experts, ffn = c.moe_intermediate_size;
  b.add("ffn_gate_inp.weight", {e, hidden}, WeightKind::kRouter);
  if (c.scoring_func == "sigmoid") b.add("exp_probs_b.bias", {e}, WeightKind::kF32Vector);  // V3/R1 only
  b.add("ffn_gate_exps.weight", {e, ffn, hidden}, WeightKind::kLinear);
  b.add("ffn_up_exps.weight", {e, ffn, hidden}, WeightKind::kLinear);
  b.add("ffn_down_exps.weight", {e, hidden, ffn}, WeightKind::kLinear);
  if (c.n_shared_experts > 0) add_mlp(b, "_shexp", hidden, ffn * c.n_shared_experts);
}

}  // namespace

std::vector<WeightEntry> weight_inventory(const ModelConfig& c) {
  std::vector<WeightEntry> out;
  const int64_t hidden = c.hidden_size;
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    Builder b{out, l};
    b.add("attn_norm.weight", {hidden}, WeightKind::kVector);
    c.is_mla() ? add_mla(b, c) : add_gqa(b, c);
    b.add("ffn_norm.weight", {hidden}, WeightKind::kVector);
    if (c.n_routed_experts == 0 || l < c.first_k_dense_replace) {
      add_mlp(b, "", hidden, c.intermediate_size);
    } else {
      add_moe(b, c);
    }
  }
  Builder g{out, -1};
  g.add("token_embd.weight", {c.vocab_size, hidden}, WeightKind::kEmbedding);
  g.add("output_norm.weight", {hidden}, WeightKind::kVector);
  if (!c.tie_word_embeddings) g.add("output.weight", {c.vocab_size, hidden}, WeightKind::kEmbedding);
  return out;
}

}  // namespace cai
