// Typed op entry points used by model code: each forwards to the device's OpTable or reports it unsupported.
#pragma once

#include "hal/hal.h"

namespace cai::ops {

// Every tensor argument lives on d (ids, positions, slots and attention tables included); see op_table.h.
Status embed(hal::Device& d, const TensorView& table, const TensorView& ids, const TensorView& out);
Status rms_norm(hal::Device& d, const TensorView& x, const TensorView& w, float eps, const TensorView& out);
Status rope(hal::Device& d, const TensorView& x, const TensorView& pos, const TensorView& inv_freq,
            const hal::RopeParams& p);
Status dense_gemm(hal::Device& d, const TensorView& w, const TensorView& x, const TensorView* bias,
                  const TensorView& y);
Status add(hal::Device& d, const TensorView& a, const TensorView& b, const TensorView& out);
Status swiglu(hal::Device& d, const TensorView& gate, const TensorView& up, const TensorView& out);
Status softmax(hal::Device& d, const TensorView& x);
Status copy_cols(hal::Device& d, const TensorView& src, int64_t src_col, const TensorView& dst, int64_t dst_col,
                 int64_t n_cols);
Status kv_write(hal::Device& d, const TensorView& src, const TensorView& slots, const TensorView& cache);
Status attention_gqa(hal::Device& d, const hal::AttentionParams& p, const hal::AttnBatch& batch, const TensorView& q,
                     const TensorView& k_cache, const TensorView& v_cache, const TensorView& out);

Status moe_gate(hal::Device& d, const hal::MoeGateParams& p, const TensorView& logits, const TensorView* bias,
                const TensorView& ids, const TensorView& weights);
Status sparse_moe(hal::Device& d, const hal::ExpertWeights& w, const TensorView& x, const TensorView& ids,
                  const TensorView& weights, const TensorView& out);
Status attention_mla(hal::Device& d, const hal::MlaParams& p, const hal::AttnBatch& batch, const TensorView& q,
                     const TensorView& w_uk, const TensorView& w_uv, const TensorView& latent, const TensorView& out);

}  // namespace cai::ops
