// Llama and Qwen2 (the R1 distills): pre-norm decoder blocks of GQA attention and a SwiGLU MLP.
// Qwen2 differs only by q/k/v biases and NeoX RoPE, both carried by ModelConfig.
#include <vector>

#include "model/arch_registry.h"
#include "model/layers/attention_gqa.h"
#include "model/layers/mlp.h"
#include "model/workspace.h"
#include "ops/ops.h"

namespace cai {

namespace {

struct LlamaBlock {
  TensorView attn_norm, ffn_norm;  // [hidden] F32
  AttentionGqa attn;
  DenseMlp mlp;
};

class LlamaModel final : public Model {
 public:
  LlamaModel(const ModelConfig& cfg, WeightStore weights, hal::Device& device)
      : cfg_(cfg), weights_(std::move(weights)), device_(&device), ws_(device) {}

  Status load() {
    const int64_t hidden = cfg_.hidden_size, vocab = cfg_.vocab_size;
    CAI_ASSIGN_OR_RETURN(tok_embd_, weights_.get("token_embd.weight", {vocab, hidden}));
    CAI_ASSIGN_OR_RETURN(out_norm_, weights_.get_f32("output_norm.weight", {hidden}));
    if (weights_.has("output.weight")) {
      CAI_ASSIGN_OR_RETURN(output_, weights_.get("output.weight", {vocab, hidden}));
    } else {
      output_ = tok_embd_;  // tied embeddings
    }
    for (int l = 0; l < cfg_.num_hidden_layers; ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      CAI_ASSIGN_OR_RETURN(TensorView an, weights_.get_f32(p + "attn_norm.weight", {hidden}));
      CAI_ASSIGN_OR_RETURN(TensorView fn, weights_.get_f32(p + "ffn_norm.weight", {hidden}));
      CAI_ASSIGN_OR_RETURN(AttentionGqa attn, AttentionGqa::load(weights_, cfg_, l));
      CAI_ASSIGN_OR_RETURN(DenseMlp mlp, DenseMlp::load(weights_, p, ".weight", hidden, cfg_.intermediate_size));
      blocks_.push_back({an, fn, std::move(attn), std::move(mlp)});
    }
    return {};
  }

  const ModelConfig& config() const override { return cfg_; }
  hal::Device& device() const override { return *device_; }
  size_t weight_bytes() const override { return weights_.total_bytes(); }
  size_t weight_bytes_per_token() const override {
    return weights_.total_bytes() - (output_.data == tok_embd_.data ? 0 : tok_embd_.n_bytes());
  }
  KvSpec kv_spec() const override {
    const int width = cfg_.num_key_value_heads * cfg_.head_dim;
    return {cfg_.num_hidden_layers, width, width, DType::kF32};
  }

  Status forward(const StepBatch& batch, KvCache& kv, float* logits) override {
    hal::Device& d = *device_;
    const int64_t n = static_cast<int64_t>(batch.tokens.size()), hidden = cfg_.hidden_size;
    const int64_t m = static_cast<int64_t>(batch.logit_rows.size());
    if (n == 0) return invalid_argument("forward: empty batch");
    CAI_ASSIGN_OR_RETURN(TensorView x, ws_.f32("x", {n, hidden}));
    CAI_ASSIGN_OR_RETURN(TensorView h, ws_.f32("h", {n, hidden}));
    CAI_ASSIGN_OR_RETURN(TensorView y, ws_.f32("y", {n, hidden}));
    CAI_TRY(ops::embed(d, tok_embd_, batch.tokens, x));
    for (const LlamaBlock& b : blocks_) {
      CAI_TRY(ops::rms_norm(d, x, b.attn_norm, cfg_.rms_norm_eps, h));
      CAI_TRY(b.attn.forward(d, ws_, batch, h, kv, y));
      CAI_TRY(ops::add(d, x, y, x));
      CAI_TRY(ops::rms_norm(d, x, b.ffn_norm, cfg_.rms_norm_eps, h));
      CAI_TRY(b.mlp.forward(d, ws_, h, y));
      CAI_TRY(ops::add(d, x, y, x));
    }
    if (m == 0) return {};
    CAI_ASSIGN_OR_RETURN(TensorView sel, ws_.f32("sel", {m, hidden}));
    CAI_ASSIGN_OR_RETURN(TensorView seln, ws_.f32("sel_norm", {m, hidden}));
    CAI_ASSIGN_OR_RETURN(TensorView out, ws_.f32("logits", {m, static_cast<int64_t>(cfg_.vocab_size)}));
    CAI_TRY(ops::embed(d, x, batch.logit_rows, sel));  // gather the rows that need logits
    CAI_TRY(ops::rms_norm(d, sel, out_norm_, cfg_.rms_norm_eps, seln));
    CAI_TRY(ops::dense_gemm(d, output_, seln, nullptr, out));
    return d.default_stream().copy_to_host(logits, out.data, out.n_bytes());
  }

 private:
  ModelConfig cfg_;
  WeightStore weights_;
  hal::Device* device_;
  Workspace ws_;
  TensorView tok_embd_, out_norm_, output_;  // [vocab, hidden], [hidden], [vocab, hidden]
  std::vector<LlamaBlock> blocks_;
};

}  // namespace

Result<std::unique_ptr<Model>> make_llama_model(const ModelConfig& cfg, WeightStore weights, hal::Device& device) {
  auto model = std::make_unique<LlamaModel>(cfg, std::move(weights), device);
  CAI_TRY(model->load());
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace cai
