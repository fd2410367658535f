// CUDA-dialect embed: out[i, :] = table[ids[i], :] as F32, for every weight dtype of the table.
#include "hal/cuda/kernels/dequant.cuh"
#include "hal/cuda/kernels/tensor_shape.cuh"

namespace cai::gpu {

namespace {

constexpr int kEmbedThreads = 128;

// One block per token. An id outside [0, n_vocab) cannot be rejected without a host read, so its row is written as
// zeros instead of reading out of bounds (the host-side reference rejects such ids).
__global__ void embed_kernel(WeightView table, const int32_t* __restrict__ ids, float* __restrict__ out) {
  const int64_t i = blockIdx.x;
  const int32_t id = ids[i];
  float* o = out + i * table.cols;
  const bool valid = id >= 0 && id < table.rows;
  const int64_t n_chunks = table.cols / kChunk;
  float v[kChunk];
  for (int64_t c = threadIdx.x; c < n_chunks; c += blockDim.x) {
    if (valid) {
      decode_chunk(table, id, c * kChunk, v);
    } else {
      for (int k = 0; k < kChunk; ++k) v[k] = 0.0f;
    }
    for (int k = 0; k < kChunk; ++k) o[c * kChunk + k] = v[k];
  }
  for (int64_t col = n_chunks * kChunk + threadIdx.x; col < table.cols; col += blockDim.x)
    o[col] = valid ? weight_at(table, id, col) : 0.0f;
}

}  // namespace

int embed(const Context& ctx, const CaiTensor& table, const CaiTensor& ids, const CaiTensor& out, CaiError* err) {
  if (int rc = check_weight(table, 2, "embed", "table", err); rc != CAI_OK) return rc;
  if (ids.dtype != CAI_DTYPE_I32)
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "embed: ids must be I32, got dtype %d", ids.dtype);
  const int64_t n = n_elements(ids), dim = table.shape[1];
  if (out.dtype != CAI_DTYPE_F32 || rows(out) != n || cols(out) != dim)
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "embed: out must be F32 [%lld, %lld], got %s (dtype %d)",
                static_cast<long long>(n), static_cast<long long>(dim), shape_string(out).c_str(), out.dtype);
  if (n == 0 || dim == 0) return CAI_OK;
  if (n > 0x7FFFFFFF)
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "embed: %lld ids is too many", static_cast<long long>(n));
  GPU_LAUNCH(dim3(static_cast<unsigned>(n)), dim3(kEmbedThreads), 0, ctx.stream, embed_kernel)
  (weight_view(table), static_cast<const int32_t*>(ids.data), static_cast<float*>(out.data));
  return check_launch(err, "embed");
}

}  // namespace cai::gpu
