/* The backend plugin boundary in plain C: what crosses between the engine and libcai-backend-<name>.so.
 *
 * Only C structs of fixed-width types, enums-as-integers and function pointers cross it, so a vendor can build a
 * plugin with its own compiler (nvcc, hipcc, mcc, ...) and C++ runtime. Every struct that can grow starts with
 * `struct_size` (the sizeof the writer was built with); a reader never touches a field past it. The engine wraps
 * this in its C++ HAL (src/hal/plugin_device.*); a plugin wraps its own C++ in it (cai/backend_plugin.hpp).
 *
 * Sync contract (also hal.h): every op and every copy is queued on the device's one ordered stream and may return
 * before the work is done, with two exceptions: copy_to_host returns once the bytes are in host memory, and
 * synchronize / event_wait return once all earlier work is done. copy_to_device may be reused by the caller as soon
 * as it returns (the plugin stages pageable sources). Pointers inside CaiTensor are device pointers of the plugin's
 * own allocations; an op never receives a host pointer. */
#ifndef CAI_BACKEND_ABI_H
#define CAI_BACKEND_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define CAI_ABI_DEFAULT(v) = v
extern "C" {
#else
#define CAI_ABI_DEFAULT(v)
#endif

/* v4.3: CaiCollectives may bring all_gather, reduce_scatter_sum_f32, broadcast and all_to_all, read only where its
   struct_size covers them (the engine builds them from send/recv and all-reduce where not).
   v4.2: CaiBackendEntry may name what the backend runs on (runtime_versions), read only where its struct_size covers
   it; entries of v4.0 and v4.1 (without it) still load. CaiCollectives may move bytes point to point (send, recv) and
   abort a communicator (comm_abort), read only where its struct_size covers them.
   v4.1: CaiCollectives may also join communicators across processes (comm_unique_id, comm_init_rank), read only
   where its struct_size covers them.
   v4: CaiExpertWeights carries expert_begin (expert parallelism: a rank's experts are a range of the layer's), and
   CaiBackendEntry a backend's collectives (CaiCollectives).
   v3: attention_mla takes W_UK and W_UV apart (w_uk, w_uv: the per-head layout DeepSeek GGUFs store) instead of the
   joint kv_b. Plugins of an earlier version are refused by name (their entry symbol differs). */
#define CAI_BACKEND_ABI_VERSION 4u
#define CAI_BACKEND_ENTRY_SYMBOL "cai_backend_entry_v4"

/* Element types; the values are cai::DType's. */
enum {
  CAI_DTYPE_F32 = 0,
  CAI_DTYPE_F16 = 1,
  CAI_DTYPE_BF16 = 2,
  CAI_DTYPE_Q8_0 = 3,
  CAI_DTYPE_Q4_0 = 4,
  CAI_DTYPE_Q4_K = 5,
  CAI_DTYPE_Q5_K = 6,
  CAI_DTYPE_Q6_K = 7,
  CAI_DTYPE_F8_E4M3 = 8, /* with 128x128 block scales in CaiTensor.scale */
  CAI_DTYPE_I32 = 9,
  CAI_DTYPE_I8 = 10,
  CAI_DTYPE_Q4_1 = 11, /* the GGUF types below were added in ABI 2.1; a plugin answers UNSUPPORTED for any it lacks */
  CAI_DTYPE_Q5_0 = 12,
  CAI_DTYPE_Q5_1 = 13,
  CAI_DTYPE_Q2_K = 14,
  CAI_DTYPE_Q3_K = 15,
  CAI_DTYPE_IQ4_NL = 16,
  CAI_DTYPE_IQ4_XS = 17,
  CAI_DTYPE_IQ3_XXS = 18,
  CAI_DTYPE_IQ3_S = 19,
  CAI_DTYPE_IQ2_XXS = 20,
  CAI_DTYPE_IQ2_XS = 21,
  CAI_DTYPE_IQ2_S = 22,
  CAI_DTYPE_IQ1_S = 23,
  CAI_DTYPE_IQ1_M = 24
};

/* Status codes; the values are cai::StatusCode's. */
enum {
  CAI_OK = 0,
  CAI_ERR_INVALID_ARGUMENT = 1,
  CAI_ERR_NOT_FOUND = 2,
  CAI_ERR_CORRUPT = 3,
  CAI_ERR_UNSUPPORTED = 4,
  CAI_ERR_OUT_OF_MEMORY = 5,
  CAI_ERR_IO = 6,
  CAI_ERR_RESOURCE_EXHAUSTED = 7,
  CAI_ERR_UNAVAILABLE = 8,
  CAI_ERR_CANCELLED = 9,
  CAI_ERR_INTERNAL = 10
};

/* A failed call returns its code and writes a message here (truncated, NUL-terminated). */
typedef struct CaiError {
  char message[512];
} CaiError;

/* A dense tensor in device memory: shape outermost first, rows contiguous, rows of block types hold whole blocks. */
typedef struct CaiTensor {
  void* data;
  int32_t dtype;
  int32_t n_dims;
  int64_t shape[4];
  /* F8_E4M3 weights only: F32 [.., ceil(rows/128), ceil(cols/128)] block multipliers (per expert when 3-D), else 0. */
  const float* scale;
} CaiTensor;

enum { CAI_ROPE_NORM = 0 /* pairs (x[2i], x[2i+1]) */, CAI_ROPE_NEOX = 1 /* pairs (x[i], x[i + n_rot/2]) */ };

/* RoPE applied by the `rope` op; the per-pair inverse frequencies come as a device tensor (hal/rope_freqs.h). */
typedef struct CaiRopeParams {
  int32_t style CAI_ABI_DEFAULT(CAI_ROPE_NORM);
  int32_t n_rot CAI_ABI_DEFAULT(0);      /* rotated dims per head; the others pass through */
  int32_t rot_offset CAI_ABI_DEFAULT(0); /* first rotated dim of each head */
  float mscale CAI_ABI_DEFAULT(1.0f);    /* multiplies cos and sin (YaRN) */
} CaiRopeParams;

/* The sequences of one batched attention call (device tensors + host launch bounds). Sequence s owns query rows
 * [q_begin, q_begin + n_q); query j sits at position pos0 + j and attends to cache positions 0 .. pos0 + j. Cache
 * position p of sequence s lives in slot block_tables[s, p / block_size] * block_size + p % block_size. */
typedef struct CaiAttnBatch {
  CaiTensor seqs;         /* I32 [n_seqs, 3]: q_begin, n_q, pos0 */
  CaiTensor block_tables; /* I32 [n_seqs, max_blocks] */
  int32_t max_q;          /* largest n_q */
  int32_t max_ctx;        /* largest pos0 + n_q */
} CaiAttnBatch;

typedef struct CaiAttentionParams {
  int32_t n_head CAI_ABI_DEFAULT(0);
  int32_t n_kv_head CAI_ABI_DEFAULT(0);
  int32_t head_dim CAI_ABI_DEFAULT(0);   /* q/k width per head */
  int32_t head_dim_v CAI_ABI_DEFAULT(0); /* v width per head */
  float scale CAI_ABI_DEFAULT(0.0f);     /* softmax scale */
  int32_t block_size CAI_ABI_DEFAULT(0); /* cache positions per block */
} CaiAttentionParams;

/* Router of a mixture of experts (DeepSeek V2/V3 gate). */
typedef struct CaiMoeGateParams {
  int32_t n_experts CAI_ABI_DEFAULT(0);
  int32_t top_k CAI_ABI_DEFAULT(0);
  int32_t n_group CAI_ABI_DEFAULT(1);    /* experts split into n_group consecutive groups ... */
  int32_t topk_group CAI_ABI_DEFAULT(1); /* ... of which only the best topk_group are eligible */
  int32_t sigmoid CAI_ABI_DEFAULT(0);    /* scores = sigmoid(logits) (V3/R1) or softmax(logits) (V2) */
  int32_t norm_topk_prob CAI_ABI_DEFAULT(0);
  float routed_scaling CAI_ABI_DEFAULT(1.0f);
} CaiMoeGateParams;

/* Multi-head latent attention over a cache of [c_kv (kv_lora) | k_rope (qk_rope)] per token. */
typedef struct CaiMlaParams {
  int32_t n_head CAI_ABI_DEFAULT(0);
  int32_t qk_nope CAI_ABI_DEFAULT(0);
  int32_t qk_rope CAI_ABI_DEFAULT(0);
  int32_t v_head_dim CAI_ABI_DEFAULT(0);
  int32_t kv_lora CAI_ABI_DEFAULT(0);
  float scale CAI_ABI_DEFAULT(0.0f);
  int32_t block_size CAI_ABI_DEFAULT(0);
} CaiMlaParams;

/* Stacked expert weights of one MoE layer: gate/up [E, ffn, hidden], down [E, hidden, ffn], any weight dtype. They are
   the layer's experts [expert_begin, expert_begin + E): sparse_moe skips the choices of other ids (they add 0). */
typedef struct CaiExpertWeights {
  CaiTensor gate;
  CaiTensor up;
  CaiTensor down;
  int32_t expert_begin CAI_ABI_DEFAULT(0);
} CaiExpertWeights;

typedef void* CaiDeviceHandle;
typedef void* CaiEventHandle;

/* One entry per op; null = unsupported. Semantics: src/hal/op_table.h (the C++ names match). */
typedef struct CaiOps {
  uint32_t struct_size;
  int (*embed)(CaiDeviceHandle, const CaiTensor* table, const CaiTensor* ids, const CaiTensor* out, CaiError*);
  int (*rms_norm)(CaiDeviceHandle, const CaiTensor* x, const CaiTensor* w, float eps, const CaiTensor* out, CaiError*);
  int (*rope)(CaiDeviceHandle, const CaiTensor* x, const CaiTensor* pos, const CaiTensor* inv_freq,
              const CaiRopeParams*, CaiError*);
  int (*dense_gemm)(CaiDeviceHandle, const CaiTensor* w, const CaiTensor* x, const CaiTensor* bias /* or null */,
                    const CaiTensor* y, CaiError*);
  int (*add)(CaiDeviceHandle, const CaiTensor* a, const CaiTensor* b, const CaiTensor* out, CaiError*);
  int (*swiglu)(CaiDeviceHandle, const CaiTensor* gate, const CaiTensor* up, const CaiTensor* out, CaiError*);
  int (*softmax)(CaiDeviceHandle, const CaiTensor* x, CaiError*);
  int (*copy_cols)(CaiDeviceHandle, const CaiTensor* src, int64_t src_col, const CaiTensor* dst, int64_t dst_col,
                   int64_t n_cols, CaiError*);
  /* kv_write: F32 rows into a cache of F32, F16 or BF16 (round to nearest even). attention_gqa (k/v caches) and
     attention_mla (latent) read caches of those three dtypes; q and out are F32. */
  int (*kv_write)(CaiDeviceHandle, const CaiTensor* src, const CaiTensor* slots, const CaiTensor* cache, CaiError*);
  int (*attention_gqa)(CaiDeviceHandle, const CaiAttentionParams*, const CaiAttnBatch*, const CaiTensor* q,
                       const CaiTensor* k_cache, const CaiTensor* v_cache, const CaiTensor* out, CaiError*);
  int (*moe_gate)(CaiDeviceHandle, const CaiMoeGateParams*, const CaiTensor* logits,
                  const CaiTensor* bias /* or null */, const CaiTensor* ids, const CaiTensor* weights, CaiError*);
  int (*sparse_moe)(CaiDeviceHandle, const CaiExpertWeights*, const CaiTensor* x, const CaiTensor* ids,
                    const CaiTensor* weights, const CaiTensor* out, CaiError*);
  /* attention_mla: q [n_tok, n_head, qk_nope + qk_rope] F32; w_uk [n_head·kv_lora, qk_nope] (row (h, c) = column c
     of head h's W_UK) and w_uv [n_head·v_head_dim, kv_lora], any weight dtype; out [n_tok, n_head·v_head_dim] F32. */
  int (*attention_mla)(CaiDeviceHandle, const CaiMlaParams*, const CaiAttnBatch*, const CaiTensor* q,
                       const CaiTensor* w_uk, const CaiTensor* w_uv, const CaiTensor* latent, const CaiTensor* out,
                       CaiError*);
} CaiOps;

/* Readings the vendor exposes; a field is valid when its bit is set in `valid`. */
enum { CAI_TELEMETRY_TEMPERATURE = 1, CAI_TELEMETRY_CLOCK = 2, CAI_TELEMETRY_UTILIZATION = 4, CAI_TELEMETRY_POWER = 8 };
typedef struct CaiTelemetry {
  uint32_t valid;
  float temperature_c;
  float clock_mhz;
  float utilization; /* 0..1 */
  float power_w;
} CaiTelemetry;

/* One device of a backend. Strings it returns live as long as the device. */
typedef struct CaiDevice {
  uint32_t struct_size;
  CaiDeviceHandle handle;
  const char* name;        /* "cuda:0" */
  const char* description; /* "NVIDIA H200, 132 SMs, 141 GB" */
  int32_t host_visible;    /* 1: the host may dereference device pointers (unified memory, host plugins) */
  const CaiOps* ops;
  int (*memory_info)(CaiDeviceHandle, uint64_t* total_bytes, uint64_t* free_bytes, CaiError*);
  int (*telemetry)(CaiDeviceHandle, CaiTelemetry* out, CaiError*);
  int (*allocate)(CaiDeviceHandle, size_t n_bytes, int32_t host_pinned, void** out, CaiError*);
  void (*free)(CaiDeviceHandle, void* ptr, int32_t host_pinned);
  int (*copy_to_device)(CaiDeviceHandle, void* dst, const void* src, size_t n, CaiError*);
  int (*copy_to_host)(CaiDeviceHandle, void* dst, const void* src, size_t n, CaiError*);
  int (*synchronize)(CaiDeviceHandle, CaiError*);
  int (*event_record)(CaiDeviceHandle, CaiEventHandle* out, CaiError*);
  int (*event_wait)(CaiDeviceHandle, CaiEventHandle, CaiError*);
  int (*event_done)(CaiDeviceHandle, CaiEventHandle); /* 1 done, 0 pending */
  void (*event_destroy)(CaiDeviceHandle, CaiEventHandle);
  void (*set_batch_invariant)(CaiDeviceHandle, int32_t on);
} CaiDevice;

/* The engine's exchange between the processes of a communicator that spans several (MPI underneath): all_gather puts
   each process's `bytes` bytes into `all`, by rank; 0 on success. For a library that needs a host channel besides
   the unique id; NCCL and RCCL do not use it. Valid until comm_destroy. */
typedef struct CaiHostExchange {
  void* ctx;
  int (*all_gather)(void* ctx, const void* mine, void* all, uint64_t bytes);
} CaiHostExchange;

/* Collectives a backend brings from its vendor library (NCCL, RCCL, HCCL, CNCL, BKCL, ...): a communicator over
   several of its devices in this process, rank i = devices[i]. The engine falls back to its staged host path where
   a backend has none, or where comm_create fails (e.g. CAI_ERR_UNAVAILABLE: the library is not installed). */
typedef void* CaiCommHandle;
typedef struct CaiCollectives {
  uint32_t struct_size;
  const char* library; /* what it runs on, for logs: "NCCL (libnccl.so.2)" */
  int (*comm_create)(const CaiDeviceHandle* devices, int32_t n, CaiCommHandle* out, CaiError*);
  void (*comm_destroy)(CaiCommHandle);
  /* bufs[i] (count F32 values in rank i's memory) all become their sum, queued on each rank's stream like ops. A
     communicator from comm_init_rank has one rank in this process: bufs[0]. */
  int (*all_reduce_sum_f32)(CaiCommHandle, float* const* bufs, uint64_t count, CaiError*);
  /* v4.1, across processes, one device in each (ncclGetUniqueId / ncclCommInitRank). comm_unique_id writes
     unique_id_bytes bytes on one process, which the engine sends to the others; with id null it only says whether
     the library is there (CAI_OK, or CAI_ERR_UNAVAILABLE with the reason). comm_init_rank joins the communicator of
     n_ranks processes as `rank`, on `device`; every process calls it with the same id. */
  uint32_t unique_id_bytes CAI_ABI_DEFAULT(0);
  int (*comm_unique_id)(void* id, CaiError*) CAI_ABI_DEFAULT(nullptr);
  int (*comm_init_rank)(const void* id, int32_t n_ranks, int32_t rank, CaiDeviceHandle device,
                        const CaiHostExchange* exchange, CaiCommHandle* out, CaiError*) CAI_ABI_DEFAULT(nullptr);
  /* v4.2, on a communicator from comm_init_rank: `bytes` bytes of this rank's device memory to rank `peer`, or from it
     (ncclSend / ncclRecv), queued on the device's stream like ops; every send meets the peer's recv of the same size.
     comm_abort ends the communicator's pending and later operations with an error (ncclCommAbort); the engine calls
     it, from another thread, when an operation has not completed within its collective timeout (a peer that died or
     stopped), after which it only destroys the communicator. */
  int (*send)(CaiCommHandle, const void* buf, uint64_t bytes, int32_t peer, CaiError*) CAI_ABI_DEFAULT(nullptr);
  int (*recv)(CaiCommHandle, void* buf, uint64_t bytes, int32_t peer, CaiError*) CAI_ABI_DEFAULT(nullptr);
  void (*comm_abort)(CaiCommHandle) CAI_ABI_DEFAULT(nullptr);
  /* v4.3, on either kind of communicator, queued on each rank's stream like all_reduce_sum_f32, in place as NCCL's;
     bufs[i] is rank i's buffer (bufs[0] alone for a communicator from comm_init_rank), n the communicator's ranks.
     all_gather (ncclAllGather): bufs[i] holds n parts of `bytes` bytes, rank i's own at offset i × bytes; every rank
       ends with every part.
     reduce_scatter_sum_f32 (ncclReduceScatter): bufs[i] holds n parts of `count` F32 values; part i of bufs[i] becomes
       the sum over the ranks of their part i (the other parts are left undefined).
     broadcast (ncclBroadcast): rank `root`'s `bytes` bytes into every rank's buffer.
     all_to_all (grouped ncclSend / ncclRecv): bytes[i × n + j] bytes go from rank i's send buffer to rank j's receive
       buffer; a send buffer holds its parts in the order of the receivers, a receive buffer in the order of the
       senders; the whole n × n matrix is given on every process. */
  int (*all_gather)(CaiCommHandle, void* const* bufs, uint64_t bytes, CaiError*) CAI_ABI_DEFAULT(nullptr);
  int (*reduce_scatter_sum_f32)(CaiCommHandle, float* const* bufs, uint64_t count, CaiError*) CAI_ABI_DEFAULT(nullptr);
  int (*broadcast)(CaiCommHandle, void* const* bufs, uint64_t bytes, int32_t root, CaiError*) CAI_ABI_DEFAULT(nullptr);
  int (*all_to_all)(CaiCommHandle, const void* const* send, void* const* recv, const uint64_t* bytes, CaiError*)
      CAI_ABI_DEFAULT(nullptr);
} CaiCollectives;

/* What the entry symbol returns. create() fills devices (the plugin keeps them alive until destroy()). */
typedef struct CaiBackendEntry {
  uint32_t abi_version; /* CAI_BACKEND_ABI_VERSION the plugin was built against */
  uint32_t struct_size;
  const char* name; /* backend name, e.g. "cuda" */
  /* Returns 0 and sets *devices / *n_devices, or an error code with a message. */
  int (*create)(const CaiDevice* const** devices, int32_t* n_devices, CaiError*);
  void (*destroy)(void);
  const CaiCollectives* collectives CAI_ABI_DEFAULT(nullptr); /* null: none (the engine stages through the host) */
  /* v4.2: what the backend runs on, with the versions its vendor API reports ("CUDA runtime 12.4, driver 12.6"), for
     `cai doctor`; called after create(), the string valid until destroy(). Null: nothing to report. */
  const char* (*runtime_versions)(void)CAI_ABI_DEFAULT(nullptr);
} CaiBackendEntry;

typedef const CaiBackendEntry* (*CaiBackendEntryFn)(void);

#ifdef __cplusplus
}
#endif

#endif /* CAI_BACKEND_ABI_H */
