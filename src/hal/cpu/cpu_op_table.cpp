// The CPU backend's OpTable: every op has a kernel here.
#include "hal/cpu/cpu_backend.h"
#include "hal/cpu/kernels/gemm.h"
#include "hal/cpu/kernels/kernels.h"

namespace cai::hal::cpu {

const OpTable& cpu_op_table() {
  static const OpTable table = [] {
    OpTable t;
    t.embed = embed;
    t.rms_norm = rms_norm;
    t.rope = rope;
    t.dense_gemm = cpu_dense_gemm;
    t.add = add;
    t.swiglu = swiglu;
    t.softmax = softmax;
    t.copy_cols = copy_cols;
    t.kv_write = kv_write;
    t.attention_gqa = attention_gqa;
    t.moe_gate = moe_gate;
    t.sparse_moe = sparse_moe;
    t.attention_mla = attention_mla;
    return t;
  }();
  return table;
}

}  // namespace cai::hal::cpu
