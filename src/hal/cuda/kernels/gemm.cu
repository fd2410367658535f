// CUDA-dialect dense_gemm: y = x · w^T (+ bias) for every weight dtype; a GEMV with one row group (1-4 warps) per
// weight row for decode-sized batches (and for every batch in batch-invariant mode) and a shared-memory tiled GEMM for
// larger ones.
#include "hal/cuda/kernels/gemm_warp.cuh"
#include "hal/cuda/kernels/tensor_shape.cuh"

namespace cai::gpu {

namespace {

constexpr int kGemvWarps = 4;      // warps per GEMV block, split into row groups
constexpr int kTileM = 32;         // activation rows per tile
constexpr int kTileN = 64;         // output rows (weight rows) per tile
constexpr int kTileK = 32;         // reduction columns per tile step (a multiple of kChunk)
constexpr int kTileThreads = 256;  // each thread computes kTileM · kTileN / kTileThreads = 2 × 4 outputs
constexpr int kThreadsN = 16;      // thread columns of the output tile: thread t owns rows 2·(t/16)+{0,1} ...
constexpr int kOutPerThreadN = kTileN / kThreadsN;  // ... and output columns t%16 + 16·{0..3}

// Row groups of `group_warps` warps, one output row o each; blockIdx.y picks N consecutive activation rows (rows past
// n repeat the last one and are not stored).
template <int D, int N>
__global__ void gemv_kernel(WeightView w, const float* __restrict__ x, int64_t n, bool x16, int group_warps,
                            const float* __restrict__ bias, float* __restrict__ y) {
  __shared__ float partial[kGemvWarps][N];
  const int group = gpu_warp_id() / group_warps, width = group_warps * gpu_warp_size();
  const int64_t o = static_cast<int64_t>(blockIdx.x) * (kGemvWarps / group_warps) + group;
  const int64_t j0 = static_cast<int64_t>(blockIdx.y) * N;
  float acc[N];
  if (o < w.rows) {
    const float* xs[N];
    for (int j = 0; j < N; ++j) xs[j] = x + (j0 + j < n ? j0 + j : n - 1) * w.cols;
    thread_dot_rows<D, N>(w, o, xs, x16, static_cast<int>(threadIdx.x) % width, width, acc);
  } else {
    for (int j = 0; j < N; ++j) acc[j] = 0.0f;
  }
  group_sum<N>(acc, group_warps, partial);
  if (o >= w.rows || static_cast<int>(threadIdx.x) % width != 0) return;
  const float b = bias ? bias[o] : 0.0f;
  for (int j = 0; j < N && j0 + j < n; ++j) y[(j0 + j) * w.rows + o] = acc[j] + b;
}

// Tile [o0, o0 + kTileN) × [k0, k0 + kTileK) of w, decoded into ws (zeros outside the matrix).
__device__ inline void load_weight_tile(const WeightView& w, int64_t o0, int64_t k0, float (*ws)[kTileK + 1]) {
  constexpr int kChunksPerRow = kTileK / kChunk;
  const int r = static_cast<int>(threadIdx.x) / kChunksPerRow, cc = static_cast<int>(threadIdx.x) % kChunksPerRow;
  const int64_t o = o0 + r, col0 = k0 + cc * kChunk;
  float v[kChunk];
  if (o < w.rows && col0 + kChunk <= w.cols) {
    decode_chunk(w, o, col0, v);
  } else {
    for (int k = 0; k < kChunk; ++k) v[k] = (o < w.rows && col0 + k < w.cols) ? weight_at(w, o, col0 + k) : 0.0f;
  }
  for (int k = 0; k < kChunk; ++k) ws[r][cc * kChunk + k] = v[k];
}

// Tile [m0, m0 + kTileM) × [k0, k0 + kTileK) of x into xs (zeros outside), coalesced along the row.
__device__ inline void load_x_tile(const float* x, int64_t n, int64_t cols, int64_t m0, int64_t k0,
                                   float (*xs)[kTileK + 1]) {
  for (int idx = static_cast<int>(threadIdx.x); idx < kTileM * kTileK; idx += kTileThreads) {
    const int r = idx / kTileK, c = idx % kTileK;
    const int64_t m = m0 + r, col = k0 + c;
    xs[r][c] = (m < n && col < cols) ? x[m * cols + col] : 0.0f;
  }
}

// Output tile [m0, m0 + kTileM) × [o0, o0 + kTileN): weight tiles are dequantized into shared memory once per block.
__global__ void __launch_bounds__(kTileThreads)
    tiled_gemm_kernel(WeightView w, const float* __restrict__ x, int64_t n, const float* __restrict__ bias,
                      float* __restrict__ y) {
  __shared__ float xs[kTileM][kTileK + 1];
  __shared__ float ws[kTileN][kTileK + 1];
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kTileM, o0 = static_cast<int64_t>(blockIdx.x) * kTileN;
  const int tm = static_cast<int>(threadIdx.x) / kThreadsN, tn = static_cast<int>(threadIdx.x) % kThreadsN;
  float acc[2][kOutPerThreadN] = {};
  for (int64_t k0 = 0; k0 < w.cols; k0 += kTileK) {
    load_x_tile(x, n, w.cols, m0, k0, xs);
    load_weight_tile(w, o0, k0, ws);
    __syncthreads();
    for (int k = 0; k < kTileK; ++k) {
      const float a0 = xs[2 * tm][k], a1 = xs[2 * tm + 1][k];
      for (int j = 0; j < kOutPerThreadN; ++j) {
        const float b = ws[tn + kThreadsN * j][k];
        acc[0][j] += a0 * b;
        acc[1][j] += a1 * b;
      }
    }
    __syncthreads();
  }
  for (int i = 0; i < 2; ++i) {
    const int64_t m = m0 + 2 * tm + i;
    for (int j = 0; j < kOutPerThreadN && m < n; ++j) {
      const int64_t o = o0 + tn + kThreadsN * j;
      if (o < w.rows) y[m * w.rows + o] = acc[i][j] + (bias ? bias[o] : 0.0f);
    }
  }
}

// The GEMV over all n rows, pass_rows(n) activation rows per pass.
void launch_gemv(const Context& ctx, const WeightView& w, const float* x, int64_t n, const float* bias, float* y) {
  const int group_warps = row_group_warps(w.cols, ctx.warp_size, kGemvWarps);
  const int rows_per_block = kGemvWarps / group_warps, n_rows = pass_rows(n);
  const dim3 grid(static_cast<unsigned>((w.rows + rows_per_block - 1) / rows_per_block),
                  static_cast<unsigned>((n + n_rows - 1) / n_rows));
  const bool x16 = rows_16b_aligned(x, w.cols);
  with_pass_rows(n_rows, [&](auto rows_c) {
    dispatch_weight_dtype(w.dtype, [&](auto d) {
      GPU_LAUNCH(grid, dim3(kGemvWarps * ctx.warp_size), 0, ctx.stream,
                 gemv_kernel<decltype(d)::value, decltype(rows_c)::value>)
      (w, x, n, x16, group_warps, bias, y);
    });
  });
}

int check_gemm_args(const CaiTensor& w, const CaiTensor& x, const CaiTensor* bias, const CaiTensor& y, CaiError* err) {
  if (int rc = check_weight(w, 2, "dense_gemm", "w", err); rc != CAI_OK) return rc;
  if (x.dtype != CAI_DTYPE_F32 || y.dtype != CAI_DTYPE_F32)
    return fail(err, CAI_ERR_UNSUPPORTED, "dense_gemm: x and y must be F32 (got dtypes %d, %d)", x.dtype, y.dtype);
  if (cols(x) != w.shape[1] || cols(y) != w.shape[0] || rows(y) != rows(x))
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "dense_gemm: w %s x %s y %s", shape_string(w).c_str(),
                shape_string(x).c_str(), shape_string(y).c_str());
  if (bias && (bias->dtype != CAI_DTYPE_F32 || n_elements(*bias) != w.shape[0]))
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "dense_gemm: bias must be F32 [%lld], got %s (dtype %d)",
                static_cast<long long>(w.shape[0]), shape_string(*bias).c_str(), bias->dtype);
  if (y.data == x.data && n_elements(x) > 0)
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "dense_gemm: y must not alias x");
  return CAI_OK;
}

}  // namespace

int dense_gemm(const Context& ctx, const CaiTensor& w, const CaiTensor& x, const CaiTensor* bias, const CaiTensor& y,
               CaiError* err) {
  if (int rc = check_gemm_args(w, x, bias, y, err); rc != CAI_OK) return rc;
  const int64_t n = rows(x);
  if (n == 0 || w.shape[0] == 0) return CAI_OK;
  const WeightView wv = weight_view(w);
  const float* xp = static_cast<const float*>(x.data);
  const float* bp = bias ? static_cast<const float*>(bias->data) : nullptr;
  float* yp = static_cast<float*>(y.data);
  // Each output of the GEMV sums in an order set by the weight's shape alone, whatever N; the tiled GEMM's differs,
  // so batch-invariant mode never takes it.
  if (n > kMaxPassRows && !ctx.batch_invariant) {
    const dim3 grid(static_cast<unsigned>((wv.rows + kTileN - 1) / kTileN),
                    static_cast<unsigned>((n + kTileM - 1) / kTileM));
    GPU_LAUNCH(grid, dim3(kTileThreads), 0, ctx.stream, tiled_gemm_kernel)(wv, xp, n, bp, yp);
  } else {
    launch_gemv(ctx, wv, xp, n, bp, yp);
  }
  return check_launch(err, "dense_gemm");
}

}  // namespace cai::gpu
