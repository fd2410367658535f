// DeepSeek MLA's up-projection as the model reads it: per head, attn_k_b [n_head, kv_lora, nope] (W_UK transposed: row
// (h, c) holds column c of head h's k_nope rows) and attn_v_b [n_head, v, kv_lora] (W_UV), the layout mainline
// llama.cpp GGUFs store (docs/design/formats.md#converter-transformations), read as stored. Files with the joint
// kv_b_proj instead (HF checkpoints, older GGUFs: attn_kv_b [n_head·(nope + v), kv_lora], each head's rows
// [k_nope ‖ v]) are split on the host at load.
#pragma once

#include <array>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor_view.h"

namespace cai {

class GgufFile;

// A tensor built on the host at load, which owns its bytes (and FP8 block scales, where view.scale points into them).
struct HostTensor {
  std::string name;
  TensorView view;  // points into bytes
  std::vector<uint8_t> bytes;
  std::vector<float> scales;  // empty: none
};

struct MlaDims {
  int64_t n_head = 0, qk_nope = 0, v_head_dim = 0;
};

// prefix + "attn_k_b.weight" and prefix + "attn_v_b.weight" from kv_b (host memory; FP8 block scales in kv_b.scale).
// attn_v_b is kv_b's v rows byte for byte; attn_k_b is a transposed copy for F32, F16 and BF16, and exact F32 for the
// block dtypes (their blocks run along kv_lora, attn_k_b's rows along nope). Block-scaled FP8 (DeepSeek V3 / R1
// checkpoints) stays FP8 where nope, v and kv_lora are whole 128-element scale blocks (R1: 128, 128, 512): each head's
// v rows are then whole blocks of kv_b's scale grid, and attn_k_b's grid is the transpose of its k rows' blocks; with
// other sizes both are exact F32.
Result<std::array<HostTensor, 2>> split_mla_kv_b(const std::string& prefix, const TensorView& kv_b, const MlaDims& d);

// The GGUF file's attn_kv_b tensors, split (split_mla_kv_b) where no attn_k_b / attn_v_b stand beside them and
// skipped where they do (ik_llama.cpp files carry both layouts); every attn_kv_b goes to `skipped`. dims: the model's
// head sizes (null: a file with an attn_kv_b to split is an error). An attn_k_b without its attn_v_b is an error.
Result<std::vector<HostTensor>> split_gguf_mla_kv_b(const GgufFile& file, const MlaDims* dims,
                                                    std::set<std::string>* skipped);

}  // namespace cai
