// DeepSeek MLA in mainline llama.cpp GGUFs: kv_b_proj is stored split per head (attn_k_b, attn_v_b), with no
// attn_kv_b; the canonical attn_kv_b the model reads is rebuilt from them on the host (FORMATS.md §3).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor_view.h"

namespace cai {

class GgufFile;

// A tensor built on the host at load, which owns its bytes.
struct HostTensor {
  std::string name;
  TensorView view;  // points into bytes
  std::vector<uint8_t> bytes;
};

// For every layer with blk.N.attn_k_b (ne [nope, kv_lora, n_head]: the k_nope rows of each head, transposed) and
// blk.N.attn_v_b (ne [kv_lora, v, n_head]) but no attn_kv_b: blk.N.attn_kv_b.weight [n_head*(nope+v), kv_lora], each
// head's rows [k_nope ‖ v]. Same dtype when both are F32, F16 or BF16 (an exact copy), else F32 (exact dequantization).
// The names of the tensors it replaces go to `replaced`.
Result<std::vector<HostTensor>> rebuild_mla_kv_b(const GgufFile& file, std::set<std::string>* replaced);

}  // namespace cai
