// Llama and Qwen2 (the R1 distills): GQA attention and a SwiGLU MLP in every block.
// Qwen2 differs only by q/k/v biases and NeoX RoPE, both carried by ModelConfig.
#include "model/arch_registry.h"
#include "model/decoder.h"

namespace cai {

Result<std::unique_ptr<Model>> make_llama_model(const ModelConfig& cfg, WeightStore weights, DType kv_dtype) {
  return DecoderModel::build(
      cfg, std::move(weights), kv_dtype, [](WeightStore& w, const ModelConfig& c, int l) -> Result<DecoderLayers> {
        CAI_ASSIGN_OR_RETURN(AttentionGqa attn, AttentionGqa::load(w, c, l));
        CAI_ASSIGN_OR_RETURN(DenseMlp mlp, DenseMlp::load(w, "blk." + std::to_string(l) + ".", ".weight", c.hidden_size,
                                                          c.intermediate_size));
        return DecoderLayers{std::move(attn), std::move(mlp)};
      });
}

}  // namespace cai
