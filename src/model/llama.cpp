// Llama and Qwen2 (the R1 distills): GQA attention and a SwiGLU MLP in every block.
// Qwen2 differs only by q/k/v biases and NeoX RoPE, both carried by ModelConfig.
#include "model/arch_registry.h"
#include "model/decoder.h"

namespace cai {

Result<std::unique_ptr<Model>> make_llama_model(const ModelConfig& cfg, WeightStore weights,
                                                DType kv_dtype) {
  CAI_ASSIGN_OR_RETURN(std::unique_ptr<DecoderModel> model,
                       DecoderModel::create(cfg, std::move(weights), kv_spec_for(cfg, kv_dtype)));
  CAI_TRY(model->load_embeddings_and_head());
  for (int l = 0; l < cfg.num_hidden_layers; ++l) {
    CAI_ASSIGN_OR_RETURN(AttentionGqa attn, AttentionGqa::load(model->weights(), cfg, l));
    CAI_ASSIGN_OR_RETURN(DenseMlp mlp, DenseMlp::load(model->weights(), "blk." + std::to_string(l) + ".", ".weight",
                                                      cfg.hidden_size, cfg.intermediate_size));
    CAI_TRY(model->add_block(l, std::move(attn), std::move(mlp)));
  }
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace cai
