// ModelSpec: a random-weight model described independently of any file format (weights, GGUF view, configs).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "writers/gguf_writer.h"

namespace cai::mkmodel {

// DeepSeek V2/V3 multi-head latent attention and mixture of experts (HF config.json names in comments).
struct MlaMoeShape {
  int64_t q_lora_rank = 0;             // q_lora_rank (0 = null: q_proj, as in V2-Lite)
  int64_t kv_lora_rank = 0;            // kv_lora_rank
  int64_t qk_nope_head_dim = 0;        // qk_nope_head_dim
  int64_t qk_rope_head_dim = 0;        // qk_rope_head_dim
  int64_t v_head_dim = 0;              // v_head_dim
  int64_t first_k_dense_replace = 0;   // first_k_dense_replace (dense layers use ModelShape::ffn)
  int64_t n_routed_experts = 0;        // n_routed_experts
  int64_t moe_ffn = 0;                 // moe_intermediate_size
  int64_t n_shared_experts = 0;        // n_shared_experts
  int64_t top_k = 0;                   // num_experts_per_tok
  int64_t n_group = 1;                 // n_group
  int64_t topk_group = 1;              // topk_group
  bool sigmoid = false;                // scoring_func sigmoid + e_score_correction_bias (V3), else softmax (V2)
  bool norm_topk_prob = false;         // norm_topk_prob
  float routed_scaling_factor = 1.0f;  // routed_scaling_factor
};

// Hyper-parameters of a decoder-only transformer, HF names in comments.
struct ModelShape {
  std::string arch = "qwen2";  // GGUF general.architecture
  int64_t hidden = 0;          // hidden_size
  int64_t n_layers = 0;        // num_hidden_layers
  int64_t n_mtp_layers = 0;    // num_nextn_predict_layers whose modules the converted checkpoint holds
  int64_t n_heads = 0;         // num_attention_heads
  int64_t n_kv_heads = 0;      // num_key_value_heads
  int64_t ffn = 0;             // intermediate_size
  int64_t vocab = 0;           // vocab_size
  int64_t ctx = 0;             // max_position_embeddings
  bool tied = true;            // tie_word_embeddings
  float rope_theta = 10000.0f;
  float rms_eps = 1e-6f;
  // rope_scaling type yarn (factor 0 = no scaling); mscale / mscale_all_dim only matter for DeepSeek.
  float yarn_factor = 0.0f;
  int64_t yarn_original_ctx = 0;  // original_max_position_embeddings
  float yarn_beta_fast = 32.0f;
  float yarn_beta_slow = 1.0f;
  float yarn_mscale = 1.0f;
  float yarn_mscale_all_dim = 0.0f;
  MlaMoeShape mla;  // deepseek2 only
  int64_t head_dim() const { return n_heads > 0 ? hidden / n_heads : 0; }
};

enum class Init {
  kNormal,      // N(0, 0.02²)-like
  kNormWeight,  // 1 + N(0, 0.02²)-like (RMSNorm gains)
};

// How the HF emitter picks a weight's type from the requested one.
enum class HfRole {
  kProjection,  // a linear layer's weight: the requested type; FP8 = F8_E4M3 + `<name>_scale_inv` block scales
  kPlain,       // embeddings, lm_head, norms, router: the requested type; BF16 when FP8 is requested
  kF32,         // e_score_correction_bias: always F32
};

// A weight as the Hugging Face checkpoint stores it. Its values are a pure function of (seed, name, element index),
// so any file layout (permuted, stacked, split, transposed) can rebuild any element without holding the tensor.
// Values that replace some of a weight's random ones: row → (column, value) pairs.
using RowOverrides = std::map<int64_t, std::vector<std::pair<int64_t, float>>>;

struct WeightSpec {
  std::string name;            // HF name, e.g. "model.layers.0.self_attn.q_proj.weight"
  std::vector<int64_t> shape;  // PyTorch order
  Init init = Init::kNormal;
  HfRole hf_role = HfRole::kPlain;
  std::shared_ptr<const RowOverrides> overrides;  // null: every value random
};

// How the GGUF emitter picks a tensor's type from the requested one.
enum class GgufRole {
  kMatrix,  // the requested type (falls back to Q8_0/F16 when the row length does not fit its block)
  kOutput,  // the logits matrix (output.weight, or token_embd when tied): Q6_K when a 4/5-bit type is requested
  kF32,     // norms, biases: always F32
};

using RowMaker = std::function<void(int64_t row, float* dst)>;  // writes one row (shape.back() floats)

struct GgufTensorSpec {
  std::string name;            // GGUF name, e.g. "blk.0.attn_q.weight"
  std::vector<int64_t> shape;  // PyTorch order (the writer stores ne reversed)
  GgufRole role = GgufRole::kMatrix;
  RowMaker make_row;
};

struct ModelSpec {
  ModelShape shape;
  uint64_t seed = 0;                         // weight values: WeightValues(weight, seed)
  std::vector<WeightSpec> weights;           // HF checkpoint, in file order
  std::vector<GgufTensorSpec> gguf_tensors;  // GGUF file, in file order
  nlohmann::json hf_config;                  // config.json without torch_dtype and token ids (the emitter adds them)
  std::function<void(GgufWriter&)> gguf_metadata;  // general.architecture and the <arch>.* keys
  std::string tokenizer_pre;                       // tokenizer.ggml.pre, e.g. "qwen2"
  bool add_bos = false;                            // tokenizer.ggml.add_bos_token
};

// Deterministic values of a weight (counter-based: no state, any element in any order, any thread).
class WeightValues {
 public:
  WeightValues(const WeightSpec& w, uint64_t seed);
  float at(int64_t index) const;
  void row(int64_t r, float* dst) const;  // elements [r·cols, (r+1)·cols), overrides applied
  int64_t cols() const { return cols_; }

 private:
  uint64_t key_;
  Init init_;
  int64_t cols_;
  std::shared_ptr<const RowOverrides> overrides_;
};

// Builders, one per architecture file. Each fills weights, gguf_tensors, hf_config and gguf_metadata.
Result<ModelSpec> build_llama_family(const ModelShape& shape, uint64_t seed);  // "llama" and "qwen2"
Result<ModelSpec> build_deepseek2(const ModelShape& shape, uint64_t seed);     // "deepseek2" (HF deepseek_v3)

// Makes the model follow a token chain (token_chain.cpp): for each (from, to) link, a model that reads `from` writes
// `to` next, greedily and with near certainty, whatever came before. Needs untied embeddings and at most hidden_size
// links, each `from` once.
Status add_token_chain(ModelSpec& m, const std::vector<std::pair<int64_t, int64_t>>& links);

// GGUF metadata from a shape; the random builders and the HF converter share them
// (docs/design/formats.md#gguf-metadata-keys). Keys every architecture has (<arch>.context_length ... vocab_size) plus
// YaRN keys when yarn_factor > 1.
void common_gguf_keys(const ModelShape& s, int64_t rope_dims, GgufWriter& w);
void llama_family_gguf_keys(const ModelShape& s, GgufWriter& w);
void deepseek2_gguf_keys(const ModelShape& s, GgufWriter& w);
// Mainline llama.cpp's MLA tensors (its kv_b split, docs/design/formats.md#converter-transformations): kv_b_proj
// [n_head·(nope+v), kv_lora], given row by row by kv_b_row, becomes attn_k_b [n_head, kv_lora, nope] (each head's
// k_nope rows, transposed) and attn_v_b [n_head, v, kv_lora] (each head's v rows), appended to `out` under the prefix
// `block` ("blk.N.").
void add_kv_b_split(const ModelShape& s, const std::string& block, RowMaker kv_b_row, std::vector<GgufTensorSpec>& out);
// GGUF row r of a llama q/k weight (or bias) holds HF row llama_permuted_row(r, head_dim)
// (docs/design/formats.md#converter-transformations).
int64_t llama_permuted_row(int64_t r, int64_t head_dim);

}  // namespace cai::mkmodel
