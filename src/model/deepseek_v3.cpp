// DeepSeek-V3 / R1 (and V2): multi-head latent attention in every block; the first `first_k_dense_replace` blocks
// have a dense SwiGLU MLP, the rest a mixture of experts with shared experts. KV cache: [c_kv | k_rope] per token.
#include "model/arch_registry.h"
#include "model/decoder.h"

namespace cai {

Result<std::unique_ptr<Model>> make_deepseek_model(const ModelConfig& cfg, WeightStore weights,
                                                   DType kv_dtype) {
  if (!cfg.is_mla()) return invalid_argument("{}: kv_lora_rank must be set for DeepSeek attention", cfg.architecture);
  CAI_ASSIGN_OR_RETURN(std::unique_ptr<DecoderModel> model,
                       DecoderModel::create(cfg, std::move(weights), kv_spec_for(cfg, kv_dtype)));
  CAI_TRY(model->load_embeddings_and_head());
  for (int l = 0; l < cfg.num_hidden_layers; ++l) {
    CAI_ASSIGN_OR_RETURN(AttentionMla attn, AttentionMla::load(model->weights(), cfg, l));
    if (cfg.n_routed_experts == 0 || l < cfg.first_k_dense_replace) {
      CAI_ASSIGN_OR_RETURN(DenseMlp mlp, DenseMlp::load(model->weights(), "blk." + std::to_string(l) + ".", ".weight",
                                                        cfg.hidden_size, cfg.intermediate_size));
      CAI_TRY(model->add_block(l, std::move(attn), std::move(mlp)));
    } else {
      CAI_ASSIGN_OR_RETURN(MoeFfn moe, MoeFfn::load(model->weights(), cfg, l));
      CAI_TRY(model->add_block(l, std::move(attn), std::move(moe)));
    }
  }
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace cai
