// DeepSeek-V3 / R1 (and V2): multi-head latent attention in every block; the first `first_k_dense_replace` blocks
// have a dense SwiGLU MLP, the rest a mixture of experts with shared experts. KV cache: [c_kv | k_rope] per token.
#include "model/arch_registry.h"
#include "model/decoder.h"

namespace cai {

Result<std::unique_ptr<Model>> make_deepseek_model(const ModelConfig& cfg, WeightStore weights, DType kv_dtype) {
  if (!cfg.is_mla()) return invalid_argument("{}: kv_lora_rank must be set for DeepSeek attention", cfg.architecture);
  return DecoderModel::build(
      cfg, std::move(weights), kv_dtype, [](WeightStore& w, const ModelConfig& c, int l) -> Result<DecoderLayers> {
        CAI_ASSIGN_OR_RETURN(AttentionMla attn, AttentionMla::load(w, c, l));
        if (c.n_routed_experts == 0 || l < c.first_k_dense_replace) {
          CAI_ASSIGN_OR_RETURN(DenseMlp mlp, DenseMlp::load(w, "blk." + std::to_string(l) + ".", ".weight",
                                                            c.hidden_size, c.intermediate_size));
          return DecoderLayers{std::move(attn), std::move(mlp)};
        }
        CAI_ASSIGN_OR_RETURN(MoeFfn moe, MoeFfn::load(w, c, l));
        return DecoderLayers{std::move(attn), std::move(moe)};
      });
}

}  // namespace cai
