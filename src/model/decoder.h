// DecoderModel: the pre-norm decoder every supported architecture shares: embed → blocks of
// (norm → attention → residual, norm → FFN → residual) → final norm → LM head. Architectures choose the layers.
// Each block runs on the device its weights were placed on (WeightPlacement: pipeline stages, routed experts on
// another device); the residual stream moves to the next stage's device at each stage boundary.
#pragma once

#include <variant>
#include <vector>

#include "model/layers/attention_gqa.h"
#include "model/layers/attention_mla.h"
#include "model/layers/mlp.h"
#include "model/layers/moe.h"
#include "model/model.h"
#include "model/device_group.h"
#include "model/workspace.h"

namespace cai {

struct DecoderBlock {
  hal::Device* device = nullptr;   // where the block's attention, norms and router run
  TensorView attn_norm, ffn_norm;  // [hidden] F32
  std::variant<AttentionGqa, AttentionMla> attn;
  std::variant<DenseMlp, MoeFfn> ffn;
};

class DecoderModel final : public Model {
 public:
  // The devices are those of weights.placement().
  static Result<std::unique_ptr<DecoderModel>> create(const ModelConfig& cfg, WeightStore weights,
                                                      const KvSpec& kv_spec);

  // Embeddings, final norm and LM head (tied to the embeddings when output.weight is absent).
  Status load_embeddings_and_head();
  // Block norms of layer l (attn_norm / ffn_norm) and the given attention + FFN.
  Status add_block(int layer, std::variant<AttentionGqa, AttentionMla> attn, std::variant<DenseMlp, MoeFfn> ffn);
  WeightStore& weights() { return weights_; }

  const ModelConfig& config() const override { return cfg_; }
  hal::Device& device() const override { return group_.primary(); }
  std::vector<hal::Device*> devices() const override { return group_.devices(); }
  std::vector<hal::Device*> kv_devices() const override { return weights_.placement().layers; }
  const hal::Communicator* communicator() const override { return group_.communicator(); }
  KvSpec kv_spec() const override { return kv_spec_; }
  size_t weight_bytes() const override { return weights_.total_bytes(); }
  size_t weight_bytes_on(const hal::Device& device) const override { return weights_.bytes_on(device); }
  size_t weight_bytes_per_token() const override;
  size_t prewarm_experts() const override { return weights_.prewarm("_exps."); }
  Status lock_weights() const override { return weights_.lock_in_memory(); }
  Status forward(const StepBatch& batch, KvCache& kv, float* logits) override;

 private:
  DecoderModel(const ModelConfig& cfg, WeightStore weights, const KvSpec& kv_spec, DeviceGroup group);
  // Checks the batch on the host and uploads its integer metadata to each device that runs attention, in one copy
  // per device; step_[rank] is the group rank's (devices that run no attention get none).
  Status upload_step(const StepBatch& batch, const KvCache& kv);
  // The step's metadata as uploaded to `d`.
  const StepTensors& step_on(const hal::Device& d) const;

  ModelConfig cfg_;
  WeightStore weights_;
  KvSpec kv_spec_;
  DeviceGroup group_;
  std::vector<StepTensors> step_;   // by group rank
  std::vector<int32_t> step_meta_;  // host staging of upload_step, reused across steps
  TensorView tok_embd_, out_norm_, output_;  // [vocab, hidden], [hidden], [vocab, hidden]
  std::vector<DecoderBlock> blocks_;
};

}  // namespace cai
