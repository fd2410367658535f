// Multi-head latent attention with the latent rows expanded to per-head K / V (the prompt's path on the CPU; see
// attention_mla_expanded.cpp). attention_mla.cpp picks it per sequence.
#pragma once

#include <cstdint>

#include "hal/cpu/kernels/kernels.h"

namespace cai::hal::cpu {

// Whether expanding the sequence's pos0 + n_q latent rows through W_UK / W_UV costs fewer multiply-adds than absorbing
// them into each of its n_q queries (and the expanded rows fit the scratch bound).
bool mla_expansion_pays(const MlaParams& p, int64_t n_q, int64_t pos0);

// One sequence's attention, expanded: its latent rows times W_UK and W_UV give every head's k_nope and v rows, then
// each head attends as multi-head attention over [k_nope | k_rope] (192 wide for DeepSeek) instead of the 576-wide
// latent. w_uk / w_uv as attention_mla takes them (op_table.h).
Status attention_mla_expanded(const OpContext& ctx, const MlaParams& p, const AttnSeq& sq, const TensorView& q,
                              const TensorView& w_uk, const TensorView& w_uv, const TensorView& latent,
                              const TensorView& out);

}  // namespace cai::hal::cpu
