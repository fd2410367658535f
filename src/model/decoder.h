// DecoderModel: the pre-norm decoder every supported architecture shares: embed → blocks of
// (norm → attention → residual, norm → FFN → residual) → final norm → LM head. Architectures choose the layers.
// Each block runs on the devices its weights were placed on (WeightPlacement): pipeline stages take consecutive
// layers, and the residual stream moves to the next stage at each boundary; within a stage of several tensor-parallel
// ranks each rank computes its heads and MLP columns from its own slices, and an all-reduce adds the ranks' partial
// outputs after attention and after the FFN; the head's vocabulary rows are split the same way. A DeepSeek model loaded
// with its multi-token-prediction module runs it too (decoder_mtp.cpp), on the head's device.
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

// "blk.<layer>." and a rank's block: the loaded layers and the block's norms from the same store.
std::string block_prefix(int layer);
Result<BlockRank> load_block_rank(WeightStore& w, const ModelConfig& cfg, int layer, int rank, hal::Device& device,
                                  const LayerLoader& load_layer);

class DecoderModel final : public Model, public MtpModule {
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
  Status forward(const StepBatch& batch, KvCache& kv, float* logits, float* hidden) override;
  MtpModule* mtp() override { return mtp_block_.empty() ? nullptr : this; }
  KvSpec mtp_kv_spec() const override;
  std::vector<std::vector<KvShard>> mtp_kv_shards() const override;
  Status forward_mtp(const StepBatch& batch, const float* hidden, KvCache& kv, float* logits,
                     float* block_out) override;

 private:
  DecoderModel(const ModelConfig& cfg, WeightStore weights, DeviceGroup group);
  // Every store that holds tensors: the model's, and each tensor-parallel rank's.
  std::vector<const WeightStore*> stores() const;
  Status load_one_rank(DType kv_dtype, const LayerLoader& load_layer);
  Status load_tensor_parallel(DType kv_dtype, const LayerLoader& load_layer);
  // The MTP module stored after the layers (layer cfg.num_hidden_layers), when the placement loads one.
  Status load_mtp(const LayerLoader& load_layer);  // on one device; load_tensor_parallel loads it per rank
  // The final norm of every row of the residual stream (on the head's ranks), read back to host `hidden`.
  Status read_final_hidden(const std::vector<TensorView>& xs, float* hidden);
  // One head rank's logits [m, h.n_vocab] (`out`, on a device of this process) read back into their columns of
  // `logits` [m, vocab]; with one head rank, all of them in one copy.
  Status read_head_logits(const HeadRank& h, const TensorView& out, int64_t m, float* logits);
  // Checks the batch on the host and uploads its integer metadata to each device of the group in one copy each.
  Status upload_step(const StepBatch& batch, const KvCache& kv);
  const StepTensors& step_on(const hal::Device& d) const;
  // The residual stream, one copy per rank, moved onto `ranks` where it is elsewhere (a stage boundary: rank r to rank
  // r where the stages are as wide, else from the first rank).
  Result<std::vector<TensorView>> residual_on(std::vector<TensorView> xs, const std::vector<hal::Device*>& ranks);
  Status run_block(const std::vector<BlockRank>& block, int layer, std::vector<TensorView>& xs, KvCache& kv);
  Status run_head(const StepBatch& batch, std::vector<TensorView> xs, float* logits);
  // Head rank r's logits of the batch's logit rows of x (that rank's residual stream) after the final norm `norm`
  // (the model's, or the MTP module's), into their columns of host `logits`; across processes they go to the first
  // stage's rank 0, whose process samples. `rows`, where set, gets the selected rows before the norm from rank 0.
  Status head_logits(size_t r, const TensorView& x, const TensorView& norm, int64_t m, float* logits, float* rows);

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
  TensorView tok_embd_;                         // [vocab, hidden]
  std::vector<std::vector<BlockRank>> blocks_;  // [layer][rank]
  std::vector<HeadRank> head_;
  // The MTP module (empty without it) on each rank of the last stage: its block's share (tensor parallel like the
  // layers), and its own norms and eh_proj whole on every rank.
  struct MtpRank {
    TensorView enorm, hnorm, norm;  // F32 [hidden]: on the embedding, on the main hidden, on the output
    TensorView eh_proj;             // [hidden, 2·hidden]: columns [0, hidden) take the embedding half
  };
  Status load_mtp_rank(WeightStore& w, const ModelConfig& rank_cfg, int rank, hal::Device& device,
                       const LayerLoader& load_layer);
  std::vector<BlockRank> mtp_block_;
  std::vector<MtpRank> mtp_ranks_;
};

}  // namespace cai
