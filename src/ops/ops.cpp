// Dispatch: look the op up in the device's table; a null entry is an `unsupported` Status naming op and device.
#include "ops/ops.h"

namespace cai::ops {

namespace {

template <auto Member, class... Args>
Status dispatch(hal::Device& d, Args&&... args) {
  const auto fn = d.ops().*Member;
  if (!fn) return unsupported("op {} is not supported on device {}", hal::op_name(hal::op_id<Member>()), d.name());
  const hal::OpContext ctx = d.op_context();
  return fn(ctx, std::forward<Args>(args)...);
}

}  // namespace

Status embed(hal::Device& d, const TensorView& table, const TensorView& ids, const TensorView& out) {
  if (ids.dtype != DType::kI32 || ids.n_elements() != out.rows())
    return invalid_argument("embed: ids {} must be I32 with one id per output row ({})", ids.shape_string(),
                            out.rows());
  return dispatch<&hal::OpTable::embed>(d, table, ids, out);
}
Status rms_norm(hal::Device& d, const TensorView& x, const TensorView& w, float eps, const TensorView& out) {
  return dispatch<&hal::OpTable::rms_norm>(d, x, w, eps, out);
}
Status rope(hal::Device& d, const TensorView& x, const TensorView& pos, const TensorView& inv_freq,
            const hal::RopeParams& p) {
  if (pos.dtype != DType::kI32 || pos.n_elements() != x.dim(0))
    return invalid_argument("rope: {} positions for {} tokens", pos.n_elements(), x.dim(0));
  if (inv_freq.dtype != DType::kF32 || inv_freq.n_elements() != p.n_rot / 2)
    return invalid_argument("rope: {} inverse frequencies for {} rotated dims", inv_freq.n_elements(), p.n_rot);
  return dispatch<&hal::OpTable::rope>(d, x, pos, inv_freq, p);
}
Status dense_gemm(hal::Device& d, const TensorView& w, const TensorView& x, const TensorView* bias,
                  const TensorView& y) {
  return dispatch<&hal::OpTable::dense_gemm>(d, w, x, bias, y);
}
Status add(hal::Device& d, const TensorView& a, const TensorView& b, const TensorView& out) {
  return dispatch<&hal::OpTable::add>(d, a, b, out);
}
Status swiglu(hal::Device& d, const TensorView& gate, const TensorView& up, const TensorView& out) {
  return dispatch<&hal::OpTable::swiglu>(d, gate, up, out);
}
Status softmax(hal::Device& d, const TensorView& x) { return dispatch<&hal::OpTable::softmax>(d, x); }
Status copy_cols(hal::Device& d, const TensorView& src, int64_t src_col, const TensorView& dst, int64_t dst_col,
                 int64_t n_cols) {
  return dispatch<&hal::OpTable::copy_cols>(d, src, src_col, dst, dst_col, n_cols);
}
Status kv_write(hal::Device& d, const TensorView& src, const TensorView& slots, const TensorView& cache) {
  if (slots.dtype != DType::kI32 || slots.n_elements() != src.rows())
    return invalid_argument("kv_write: {} slots for {} rows", slots.n_elements(), src.rows());
  return dispatch<&hal::OpTable::kv_write>(d, src, slots, cache);
}

namespace {

Status check_attn_batch(const char* op, const hal::AttnBatch& b) {
  if (b.seqs.dtype != DType::kI32 || b.seqs.n_dims != 2 || b.seqs.dim(1) != 3 || b.block_tables.dtype != DType::kI32 ||
      b.block_tables.n_dims != 2 || b.block_tables.dim(0) != b.seqs.dim(0))
    return invalid_argument("{}: seqs {} must be I32 [n_seqs, 3] and block_tables {} I32 [n_seqs, max_blocks]", op,
                            b.seqs.shape_string(), b.block_tables.shape_string());
  return {};
}

}  // namespace

Status attention_gqa(hal::Device& d, const hal::AttentionParams& p, const hal::AttnBatch& batch, const TensorView& q,
                     const TensorView& k_cache, const TensorView& v_cache, const TensorView& out) {
  CAI_TRY(check_attn_batch("attention_gqa", batch));
  return dispatch<&hal::OpTable::attention_gqa>(d, p, batch, q, k_cache, v_cache, out);
}

Status moe_gate(hal::Device& d, const hal::MoeGateParams& p, const TensorView& logits, const TensorView* bias,
                const TensorView& ids, const TensorView& weights) {
  return dispatch<&hal::OpTable::moe_gate>(d, p, logits, bias, ids, weights);
}
Status sparse_moe(hal::Device& d, const hal::ExpertWeights& w, const TensorView& x, const TensorView& ids,
                  const TensorView& weights, const TensorView& out) {
  if (w.gate.n_dims != 3 || w.up.n_dims != 3 || w.down.n_dims != 3 || w.up.dim(0) != w.gate.dim(0) ||
      w.down.dim(0) != w.gate.dim(0) || w.gate.dim(2) != x.cols() || w.down.dim(1) != x.cols() ||
      w.down.dim(2) != w.gate.dim(1) || ids.dtype != DType::kI32)
    return invalid_argument(
        "sparse_moe: experts gate {} up {} down {} must be stacked [E, ffn, {}] / [E, {}, ffn]; ids I32",
        w.gate.shape_string(), w.up.shape_string(), w.down.shape_string(), x.cols(), x.cols());
  return dispatch<&hal::OpTable::sparse_moe>(d, w, x, ids, weights, out);
}
Status attention_mla(hal::Device& d, const hal::MlaParams& p, const hal::AttnBatch& batch, const TensorView& q,
                     const TensorView& w_uk, const TensorView& w_uv, const TensorView& latent, const TensorView& out) {
  CAI_TRY(check_attn_batch("attention_mla", batch));
  CAI_TRY(hal::check_mla_weights(p, w_uk, w_uv));
  return dispatch<&hal::OpTable::attention_mla>(d, p, batch, q, w_uk, w_uv, latent, out);
}

}  // namespace cai::ops
