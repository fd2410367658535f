// Host-side launchers of the CUDA-dialect kernels: one per CaiOps entry, validating shapes and dtypes, then queuing
// kernels on the context's stream. They never synchronize and never read device memory from the host.
#pragma once

#include "cai/backend_abi.h"
#include "cai/backend_plugin.hpp"
#include "hal/cuda/dialect.h"

namespace cai::gpu {

// Device scratch memory shared by the ops of one device. Stream order makes reuse between ops safe; the region
// grows (free + allocate, outside any kernel) only when an op asks for more than ever before.
class Scratch {
 public:
  virtual ~Scratch() = default;
  // A device region of at least n_bytes (256-byte aligned), valid until the next get(); null + err on OOM.
  virtual void* get(size_t n_bytes, CaiError* err) = 0;
};

struct Context {
  gpuStream_t stream{};
  bool batch_invariant = false;  // one reduction order per output whatever the batch (no batch-dependent split-K)
  int n_sms = 1;                 // multiprocessors, for grid sizing
  int warp_size = 32;            // the device's warp width (also what gpu_warp_size() returns in kernels)
  size_t shared_mem_per_block = 48 * 1024;
  Scratch* scratch = nullptr;
};

using plugin::fail;  // writes a printf-style message into err (when not null) and returns code
// After a launch: a pending launch error becomes CAI_ERR_INTERNAL naming the op, else CAI_OK.
int check_launch(CaiError* err, const char* op);

int embed(const Context&, const CaiTensor& table, const CaiTensor& ids, const CaiTensor& out, CaiError*);
int rms_norm(const Context&, const CaiTensor& x, const CaiTensor& w, float eps, const CaiTensor& out, CaiError*);
int rope(const Context&, const CaiTensor& x, const CaiTensor& pos, const CaiTensor& inv_freq, const CaiRopeParams& p,
         CaiError*);
int dense_gemm(const Context&, const CaiTensor& w, const CaiTensor& x, const CaiTensor* bias, const CaiTensor& y,
               CaiError*);
int add(const Context&, const CaiTensor& a, const CaiTensor& b, const CaiTensor& out, CaiError*);
int swiglu(const Context&, const CaiTensor& gate, const CaiTensor& up, const CaiTensor& out, CaiError*);
int softmax(const Context&, const CaiTensor& x, CaiError*);
int copy_cols(const Context&, const CaiTensor& src, int64_t src_col, const CaiTensor& dst, int64_t dst_col,
              int64_t n_cols, CaiError*);
int kv_write(const Context&, const CaiTensor& src, const CaiTensor& slots, const CaiTensor& cache, CaiError*);
int attention_gqa(const Context&, const CaiAttentionParams& p, const CaiAttnBatch& batch, const CaiTensor& q,
                  const CaiTensor& k_cache, const CaiTensor& v_cache, const CaiTensor& out, CaiError*);
int moe_gate(const Context&, const CaiMoeGateParams& p, const CaiTensor& logits, const CaiTensor* bias,
             const CaiTensor& ids, const CaiTensor& weights, CaiError*);
int sparse_moe(const Context&, const CaiExpertWeights& w, const CaiTensor& x, const CaiTensor& ids,
               const CaiTensor& weights, const CaiTensor& out, CaiError*);
int attention_mla(const Context&, const CaiMlaParams& p, const CaiAttnBatch& batch, const CaiTensor& q,
                  const CaiTensor& w_uk, const CaiTensor& w_uv, const CaiTensor& latent, const CaiTensor& out,
                  CaiError*);

}  // namespace cai::gpu
