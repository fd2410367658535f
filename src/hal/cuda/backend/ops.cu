// The plugin's CaiOps table: each entry selects its device, checks its tensors (simt) and calls the op's launcher.
#include <initializer_list>

#include "hal/cuda/backend/gpu_device.h"

namespace cai::gpu {

namespace {

// One tensor argument of an op, for the checks below; `optional` ones may be null.
struct Arg {
  const char* name;
  const CaiTensor* tensor;
  bool optional = false;
};

// Every op gets device memory only. simt can prove it (its allocations are tracked), so it refuses anything else
// here; the GPU runtimes cannot cheaply, and a host pointer there faults in the kernel instead.
int check_device_range(CaiError* err, const char* op, const char* arg, const char* part, const void* p, uint64_t n) {
#if defined(CAI_GPU_SIMT)
  if (n > 0 && !simt::is_device_pointer(p, n))
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "%s: %s of '%s' (%p, %llu bytes) is not device memory of %s", op, part,
                arg, p, static_cast<unsigned long long>(n), kBackendName);
#else
  (void)err, (void)op, (void)arg, (void)part, (void)p, (void)n;
#endif
  return CAI_OK;
}

int check_args(CaiError* err, const char* op, std::initializer_list<Arg> args) {
  for (const Arg& a : args) {
    if (!a.tensor) {
      if (a.optional) continue;
      return fail(err, CAI_ERR_INVALID_ARGUMENT, "%s: argument '%s' is null", op, a.name);
    }
    if (int rc = check_device_range(err, op, a.name, "data", a.tensor->data, plugin::tensor_bytes(*a.tensor)))
      return rc;
    if (int rc = check_device_range(err, op, a.name, "scale", a.tensor->scale, plugin::scale_bytes(*a.tensor)))
      return rc;
  }
  return CAI_OK;
}

// The common frame of every op: device, argument checks, then the launcher with the device's context.
template <class Launch>
int run_op(CaiDeviceHandle h, CaiError* err, const char* op, std::initializer_list<Arg> args, Launch&& launch) {
  GpuDevice& device = plugin::Device::from<GpuDevice>(h);
  if (int rc = device.activate(err)) return rc;
  if (int rc = check_args(err, op, args)) return rc;
  return plugin::guarded(err, op, [&] { return launch(device.context()); });
}

int op_embed(CaiDeviceHandle h, const CaiTensor* table, const CaiTensor* ids, const CaiTensor* out, CaiError* err) {
  return run_op(h, err, "embed", {{"table", table}, {"ids", ids}, {"out", out}},
                [&](const Context& c) { return embed(c, *table, *ids, *out, err); });
}

int op_rms_norm(CaiDeviceHandle h, const CaiTensor* x, const CaiTensor* w, float eps, const CaiTensor* out,
                CaiError* err) {
  return run_op(h, err, "rms_norm", {{"x", x}, {"w", w}, {"out", out}},
                [&](const Context& c) { return rms_norm(c, *x, *w, eps, *out, err); });
}

int op_rope(CaiDeviceHandle h, const CaiTensor* x, const CaiTensor* pos, const CaiTensor* inv_freq,
            const CaiRopeParams* p, CaiError* err) {
  return run_op(h, err, "rope", {{"x", x}, {"pos", pos}, {"inv_freq", inv_freq}},
                [&](const Context& c) { return rope(c, *x, *pos, *inv_freq, *p, err); });
}

int op_dense_gemm(CaiDeviceHandle h, const CaiTensor* w, const CaiTensor* x, const CaiTensor* bias, const CaiTensor* y,
                  CaiError* err) {
  return run_op(h, err, "dense_gemm", {{"w", w}, {"x", x}, {"bias", bias, true}, {"y", y}},
                [&](const Context& c) { return dense_gemm(c, *w, *x, bias, *y, err); });
}

int op_add(CaiDeviceHandle h, const CaiTensor* a, const CaiTensor* b, const CaiTensor* out, CaiError* err) {
  return run_op(h, err, "add", {{"a", a}, {"b", b}, {"out", out}},
                [&](const Context& c) { return add(c, *a, *b, *out, err); });
}

int op_swiglu(CaiDeviceHandle h, const CaiTensor* gate, const CaiTensor* up, const CaiTensor* out, CaiError* err) {
  return run_op(h, err, "swiglu", {{"gate", gate}, {"up", up}, {"out", out}},
                [&](const Context& c) { return swiglu(c, *gate, *up, *out, err); });
}

int op_softmax(CaiDeviceHandle h, const CaiTensor* x, CaiError* err) {
  return run_op(h, err, "softmax", {{"x", x}}, [&](const Context& c) { return softmax(c, *x, err); });
}

int op_copy_cols(CaiDeviceHandle h, const CaiTensor* src, int64_t src_col, const CaiTensor* dst, int64_t dst_col,
                 int64_t n_cols, CaiError* err) {
  return run_op(h, err, "copy_cols", {{"src", src}, {"dst", dst}},
                [&](const Context& c) { return copy_cols(c, *src, src_col, *dst, dst_col, n_cols, err); });
}

int op_kv_write(CaiDeviceHandle h, const CaiTensor* src, const CaiTensor* slots, const CaiTensor* cache,
                CaiError* err) {
  return run_op(h, err, "kv_write", {{"src", src}, {"slots", slots}, {"cache", cache}},
                [&](const Context& c) { return kv_write(c, *src, *slots, *cache, err); });
}

int op_attention_gqa(CaiDeviceHandle h, const CaiAttentionParams* p, const CaiAttnBatch* batch, const CaiTensor* q,
                     const CaiTensor* k_cache, const CaiTensor* v_cache, const CaiTensor* out, CaiError* err) {
  return run_op(h, err, "attention_gqa",
                {{"batch.seqs", &batch->seqs},
                 {"batch.block_tables", &batch->block_tables},
                 {"q", q},
                 {"k_cache", k_cache},
                 {"v_cache", v_cache},
                 {"out", out}},
                [&](const Context& c) { return attention_gqa(c, *p, *batch, *q, *k_cache, *v_cache, *out, err); });
}

int op_moe_gate(CaiDeviceHandle h, const CaiMoeGateParams* p, const CaiTensor* logits, const CaiTensor* bias,
                const CaiTensor* ids, const CaiTensor* weights, CaiError* err) {
  return run_op(h, err, "moe_gate", {{"logits", logits}, {"bias", bias, true}, {"ids", ids}, {"weights", weights}},
                [&](const Context& c) { return moe_gate(c, *p, *logits, bias, *ids, *weights, err); });
}

int op_sparse_moe(CaiDeviceHandle h, const CaiExpertWeights* w, const CaiTensor* x, const CaiTensor* ids,
                  const CaiTensor* weights, const CaiTensor* out, CaiError* err) {
  return run_op(h, err, "sparse_moe",
                {{"w.gate", &w->gate},
                 {"w.up", &w->up},
                 {"w.down", &w->down},
                 {"x", x},
                 {"ids", ids},
                 {"weights", weights},
                 {"out", out}},
                [&](const Context& c) { return sparse_moe(c, *w, *x, *ids, *weights, *out, err); });
}

int op_attention_mla(CaiDeviceHandle h, const CaiMlaParams* p, const CaiAttnBatch* batch, const CaiTensor* q,
                     const CaiTensor* w_uk, const CaiTensor* w_uv, const CaiTensor* latent, const CaiTensor* out,
                     CaiError* err) {
  return run_op(h, err, "attention_mla",
                {{"batch.seqs", &batch->seqs},
                 {"batch.block_tables", &batch->block_tables},
                 {"q", q},
                 {"w_uk", w_uk},
                 {"w_uv", w_uv},
                 {"latent", latent},
                 {"out", out}},
                [&](const Context& c) { return attention_mla(c, *p, *batch, *q, *w_uk, *w_uv, *latent, *out, err); });
}

CaiOps make_ops() {
  CaiOps o = plugin::empty_ops();
  o.embed = op_embed;
  o.rms_norm = op_rms_norm;
  o.rope = op_rope;
  o.dense_gemm = op_dense_gemm;
  o.add = op_add;
  o.swiglu = op_swiglu;
  o.softmax = op_softmax;
  o.copy_cols = op_copy_cols;
  o.kv_write = op_kv_write;
  o.attention_gqa = op_attention_gqa;
  o.moe_gate = op_moe_gate;
  o.sparse_moe = op_sparse_moe;
  o.attention_mla = op_attention_mla;
  return o;
}

}  // namespace

const CaiOps& gpu_ops() {
  static const CaiOps ops = make_ops();
  return ops;
}

}  // namespace cai::gpu
