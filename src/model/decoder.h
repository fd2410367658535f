// DecoderModel: the pre-norm decoder every supported architecture shares: embed → blocks of
// (norm → attention → residual, norm → FFN → residual) → final norm → LM head. Architectures choose the layers.
#pragma once

#include <variant>
#include <vector>

#include "model/layers/attention_gqa.h"
#include "model/layers/attention_mla.h"
#include "model/layers/mlp.h"
#include "model/layers/moe.h"
#include "model/model.h"
#include "model/workspace.h"

namespace cai {

struct DecoderBlock {
  TensorView attn_norm, ffn_norm;  // [hidden] F32
  std::variant<AttentionGqa, AttentionMla> attn;
  std::variant<DenseMlp, MoeFfn> ffn;
};

class DecoderModel final : public Model {
 public:
  DecoderModel(const ModelConfig& cfg, WeightStore weights, hal::Device& device, const KvSpec& kv_spec);

  // Embeddings, final norm and LM head (tied to the embeddings when output.weight is absent).
  Status load_embeddings_and_head();
  // Block norms of layer l (attn_norm / ffn_norm) and the given attention + FFN.
  Status add_block(int layer, std::variant<AttentionGqa, AttentionMla> attn, std::variant<DenseMlp, MoeFfn> ffn);
  WeightStore& weights() { return weights_; }

  const ModelConfig& config() const override { return cfg_; }
  hal::Device& device() const override { return *device_; }
  KvSpec kv_spec() const override { return kv_spec_; }
  size_t weight_bytes() const override { return weights_.total_bytes(); }
  size_t weight_bytes_per_token() const override;
  size_t prewarm_experts() const override { return weights_.prewarm("_exps."); }
  Status lock_weights() const override { return weights_.lock_in_memory(); }
  Status forward(const StepBatch& batch, KvCache& kv, float* logits) override;

 private:
  // Checks the batch on the host and uploads its integer metadata to the device in one copy.
  Result<StepTensors> upload_step(const StepBatch& batch, const KvCache& kv);

  ModelConfig cfg_;
  WeightStore weights_;
  hal::Device* device_;
  KvSpec kv_spec_;
  Workspace ws_;
  std::vector<int32_t> step_meta_;  // host staging of upload_step, reused across steps
  TensorView tok_embd_, out_norm_, output_;  // [vocab, hidden], [hidden], [vocab, hidden]
  std::vector<DecoderBlock> blocks_;
};

}  // namespace cai
