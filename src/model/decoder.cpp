// DecoderModel: loading of the shared parts and the forward pass over a StepBatch.
#include "model/decoder.h"

#include "core/profile.h"
#include "ops/ops.h"

namespace cai {

DecoderModel::DecoderModel(const ModelConfig& cfg, WeightStore weights, hal::Device& device, const KvSpec& kv_spec)
    : cfg_(cfg), weights_(std::move(weights)), device_(&device), kv_spec_(kv_spec), ws_(device) {}

Status DecoderModel::load_embeddings_and_head() {
  const int64_t hidden = cfg_.hidden_size, vocab = cfg_.vocab_size;
  CAI_ASSIGN_OR_RETURN(tok_embd_, weights_.get("token_embd.weight", {vocab, hidden}));
  CAI_ASSIGN_OR_RETURN(out_norm_, weights_.get_f32("output_norm.weight", {hidden}));
  if (weights_.has("output.weight")) {
    CAI_ASSIGN_OR_RETURN(output_, weights_.get("output.weight", {vocab, hidden}));
  } else {
    output_ = tok_embd_;  // tied embeddings
  }
  return {};
}

Status DecoderModel::add_block(int layer, std::variant<AttentionGqa, AttentionMla> attn, std::variant<DenseMlp, MoeFfn> ffn) {
  const std::string p = "blk." + std::to_string(layer) + ".";
  CAI_ASSIGN_OR_RETURN(TensorView an, weights_.get_f32(p + "attn_norm.weight", {cfg_.hidden_size}));
  CAI_ASSIGN_OR_RETURN(TensorView fn, weights_.get_f32(p + "ffn_norm.weight", {cfg_.hidden_size}));
  blocks_.push_back({an, fn, std::move(attn), std::move(ffn)});
  return {};
}

size_t DecoderModel::weight_bytes_per_token() const {
  size_t bytes = weights_.total_bytes() - (output_.data == tok_embd_.data ? 0 : tok_embd_.n_bytes());
  if (cfg_.n_routed_experts > 0) {  // one token reads only its top-k routed experts
    const double unread = 1.0 - static_cast<double>(cfg_.num_experts_per_tok) / cfg_.n_routed_experts;
    bytes -= static_cast<size_t>(unread * static_cast<double>(weights_.bytes_matching("_exps.")));
  }
  return bytes;
}

Status DecoderModel::forward(const StepBatch& batch, KvCache& kv, float* logits) {
  hal::Device& d = *device_;
  const int64_t n = static_cast<int64_t>(batch.tokens.size()), hidden = cfg_.hidden_size;
  const int64_t m = static_cast<int64_t>(batch.logit_rows.size());
  if (n == 0) return invalid_argument("forward: empty batch");
  CAI_ASSIGN_OR_RETURN(TensorView x, ws_.f32("x", {n, hidden}));
  CAI_ASSIGN_OR_RETURN(TensorView h, ws_.f32("h", {n, hidden}));
  CAI_ASSIGN_OR_RETURN(TensorView y, ws_.f32("y", {n, hidden}));
  {
    profile::Scope scope("embed");
    CAI_TRY(ops::embed(d, tok_embd_, batch.tokens, x));
  }
  for (const DecoderBlock& b : blocks_) {
    {
      profile::Scope scope("norm_residual");
      CAI_TRY(ops::rms_norm(d, x, b.attn_norm, cfg_.rms_norm_eps, h));
    }
    {
      profile::Scope scope("attention");
      CAI_TRY(std::visit([&](const auto& attn) { return attn.forward(d, ws_, batch, h, kv, y); }, b.attn));
    }
    {
      profile::Scope scope("norm_residual");
      CAI_TRY(ops::add(d, x, y, x));
      CAI_TRY(ops::rms_norm(d, x, b.ffn_norm, cfg_.rms_norm_eps, h));
    }
    CAI_TRY(std::visit([&](const auto& ffn) { return ffn.forward(d, ws_, h, y); }, b.ffn));  // profiled inside
    profile::Scope scope("norm_residual");
    CAI_TRY(ops::add(d, x, y, x));
  }
  if (m == 0) return {};
  profile::Scope scope("lm_head");
  CAI_ASSIGN_OR_RETURN(TensorView sel, ws_.f32("sel", {m, hidden}));
  CAI_ASSIGN_OR_RETURN(TensorView seln, ws_.f32("sel_norm", {m, hidden}));
  CAI_ASSIGN_OR_RETURN(TensorView out, ws_.f32("logits", {m, static_cast<int64_t>(cfg_.vocab_size)}));
  CAI_TRY(ops::embed(d, x, batch.logit_rows, sel));  // gather the rows that need logits
  CAI_TRY(ops::rms_norm(d, sel, out_norm_, cfg_.rms_norm_eps, seln));
  CAI_TRY(ops::dense_gemm(d, output_, seln, nullptr, out));
  return d.default_stream().copy_to_host(logits, out.data, out.n_bytes());
}

}  // namespace cai
