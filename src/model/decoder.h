// DecoderModel: the pre-norm decoder every supported architecture shares: embed → blocks of
// (norm → attention → residual, norm → FFN → residual) → final norm → LM head. Architectures choose the layers.
// Each block runs on the devices its weights were placed on (WeightPlacement): pipeline stages take consecutive
// layers, and the residual stream moves to the next stage at each boundary; within a stage of several tensor-parallel
// ranks each rank computes its heads and MLP columns from its own slices, and an all-reduce adds the ranks' partial
// outputs after attention and after the FFN; the head's vocabulary rows are split the same way.
#pragma once

#include <functional>
#include <variant>
#include <vector>

#include "model/device_group.h"
#include "model/layers/attention_gqa.h"
#include "model/layers/attention_mla.h"
#include "model/layers/mlp.h"
#include "model/layers/moe.h"
#include "model/model.h"
#include "model/workspace.h"

namespace cai {

// One layer's attention and FFN as a rank loads them.
struct DecoderLayers {
  std::variant<AttentionGqa, AttentionMla> attn;
  std::variant<DenseMlp, MoeFfn> ffn;
};
// Loads layer `layer` from a rank's weights with that rank's config (the whole model's on one rank; with tensor
// parallelism its share of the heads and MLP columns, tensor_parallel_config).
using LayerLoader = std::function<Result<DecoderLayers>(WeightStore& weights, const ModelConfig& cfg, int layer)>;

// cfg as one of `tp` tensor-parallel ranks sees it: its share of the attention heads (GQA: of the KV heads too; MLA
// keeps the whole latent), of the dense MLP's and (unless expert_parallel: whole experts) each expert's intermediate
// columns. Errors name what does not divide by tp (heads, KV heads, intermediate sizes, experts, vocabulary).
Result<ModelConfig> tensor_parallel_config(const ModelConfig& cfg, int tp, bool expert_parallel);

// One tensor-parallel rank of a block (the whole block with one rank).
struct BlockRank {
  hal::Device* device = nullptr;   // where this rank's attention, norms and router run
  TensorView attn_norm, ffn_norm;  // [hidden] F32
  std::variant<AttentionGqa, AttentionMla> attn;
  std::variant<DenseMlp, MoeFfn> ffn;
};

// One rank of the output head: the final norm and vocabulary rows [vocab_begin, vocab_begin + n_vocab).
struct HeadRank {
  hal::Device* device = nullptr;
  TensorView norm, output;  // [hidden] F32, [n_vocab, hidden]
  int64_t vocab_begin = 0, n_vocab = 0;
};

class DecoderModel final : public Model {
 public:
  // The model over weights.placement()'s devices: the embedding, every layer through `load_layer` (once per rank),
  // the final norm and the head.
  static Result<std::unique_ptr<Model>> build(const ModelConfig& cfg, WeightStore weights, DType kv_dtype,
                                              const LayerLoader& load_layer);

  // The model's tensors (with one rank a stage; tensor-parallel ranks hold theirs in stores of their own).
  const WeightStore& weights() const { return weights_; }
  const ModelConfig& config() const override { return cfg_; }
  hal::Device& device() const override { return *blocks_.front().front().device; }
  std::vector<hal::Device*> devices() const override { return group_.devices(); }
  std::vector<std::vector<KvShard>> kv_shards() const override { return kv_shards_; }
  const hal::Communicator* communicator() const override { return group_.communicator(); }
  KvSpec kv_spec() const override { return kv_spec_; }
  size_t weight_bytes() const override;
  size_t weight_bytes_on(const hal::Device& device) const override;
  size_t weight_bytes_per_token() const override;
  size_t prewarm_experts() const override;
  Status lock_weights() const override;
  Status forward(const StepBatch& batch, KvCache& kv, float* logits) override;

 private:
  DecoderModel(const ModelConfig& cfg, WeightStore weights, DeviceGroup group);
  // Every store that holds tensors: the model's, and each tensor-parallel rank's.
  std::vector<const WeightStore*> stores() const;
  Status load_one_rank(DType kv_dtype, const LayerLoader& load_layer);
  Status load_tensor_parallel(DType kv_dtype, const LayerLoader& load_layer);
  // Checks the batch on the host and uploads its integer metadata to each device of the group in one copy each.
  Status upload_step(const StepBatch& batch, const KvCache& kv);
  const StepTensors& step_on(const hal::Device& d) const;
  // The residual stream, one copy per rank, moved onto `ranks` where it is elsewhere (a stage boundary).
  Result<std::vector<TensorView>> residual_on(std::vector<TensorView> xs, const std::vector<hal::Device*>& ranks);
  Status run_block(const std::vector<BlockRank>& block, int layer, std::vector<TensorView>& xs, KvCache& kv);
  Status run_head(const StepBatch& batch, std::vector<TensorView> xs, float* logits);

  ModelConfig cfg_;
  WeightStore weights_;                   // the model's tensors, or (tensor parallel) the host bytes ranks slice
  std::vector<WeightStore> rank_stores_;  // tensor parallel: [stage · tp + rank]
  KvSpec kv_spec_;                        // a token's KV over all layers and ranks
  std::vector<std::vector<KvShard>> kv_shards_;
  DeviceGroup group_;
  std::vector<StepTensors> step_;   // by group rank
  std::vector<int32_t> step_meta_;  // host staging of upload_step, reused across steps
  std::vector<float> logits_part_;  // host staging of one head rank's logits (tensor parallel)
  hal::Device* embed_device_ = nullptr;
  TensorView tok_embd_;  // [vocab, hidden]
  std::vector<std::vector<BlockRank>> blocks_;  // [layer][rank]
  std::vector<HeadRank> head_;
};

}  // namespace cai
