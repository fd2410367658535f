// The paged-attention core shared by attention_gqa and attention_mla (implemented in attention_gqa.cu).
#pragma once

#include "hal/cuda/kernels/launchers.h"

namespace cai::gpu {

// Query row r, head h reads q[(r * n_head + h) * head_dim ..]; cache slot `slot`, kv head g reads
// k[slot * k_slot_stride + g * head_dim ..] and v[slot * v_slot_stride + g * head_dim_v ..]; the result goes to
// out[(r * n_head + h) * head_dim_v ..]. Heads h of one kv head g are g * (n_head / n_kv_head) ... The caches hold
// k_dtype / v_dtype elements (CAI_DTYPE_F32, F16 or BF16), decoded to float as they are read.
struct PagedAttnArgs {
  const float* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  int32_t k_dtype = CAI_DTYPE_F32;
  int32_t v_dtype = CAI_DTYPE_F32;
  float* out = nullptr;
  const int32_t* seqs = nullptr;          // [n_seqs, 3]: q_begin, n_q, pos0
  const int32_t* block_tables = nullptr;  // [n_seqs, max_blocks]
  int64_t n_rows = 0;  // query rows in q / out; a sequence's rows past them are skipped
  int32_t n_seqs = 0;
  int32_t max_blocks = 0;
  int32_t max_q = 0;
  int32_t max_ctx = 0;  // largest pos0 + n_q of the batch
  int32_t block_size = 0;
  int64_t n_slots = 0;  // positions whose slot falls outside [0, n_slots) are skipped
  int32_t n_head = 0;
  int32_t n_kv_head = 0;
  int32_t head_dim = 0;
  int32_t head_dim_v = 0;
  int64_t k_slot_stride = 0;
  int64_t v_slot_stride = 0;
  float scale = 0.0f;
};

// Queues softmax(q·k^T · scale) · v for every query of every sequence. A query's context is cut into fixed
// partitions of positions; one block per (partition, sequence, query, kv head, slice of its query heads) walks its
// partition in fixed chunks with an online softmax, and a second kernel merges a query's partitions in order. Each
// output's arithmetic depends only on its own sequence (batch invariant) and the warp width. `partial` is
// paged_attention_scratch_bytes of device memory (null when that is 0); `op` names the caller in messages.
int launch_paged_attention(const Context& ctx, const PagedAttnArgs& a, void* partial, const char* op, CaiError* err);

// Device memory launch_paged_attention needs for the partitions' running sums (0 when one partition covers every
// query's context).
size_t paged_attention_scratch_bytes(const PagedAttnArgs& a);

// CAI_ERR_UNSUPPORTED naming `op` and `what` unless the cache's dtype is a KV cache dtype (F32, F16 or BF16).
int check_kv_cache(const CaiTensor& cache, const char* op, const char* what, CaiError* err);

// Checks a batch's descriptors: I32 seqs [n_seqs, 3], I32 block tables [n_seqs, max_blocks], sane launch bounds.
int check_attn_batch(const CaiAttnBatch& b, const char* op, CaiError* err);

}  // namespace cai::gpu
