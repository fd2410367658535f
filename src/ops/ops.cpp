// Dispatch: look the op up in the device's table; a null entry is an `unsupported` Status naming op and device.
#include "ops/ops.h"

namespace cai::ops {

namespace {

template <class Fn, class... Args>
Status dispatch(hal::Device& d, Fn hal::OpTable::*member, hal::OpId id, Args&&... args) {
  Fn fn = d.ops().*member;
  if (!fn) return unsupported("op {} is not supported on device {}", hal::op_name(id), d.name());
  const hal::OpContext ctx = d.op_context();
  return fn(ctx, std::forward<Args>(args)...);
}

}  // namespace

Status embed(hal::Device& d, const TensorView& table, std::span<const int32_t> ids, const TensorView& out) {
  return dispatch(d, &hal::OpTable::embed, hal::OpId::kEmbed, table, ids.data(), static_cast<int64_t>(ids.size()), out);
}
Status rms_norm(hal::Device& d, const TensorView& x, const TensorView& w, float eps, const TensorView& out) {
  return dispatch(d, &hal::OpTable::rms_norm, hal::OpId::kRmsNorm, x, w, eps, out);
}
Status rope(hal::Device& d, const TensorView& x, std::span<const int32_t> pos, const hal::RopeParams& p) {
  if (static_cast<int64_t>(pos.size()) != x.dim(0)) return invalid_argument("rope: {} positions for {} tokens", pos.size(), x.dim(0));
  return dispatch(d, &hal::OpTable::rope, hal::OpId::kRope, x, pos.data(), p);
}
Status dense_gemm(hal::Device& d, const TensorView& w, const TensorView& x, const TensorView* bias, const TensorView& y) {
  return dispatch(d, &hal::OpTable::dense_gemm, hal::OpId::kDenseGemm, w, x, bias, y);
}
Status add(hal::Device& d, const TensorView& a, const TensorView& b, const TensorView& out) {
  return dispatch(d, &hal::OpTable::add, hal::OpId::kAdd, a, b, out);
}
Status swiglu(hal::Device& d, const TensorView& gate, const TensorView& up, const TensorView& out) {
  return dispatch(d, &hal::OpTable::swiglu, hal::OpId::kSwiglu, gate, up, out);
}
Status softmax(hal::Device& d, const TensorView& x) { return dispatch(d, &hal::OpTable::softmax, hal::OpId::kSoftmax, x); }
Status copy_cols(hal::Device& d, const TensorView& src, int64_t src_col, const TensorView& dst, int64_t dst_col,
                 int64_t n_cols) {
  return dispatch(d, &hal::OpTable::copy_cols, hal::OpId::kCopyCols, src, src_col, dst, dst_col, n_cols);
}
Status kv_write(hal::Device& d, const TensorView& src, std::span<const int32_t> slots, const TensorView& cache) {
  if (static_cast<int64_t>(slots.size()) != src.rows()) return invalid_argument("kv_write: {} slots for {} rows", slots.size(), src.rows());
  return dispatch(d, &hal::OpTable::kv_write, hal::OpId::kKvWrite, src, slots.data(), cache);
}
Status attention_gqa(hal::Device& d, const hal::AttentionParams& p, std::span<const hal::AttnSeq> seqs,
                     const TensorView& q, const TensorView& k_cache, const TensorView& v_cache, const TensorView& out) {
  return dispatch(d, &hal::OpTable::attention_gqa, hal::OpId::kAttentionGqa, p, seqs.data(), static_cast<int>(seqs.size()),
                  q, k_cache, v_cache, out);
}

Status moe_gate(hal::Device& d, const hal::MoeGateParams& p, const TensorView& logits, const TensorView* bias,
                const TensorView& ids, const TensorView& weights) {
  return dispatch(d, &hal::OpTable::moe_gate, hal::OpId::kMoeGate, p, logits, bias, ids, weights);
}
Status sparse_moe(hal::Device& d, const hal::ExpertWeights& w, const TensorView& x, const TensorView& ids,
                  const TensorView& weights, const TensorView& out) {
  return dispatch(d, &hal::OpTable::sparse_moe, hal::OpId::kSparseMoe, w, x, ids, weights, out);
}
Status attention_mla(hal::Device& d, const hal::MlaParams& p, std::span<const hal::AttnSeq> seqs, const TensorView& q,
                     const TensorView& kv_b, const TensorView& latent, const TensorView& out) {
  return dispatch(d, &hal::OpTable::attention_mla, hal::OpId::kAttentionMla, p, seqs.data(),
                  static_cast<int>(seqs.size()), q, kv_b, latent, out);
}

}  // namespace cai::ops
