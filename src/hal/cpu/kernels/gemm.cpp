// dense_gemm: validation, ISA dispatch, the fused decode path (few rows), the batch-invariant tiled path (serving
// batches) and the packed-panel prefill path.
#include "hal/cpu/kernels/kernels.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "core/thread_pool.h"
#include "hal/cpu/kernels/cpu_features.h"
#include "hal/cpu/kernels/gemm_kernels.h"
#include "hal/cpu/kernels/qdot_kernels.h"

namespace cai::hal::cpu {

const GemmKernels& active_gemm_kernels() {
  switch (active_cpu_isa()) {
#if defined(__x86_64__)
    case CpuIsa::kAvx512: return gemm_kernels_avx512();
    case CpuIsa::kAvx2: return gemm_kernels_avx2();
#endif
#if defined(__aarch64__)
    case CpuIsa::kSve:
    case CpuIsa::kI8mm:
    case CpuIsa::kDotprod:
    case CpuIsa::kNeon: return gemm_kernels_neon();
#endif
    default: return gemm_kernels_scalar();
  }
}

#if defined(__aarch64__)
const QDotKernels& qdot_kernels_sve() {
  return sve_vector_bits() == 256 ? qdot_kernels_sve256() : qdot_kernels_sve512();
}
#endif

const QDotKernels& active_qdot_kernels() {
  switch (active_cpu_isa()) {
#if defined(__x86_64__)
    case CpuIsa::kAvx512: {
      static const bool vnni = __builtin_cpu_supports("avx512vnni");
      return vnni ? qdot_kernels_avx512vnni() : qdot_kernels_avx2();
    }
    case CpuIsa::kAvx2: return qdot_kernels_avx2();
#endif
#if defined(__aarch64__)
    case CpuIsa::kSve: return qdot_kernels_sve();
    case CpuIsa::kI8mm: return qdot_kernels_i8mm();
    case CpuIsa::kDotprod: return qdot_kernels_dotprod();
    case CpuIsa::kNeon: return qdot_kernels_neon();
#endif
    default: return qdot_kernels_scalar();
  }
}

namespace {

// Activation-row counts up to this use the fused dequant·dot path; above it weight panels are dequantized once.
constexpr int64_t kFusedMaxRows = 8;
constexpr int64_t kPanelK = 256;      // weight columns per packed panel (a multiple of every block size)
constexpr int64_t kFp8Block = 128;    // DeepSeek scale block edge
constexpr int64_t kDecodeGrain = 16;  // weight rows per thread chunk at least
// Activation rows from which the fast path runs two packed groups at a time where the ISA has a pair kernel: pairs
// speed up prefill (`cai bench -p 256 -t 2` on Qwen2-1.5B's shape in Q4_0; `gemm/q4_0_r16/8960x1536/n64/t1`), while
// at 16 rows (batched decode) they are no faster and at one row (decode) slower.
constexpr int64_t kPairMinRows = 32;
// Batch-invariant batches that would need more than one fused pass decode weights once into a tile buffer instead
// (`cai bench -b N` on Qwen2-0.5B's shape in Q8_0: at 16 sequences more tokens/s than two fused passes, at 4 and 8
// fewer than one fused pass, which so stays the choice up to kFusedMaxRows; `gemm/q8_0/8960x1536/n16-invariant/t1`).
constexpr int64_t kTiledMinRows = kFusedMaxRows + 1;
constexpr int64_t kTileK = 1024;   // columns decoded at a time (a multiple of every block size)
constexpr int kTilePanelRows = 6;  // weight rows decoded together (a multiple of every ISA's tile_rows); with
                                   // kTileK, two such buffers are 48 KiB, about one core's L1

struct Gemm {
  const GemmKernels* k;
  DType dtype;
  const TensorView* w;
  const float* x;
  const float* bias;  // null: none
  float* y;
  int64_t n, in, out;
  int64_t n_col_blocks;  // FP8 scale columns, when w->scale
};

// Encoded bytes of weight row r from column k on (k at a block boundary).
const uint8_t* weight_bytes_at(const Gemm& g, int64_t r, int64_t k) {
  const DTypeInfo& info = dtype_info(g.dtype);
  return g.w->row<const uint8_t>(r) + k / info.block_elems * info.block_bytes;
}

// Rows of a row-major tensor (all dims but the last); unlike TensorView::rows() this is safe when cols() == 0.
int64_t outer_rows(const TensorView& t) {
  int64_t n = 1;
  for (int i = 0; i + 1 < t.n_dims; ++i) n *= t.dim(i);
  return n;
}

// A weight packed into interleaved row groups (qdot_groups.h) runs only through the fast path's group kernels.
Status validate_packed(const OpContext& ctx, const TensorView& w) {
  const QDotKernels& qk = active_qdot_kernels();
  const int t = static_cast<int>(w.dtype);
  if (ctx.precision != Precision::kFast || !(qk.dot[t] || qk.dot16[t]))
    return unsupported("dense_gemm: {} weights are packed for --precision fast and have no exact kernel",
                       dtype_name(w.dtype));
  if (w.n_dims != 2 || w.dim(0) % kPackedGroupRows != 0 || w.scale)
    return invalid_argument("dense_gemm: {} weight {} must be 2-D with a multiple of {} rows", dtype_name(w.dtype),
                            w.shape_string(), kPackedGroupRows);
  return {};
}

Status validate(const TensorView& w, const TensorView& x, const TensorView* bias, const TensorView& y) {
  if (w.n_dims != 2) return invalid_argument("dense_gemm: weight must be 2-D [out, in], got {}", w.shape_string());
  if (x.dtype != DType::kF32 || y.dtype != DType::kF32)
    return unsupported("dense_gemm: activations must be f32 (x {}, y {})", dtype_name(x.dtype), dtype_name(y.dtype));
  int64_t out = w.dim(0), in = w.dim(1);
  if (x.cols() != in)
    return invalid_argument("dense_gemm: x {} does not match weight {} (in = {})", x.shape_string(), w.shape_string(),
                            in);
  if (y.cols() != out || outer_rows(y) != outer_rows(x))
    return invalid_argument("dense_gemm: y {} must be [{}, {}]", y.shape_string(), outer_rows(x), out);
  if (bias && (bias->dtype != DType::kF32 || bias->n_elements() != out))
    return invalid_argument("dense_gemm: bias must be f32 [{}], got {} {}", out, dtype_name(bias->dtype),
                            bias->shape_string());
  // The active ISA's table, the one the run dispatches through (a type it lacks is refused, never called).
  const GemmKernels& gk = active_gemm_kernels();
  if (w.dtype >= DType::kCount ||
      (group_rows(w.dtype) == 1 && (!gk.row_dot[static_cast<int>(w.dtype)] || !gk.dequant[static_cast<int>(w.dtype)])))
    return unsupported("dense_gemm: no CPU kernel for weight dtype {}", dtype_name(w.dtype));
  int block = dtype_info(w.dtype).block_elems;
  if (in % block != 0)
    return invalid_argument("dense_gemm: in = {} is not a multiple of the {} block size {}", in, dtype_name(w.dtype),
                            block);
  if (w.scale && w.dtype != DType::kF8_E4M3)
    return invalid_argument("dense_gemm: block scales are only defined for f8_e4m3 weights, not {}",
                            dtype_name(w.dtype));
  bool empty = out == 0 || in == 0 || outer_rows(x) == 0;
  if (!empty && (!w.data || !x.data || !y.data || (bias && !bias->data)))
    return invalid_argument("dense_gemm: null tensor data");
  return {};
}

// One weight row · nx activation rows; FP8 block scales are applied per 128-column segment.
void dot_rows(const Gemm& g, int64_t r, const float* x, int nx, float* acc) {
  const uint8_t* wrow = g.w->row<const uint8_t>(r);
  RowDotFn dot = g.k->row_dot[static_cast<int>(g.dtype)];
  if (!g.w->scale) {
    dot(wrow, x, g.in, nx, g.in, acc);
    return;
  }
  const float* srow = g.w->scale + (r / kFp8Block) * g.n_col_blocks;
  float seg[kMaxDotRows];
  for (int j = 0; j < nx; ++j) acc[j] = 0.0f;
  for (int64_t cb = 0; cb < g.n_col_blocks; ++cb) {
    int64_t c0 = cb * kFp8Block, len = std::min(kFp8Block, g.in - c0);
    dot(wrow + c0, x + c0, g.in, nx, len, seg);
    for (int j = 0; j < nx; ++j) acc[j] += srow[cb] * seg[j];
  }
}

// Fused path: weight rows [r0, r1) against every activation row, kMaxDotRows at a time.
void run_fused(const Gemm& g, int64_t r0, int64_t r1) {
  float acc[kMaxDotRows];
  for (int64_t r = r0; r < r1; ++r) {
    float b = g.bias ? g.bias[r] : 0.0f;
    for (int64_t j0 = 0; j0 < g.n; j0 += kMaxDotRows) {
      int nx = static_cast<int>(std::min<int64_t>(kMaxDotRows, g.n - j0));
      dot_rows(g, r, g.x + j0 * g.in, nx, acc);
      for (int j = 0; j < nx; ++j) g.y[(j0 + j) * g.out + r] = acc[j] + b;
    }
  }
}

struct PanelScratch {
  std::vector<float> panel;  // [kPanelK][nr]
  std::vector<float> row;    // [kPanelK]
};

// Dequantizes columns [k0, k0 + kc) of weight rows [r0, r0 + nrows) into p[k][j] (k-major, nr wide, zero-padded).
void pack_panel(const Gemm& g, int64_t r0, int nrows, int64_t k0, int64_t kc, PanelScratch& s) {
  const int nr = g.k->nr;
  DequantFn dq = g.k->dequant[static_cast<int>(g.dtype)];
  float* p = s.panel.data();
  float* row = s.row.data();
  for (int j = 0; j < nrows; ++j) {
    int64_t r = r0 + j;
    dq(weight_bytes_at(g, r, k0), row, kc);
    if (g.w->scale) {
      const float* srow = g.w->scale + (r / kFp8Block) * g.n_col_blocks;
      for (int64_t k = 0; k < kc; ++k) row[k] *= srow[(k0 + k) / kFp8Block];
    }
    for (int64_t k = 0; k < kc; ++k) p[k * nr + j] = row[k];
  }
  for (int j = nrows; j < nr; ++j)
    for (int64_t k = 0; k < kc; ++k) p[k * nr + j] = 0.0f;
}

// Panel path: for each panel of nr weight rows, dequantize kPanelK columns once and reuse them for all n rows.
void run_panels(const Gemm& g, int64_t p0, int64_t p1) {
  thread_local PanelScratch s;
  const int nr = g.k->nr, mr = g.k->mr;
  s.panel.resize(static_cast<size_t>(kPanelK * nr));
  s.row.resize(static_cast<size_t>(kPanelK));
  for (int64_t pi = p0; pi < p1; ++pi) {
    int64_t r0 = pi * nr;
    int nrows = static_cast<int>(std::min<int64_t>(nr, g.out - r0));
    for (int64_t i = 0; i < g.n; ++i)
      for (int j = 0; j < nrows; ++j) g.y[i * g.out + r0 + j] = g.bias ? g.bias[r0 + j] : 0.0f;
    for (int64_t k0 = 0; k0 < g.in; k0 += kPanelK) {
      int64_t kc = std::min(kPanelK, g.in - k0);
      pack_panel(g, r0, nrows, k0, kc, s);
      for (int64_t i0 = 0; i0 < g.n; i0 += mr) {
        int m = static_cast<int>(std::min<int64_t>(mr, g.n - i0));
        g.k->micro(g.x + i0 * g.in + k0, g.in, m, s.panel.data(), kc, g.y + i0 * g.out + r0, g.out, nrows);
      }
    }
  }
}

struct TileScratch {
  std::vector<float> w[2];  // [kTilePanelRows][kTileK] decoded weights: the chunk in use and the next one
  std::vector<float> acc;   // [kTilePanelRows][n][acc_floats] unreduced chains
  std::vector<float> sums;  // [n] one weight row's finished outputs
};

// One column chunk of one panel: weight rows [r0, r0 + n_rows), columns [k0, k0 + kc).
struct TileChunk {
  int64_t r0 = 0, k0 = 0, kc = 0;
  int n_rows = 0;
};

// Tiled path: for each panel of kTilePanelRows weight rows, decode kTileK columns at a time once and run the tile over
// every activation row. Each output keeps the fused path's chains, so results equal run_fused's bit for bit. The next
// chunk is decoded row by row between this chunk's tiles, so its weight loads (DRAM, once per step) overlap the FMAs.
void run_tiled(const Gemm& g, int64_t p0, int64_t p1) {
  thread_local TileScratch s;
  const GemmKernels& k = *g.k;
  DequantFn dq = k.dequant[static_cast<int>(g.dtype)];
  const int64_t ld_acc = g.n;  // acc index of (r, j) is (r·n + j)·acc_floats
  // Rows past the last panel's end keep whatever an earlier panel decoded (zeros at first): their outputs are dropped.
  for (auto& w : s.w) w.resize(static_cast<size_t>(kTilePanelRows * kTileK));
  s.acc.resize(static_cast<size_t>(kTilePanelRows * g.n * k.acc_floats));
  s.sums.resize(static_cast<size_t>(g.n));
  const int64_t n_chunks = (g.in + kTileK - 1) / kTileK, n_items = (p1 - p0) * n_chunks;
  auto chunk_at = [&](int64_t i) {
    TileChunk c;
    c.r0 = (p0 + i / n_chunks) * kTilePanelRows;
    c.n_rows = static_cast<int>(std::min<int64_t>(kTilePanelRows, g.out - c.r0));
    c.k0 = i % n_chunks * kTileK;
    c.kc = std::min(kTileK, g.in - c.k0);
    return c;
  };
  auto decode_row = [&](const TileChunk& c, int r, std::vector<float>& buf) {
    dq(weight_bytes_at(g, c.r0 + r, c.k0), buf.data() + r * kTileK, c.kc);
  };
  const TileChunk first = chunk_at(0);
  for (int r = 0; r < first.n_rows; ++r) decode_row(first, r, s.w[0]);
  for (int64_t i = 0; i < n_items; ++i) {
    const TileChunk c = chunk_at(i), next = i + 1 < n_items ? chunk_at(i + 1) : TileChunk{};
    const std::vector<float>& cur = s.w[i % 2];
    std::vector<float>& upcoming = s.w[(i + 1) % 2];
    const int n_tiled = (c.n_rows + k.tile_rows - 1) / k.tile_rows * k.tile_rows;  // padding rows are dropped
    const int64_t n_tiles = (g.n + k.tile_cols - 1) / k.tile_cols * (n_tiled / k.tile_rows);
    const int64_t rows_per_tile = (next.n_rows + n_tiles - 1) / n_tiles;
    int next_row = 0;
    for (int64_t j0 = 0; j0 < g.n; j0 += k.tile_cols) {
      const int nx = static_cast<int>(std::min<int64_t>(k.tile_cols, g.n - j0));
      for (int r = 0; r < n_tiled; r += k.tile_rows) {
        k.tile(cur.data() + r * kTileK, kTileK, g.x + j0 * g.in + c.k0, g.in, nx, c.kc,
               s.acc.data() + (r * ld_acc + j0) * k.acc_floats, ld_acc, c.k0 == 0);
        for (int64_t q = 0; q < rows_per_tile && next_row < next.n_rows; ++q) decode_row(next, next_row++, upcoming);
      }
    }
    while (next_row < next.n_rows) decode_row(next, next_row++, upcoming);
    if (c.k0 + c.kc < g.in) continue;
    for (int r = 0; r < c.n_rows; ++r) {
      const float b = g.bias ? g.bias[c.r0 + r] : 0.0f;
      k.finish(&s.acc[static_cast<size_t>(r * ld_acc * k.acc_floats)], g.n, s.sums.data());
      for (int64_t j = 0; j < g.n; ++j) g.y[j * g.out + c.r0 + r] = s.sums[static_cast<size_t>(j)] + b;
    }
  }
}

void parallel(ThreadPool* pool, int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (pool && pool->size() > 1) {
    pool->parallel_for(n, grain, fn);
  } else {
    fn(0, n);
  }
}

// Fast path (Precision::kFast): activation rows quantized once (to ActBlockQ8, or to ActBlockQ16 codes and scales for
// the kernels that take 16 bits), then every weight row (or interleaved group of R rows, qdot_groups.h; two groups at
// a time where `pairs`) against them kMaxDotRows at a time through the integer kernel (`wide` rows at a time while
// that many are left, where the kernel has a wider tile), dot(weight bytes, first activation row, rows, groups,
// out[row · groups · R + r]). Each row's result is the same whatever n is, so it serves every batch size (the
// weights stay in L1 across passes).
template <class Dot>
void run_qdot(const Gemm& g, const Dot& dot, bool pairs, int wide, int64_t u0, int64_t u1) {
  const int R = group_rows(g.dtype);
  float acc[kWideDotRows * 2 * kPackedGroupRows];
  for (int64_t u = u0; u < u1;) {
    const int groups = pairs && u + 1 < u1 ? 2 : 1, rows = groups * R;
    const uint8_t* w = g.w->row<const uint8_t>(u * R);
    for (int64_t j0 = 0; j0 < g.n;) {
      const int64_t left = g.n - j0;
      const int nx = groups == 1 && left >= wide ? wide : static_cast<int>(std::min<int64_t>(kMaxDotRows, left));
      dot(w, j0, nx, groups, acc);
      for (int j = 0; j < nx; ++j) {
        float* y = g.y + (j0 + j) * g.out + u * R;
        const float* sums = acc + j * rows;
        if (g.bias) {
          for (int r = 0; r < rows; ++r) y[r] = sums[r] + g.bias[u * R + r];
        } else {
          std::copy(sums, sums + rows, y);
        }
      }
      j0 += nx;
    }
    u += groups;
  }
}

// Threads take whole groups of rows, kDecodeGrain rows at least.
void parallel_qdot(const OpContext& ctx, const Gemm& g, const std::function<void(int64_t, int64_t)>& units) {
  const int R = group_rows(g.dtype);
  parallel(ctx.pool, g.out / R, std::max<int64_t>(1, kDecodeGrain / R), units);
}

// dot_wide's activation tiles are quantized in this many stretches of blocks each, so both threads of a 16-row batch
// share the work.
constexpr int64_t kWideQuantizeParts = 8;

void fast_gemm(const OpContext& ctx, const Gemm& g, const QDotKernels& k) {
  const int t = static_cast<int>(g.dtype);
  const QDotFn dot = k.dot[t], dot_pair = k.dot_pair[t];
  const QDotWideFn dot_wide = k.dot_wide[t];
  const bool pairs = dot_pair != nullptr && g.n >= kPairMinRows;
  const bool wide = dot_wide != nullptr && !pairs && g.n >= kWideDotRows;
  thread_local std::vector<ActBlockQ8> xq;
  thread_local std::vector<ActWideBlock> xw;
  const int64_t ldx = g.in / kActBlock, n_wide = wide ? g.n / kWideDotRows * kWideDotRows : 0;
  xq.resize(static_cast<size_t>(g.n * ldx));
  xw.resize(static_cast<size_t>(n_wide / kWideDotRows * ldx));
  ActBlockQ8* q = xq.data();
  ActWideBlock* qw = xw.data();
  // Units: a stretch of blocks of the kWideDotRows rows of a dot_wide tile (quantized, then copied into its tile
  // blocks, which no other unit writes), or one row after the tiles.
  const int64_t tiles = n_wide / kWideDotRows, parts = std::min<int64_t>(ldx, kWideQuantizeParts);
  parallel(ctx.pool, tiles * parts + g.n - n_wide, 1, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      if (u >= tiles * parts) {
        const int64_t i = n_wide + u - tiles * parts;
        k.quantize(g.x + i * g.in, g.in, q + i * ldx);
        continue;
      }
      const int64_t i0 = u / parts * kWideDotRows, b0 = ldx * (u % parts) / parts, b1 = ldx * (u % parts + 1) / parts;
      for (int j = 0; j < kWideDotRows; ++j) {
        ActBlockQ8* row = q + (i0 + j) * ldx;
        k.quantize(g.x + (i0 + j) * g.in + b0 * kActBlock, (b1 - b0) * kActBlock, row + b0);
        for (int64_t b = b0; b < b1; ++b) set_wide_row(row[b], j, qw[i0 / kWideDotRows * ldx + b]);
      }
    }
  });
  const auto rows = [&](const uint8_t* w, int64_t j0, int nx, int groups, float* acc) {
    if (nx == kWideDotRows && wide)
      dot_wide(w, qw + j0 / kWideDotRows * ldx, g.in, acc);
    else
      (groups == 2 ? dot_pair : dot)(w, q + j0 * ldx, ldx, nx, g.in, acc);
  };
  parallel_qdot(ctx, g,
                [&](int64_t u0, int64_t u1) { run_qdot(g, rows, pairs, wide ? kWideDotRows : kMaxDotRows, u0, u1); });
}

void fast_gemm16(const OpContext& ctx, const Gemm& g, QuantizeAct16Fn quantize, QDot16Fn dot) {
  thread_local std::vector<ActBlockQ16> xq;
  thread_local std::vector<float> xd;
  const int64_t ldx = g.in / kActBlock;
  xq.resize(static_cast<size_t>(g.n * ldx));
  xd.resize(static_cast<size_t>(g.n * ldx));
  ActBlockQ16* q = xq.data();
  float* d = xd.data();
  parallel(ctx.pool, g.n, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) quantize(g.x + i * g.in, g.in, q + i * ldx, d + i * ldx);
  });
  const auto rows = [&](const uint8_t* w, int64_t j0, int nx, int, float* acc) {
    dot(w, q + j0 * ldx, d + j0 * ldx, ldx, nx, g.in, acc);
  };
  parallel_qdot(ctx, g, [&](int64_t u0, int64_t u1) { run_qdot(g, rows, false, kMaxDotRows, u0, u1); });
}

// The tiled path reproduces the fused one only for whole 32-column steps of unscaled weights.
bool tiled_applies(const Gemm& g) { return g.k->tile && !g.w->scale && g.in % 32 == 0 && g.n >= kTiledMinRows; }

}  // namespace

// w [out, in] any dtype with a kernel (F32, F16, BF16, every GGUF quant type, F8_E4M3 with or without w.scale block
// scales; under ctx.precision fast also the packed row groups of qdot_groups.h); x [n, in] F32; bias [out] F32 or
// null; y [n, out] F32. Exact: weights are dequantized exactly per block and accumulated in F32; fast: integer dot
// products against quantized activations where qdot_kernels.h has a kernel for the dtype. ctx.pool (may be null) splits
// the work. Shape / dtype problems → Status.
Status dense_gemm(const hal::OpContext& ctx, const TensorView& w, const TensorView& x, const TensorView* bias,
                  const TensorView& y) {
  CAI_TRY(validate(w, x, bias, y));
  if (group_rows(w.dtype) > 1) CAI_TRY(validate_packed(ctx, w));
  Gemm g{&active_gemm_kernels(),
         w.dtype,
         &w,
         x.as<const float>(),
         bias ? bias->as<const float>() : nullptr,
         y.as<float>(),
         outer_rows(x),
         w.dim(1),
         w.dim(0),
         (w.dim(1) + kFp8Block - 1) / kFp8Block};
  if (g.n == 0 || g.out == 0) return {};
  if (g.in == 0) {
    for (int64_t i = 0; i < g.n; ++i)
      for (int64_t r = 0; r < g.out; ++r) g.y[i * g.out + r] = g.bias ? g.bias[r] : 0.0f;
    return {};
  }
  if (ctx.precision == Precision::kFast && !g.w->scale && g.in % kActBlock == 0) {
    const QDotKernels& qk = active_qdot_kernels();
    if (const QDot16Fn dot16 = qk.dot16[static_cast<int>(g.dtype)]) {
      fast_gemm16(ctx, g, qk.quantize16, dot16);
      return {};
    }
    if (qk.dot[static_cast<int>(g.dtype)]) {
      fast_gemm(ctx, g, qk);
      return {};
    }
  }
  // Batch-invariant mode takes the fused or the tiled path, which accumulate each output in the same order whatever
  // n is (the panel path's order differs from the fused one, so mixing them would make results depend on the batch).
  if (ctx.batch_invariant && tiled_applies(g)) {
    const int64_t n_panels = (g.out + kTilePanelRows - 1) / kTilePanelRows;
    parallel(ctx.pool, n_panels, 1, [&](int64_t p0, int64_t p1) { run_tiled(g, p0, p1); });
  } else if (g.n <= kFusedMaxRows || ctx.batch_invariant) {
    parallel(ctx.pool, g.out, kDecodeGrain, [&](int64_t r0, int64_t r1) { run_fused(g, r0, r1); });
  } else {
    int64_t n_panels = (g.out + g.k->nr - 1) / g.k->nr;
    parallel(ctx.pool, n_panels, 1, [&](int64_t p0, int64_t p1) { run_panels(g, p0, p1); });
  }
  return {};
}

}  // namespace cai::hal::cpu
