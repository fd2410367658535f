// Device views of weight matrices (any weight dtype, FP8 block scales) and their decoders, bit-exact with
// src/core/quant*.cpp and weight_row.cpp (docs/design/formats.md#quant-block-layouts,
// docs/design/formats.md#fp8-e4m3-and-deepseek-block-scales). The types added in ABI 2.1 decode in dequant_q.cuh and
// dequant_iq.cuh.
#pragma once

#include "hal/cuda/kernels/block_load.cuh"
#include "hal/cuda/kernels/dequant_iq.cuh"
#include "hal/cuda/kernels/dequant_q.cuh"
#include "hal/cuda/kernels/launchers.h"

namespace cai::gpu {

inline constexpr int64_t kScaleBlock = 128;  // FP8 block scales cover 128 rows × 128 columns

// One weight matrix [rows, cols] in device memory: rows of whole blocks, row_bytes apart. scale (or null): F32
// [ceil(rows/128), scale_cols] multipliers applied after decoding, as dequantize_weight_row does.
struct WeightView {
  const uint8_t* data;
  int dtype;
  int64_t rows, cols;
  size_t row_bytes;
  const float* scale;
  int64_t scale_cols;
};

__device__ __host__ inline int block_elems(int dtype) {
  switch (dtype) {
    case CAI_DTYPE_Q8_0:
    case CAI_DTYPE_Q4_0:
    case CAI_DTYPE_Q4_1:
    case CAI_DTYPE_Q5_0:
    case CAI_DTYPE_Q5_1:
    case CAI_DTYPE_IQ4_NL: return 32;
    case CAI_DTYPE_Q4_K:
    case CAI_DTYPE_Q5_K:
    case CAI_DTYPE_Q6_K:
    case CAI_DTYPE_Q2_K:
    case CAI_DTYPE_Q3_K:
    case CAI_DTYPE_IQ4_XS:
    case CAI_DTYPE_IQ3_XXS:
    case CAI_DTYPE_IQ3_S:
    case CAI_DTYPE_IQ2_XXS:
    case CAI_DTYPE_IQ2_XS:
    case CAI_DTYPE_IQ2_S:
    case CAI_DTYPE_IQ1_S:
    case CAI_DTYPE_IQ1_M: return 256;
    default: return 1;
  }
}

__device__ __host__ inline int block_bytes(int dtype) {
  switch (dtype) {
    case CAI_DTYPE_F32: return 4;
    case CAI_DTYPE_F16:
    case CAI_DTYPE_BF16: return 2;
    case CAI_DTYPE_Q8_0: return 34;
    case CAI_DTYPE_Q4_0: return 18;
    case CAI_DTYPE_Q4_K: return 144;
    case CAI_DTYPE_Q5_K: return 176;
    case CAI_DTYPE_Q6_K: return 210;
    case CAI_DTYPE_Q4_1: return 20;
    case CAI_DTYPE_Q5_0: return 22;
    case CAI_DTYPE_Q5_1: return 24;
    case CAI_DTYPE_IQ4_NL: return 18;
    case CAI_DTYPE_Q2_K: return 84;
    case CAI_DTYPE_Q3_K:
    case CAI_DTYPE_IQ3_S: return 110;
    case CAI_DTYPE_IQ4_XS: return 136;
    case CAI_DTYPE_IQ3_XXS: return 98;
    case CAI_DTYPE_IQ2_XXS: return 66;
    case CAI_DTYPE_IQ2_XS: return 74;
    case CAI_DTYPE_IQ2_S: return 82;
    case CAI_DTYPE_IQ1_S: return 50;
    case CAI_DTYPE_IQ1_M: return 56;
    default: return 1;  // F8_E4M3
  }
}

inline bool is_weight_dtype(int dtype) {
  return (dtype >= CAI_DTYPE_F32 && dtype <= CAI_DTYPE_F8_E4M3) ||
         (dtype >= CAI_DTYPE_Q4_1 && dtype <= CAI_DTYPE_IQ1_M);
}

// Alignment the decoders need of a row start: they read 4-byte words of Q4_K/Q5_K and F32 (whose block sizes keep
// every row 4-byte aligned), else 2-byte words (the other block sizes are even, some not multiples of 4).
inline size_t weight_alignment(int dtype) {
  switch (dtype) {
    case CAI_DTYPE_F32:
    case CAI_DTYPE_Q4_K:
    case CAI_DTYPE_Q5_K: return 4;
    case CAI_DTYPE_F8_E4M3: return 1;
    default: return 2;
  }
}

// Checks a weight tensor of n_dims dims (2: [rows, cols]; 3: stacked [E, rows, cols]) for the decoders.
inline int check_weight(const CaiTensor& t, int n_dims, const char* op, const char* name, CaiError* err) {
  if (!is_weight_dtype(t.dtype))
    return fail(err, CAI_ERR_UNSUPPORTED, "%s: %s has unsupported dtype %d", op, name, t.dtype);
  if (t.n_dims != n_dims)
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "%s: %s must be %d-D, is %d-D", op, name, n_dims, t.n_dims);
  const int64_t cols = t.shape[n_dims - 1];
  if (cols % block_elems(t.dtype) != 0)
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "%s: %s has %lld columns, not a multiple of its %d-element block", op,
                name, static_cast<long long>(cols), block_elems(t.dtype));
  if (reinterpret_cast<uintptr_t>(t.data) % weight_alignment(t.dtype) != 0)
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "%s: %s data is not %zu-byte aligned", op, name,
                weight_alignment(t.dtype));
  return CAI_OK;
}

// Expert e of a stacked weight whose expert-0 view is w0: matrices and their scale matrices are consecutive.
__device__ __host__ inline WeightView expert_view(const WeightView& w0, int64_t e) {
  WeightView v = w0;
  v.data += static_cast<size_t>(e * w0.rows) * w0.row_bytes;
  if (v.scale) v.scale += e * ((w0.rows + kScaleBlock - 1) / kScaleBlock) * w0.scale_cols;
  return v;
}

// The view of a 2-D weight, or of expert `expert` of a stacked 3-D one.
inline WeightView weight_view(const CaiTensor& t, int64_t expert = 0) {
  const bool stacked = t.n_dims == 3;
  WeightView v{};
  v.data = static_cast<const uint8_t*>(t.data);
  v.dtype = t.dtype;
  v.rows = t.shape[stacked ? 1 : 0];
  v.cols = t.shape[stacked ? 2 : 1];
  v.row_bytes = static_cast<size_t>(v.cols / block_elems(t.dtype)) * static_cast<size_t>(block_bytes(t.dtype));
  v.scale = t.scale;
  v.scale_cols = (v.cols + kScaleBlock - 1) / kScaleBlock;
  return expert_view(v, expert);
}

// Sub-block s (0..7) of a Q4_K/Q5_K block: 6-bit scale and min from the 12 packed bytes.
__device__ __forceinline__ void k_scale_min(const uint8_t* b, int s, int* sc, int* m) {
  if (s < 4) {
    *sc = b[s] & 63;
    *m = b[s + 4] & 63;
  } else {
    *sc = (b[s + 4] & 15) | ((b[s - 4] >> 6) << 4);
    *m = (b[s + 4] >> 4) | ((b[s] >> 6) << 4);
  }
}

__device__ __forceinline__ float block_scale(const WeightView& w, int64_t row, int64_t col) {
  return w.scale ? w.scale[(row / kScaleBlock) * w.scale_cols + col / kScaleBlock] : 1.0f;
}

// Element i (0..255) of a Q4_K (qh null) or Q5_K block.
__device__ inline float k45_at(const uint8_t* blk, const uint8_t* qh, const uint8_t* qs, int i) {
  const int c = i / 64, s = i / 32, l = i % 32;
  int sc, m;
  k_scale_min(blk + 4, s, &sc, &m);
  int q = (s & 1) ? (qs[32 * c + l] >> 4) : (qs[32 * c + l] & 15);
  if (qh) q += ((qh[l] >> s) & 1) << 4;
  const float d = load_f16(blk) * static_cast<float>(sc), mn = load_f16(blk + 2) * static_cast<float>(m);
  return mul_rn(d, static_cast<float>(q)) - mn;
}

// Element i (0..255) of a Q6_K block.
__device__ inline float q6k_at(const uint8_t* blk, int i) {
  const int h = i / 128, r = i % 128, g = r / 32, l = r % 32;
  const int lbyte = blk[64 * h + l + 32 * (g & 1)];
  const int q = (g < 2 ? (lbyte & 15) : (lbyte >> 4)) | (((blk[128 + 32 * h + l] >> (2 * g)) & 3) << 4);
  const float sc = static_cast<float>(static_cast<int8_t>(blk[192 + i / 16]));
  return load_f16(blk + 208) * sc * static_cast<float>(q - 32);
}

// v[0..8) = elements i0 .. i0+7 of one block of a type added in ABI 2.1 (i0 a multiple of 8).
__device__ inline void added_type_chunk(int dtype, const uint8_t* blk, int i0, float* v) {
  switch (dtype) {
    case CAI_DTYPE_Q4_1: q4_1_chunk(blk, i0, v); break;
    case CAI_DTYPE_Q5_0: q5_chunk(blk, false, i0, v); break;
    case CAI_DTYPE_Q5_1: q5_chunk(blk, true, i0, v); break;
    case CAI_DTYPE_Q2_K: q2_k_chunk(blk, i0, v); break;
    case CAI_DTYPE_Q3_K: q3_k_chunk(blk, i0, v); break;
    case CAI_DTYPE_IQ4_NL: iq4_nl_chunk(blk, i0, v); break;
    case CAI_DTYPE_IQ4_XS: iq4_xs_chunk(blk, i0, v); break;
    case CAI_DTYPE_IQ3_XXS: iq3_xxs_chunk(blk, i0, v); break;
    case CAI_DTYPE_IQ3_S: iq3_s_chunk(blk, i0, v); break;
    case CAI_DTYPE_IQ2_XXS: iq2_xxs_chunk(blk, i0, v); break;
    case CAI_DTYPE_IQ2_XS: iq2_xs_chunk(blk, i0, v); break;
    case CAI_DTYPE_IQ2_S: iq2_s_chunk(blk, i0, v); break;
    case CAI_DTYPE_IQ1_S: iq1_s_chunk(blk, i0, v); break;
    default: iq1_m_chunk(blk, i0, v); break;  // CAI_DTYPE_IQ1_M (check_weight admits no other dtype)
  }
}

// w[row, col] for any dtype (the slow path: one element, no vector loads).
__device__ inline float weight_at(const WeightView& w, int64_t row, int64_t col) {
  const uint8_t* r = w.data + static_cast<size_t>(row) * w.row_bytes;
  const uint8_t* blk = r + static_cast<size_t>(col / block_elems(w.dtype)) * static_cast<size_t>(block_bytes(w.dtype));
  const int i = static_cast<int>(col % block_elems(w.dtype));
  float v;
  switch (w.dtype) {
    case CAI_DTYPE_F32: v = reinterpret_cast<const float*>(r)[col]; break;
    case CAI_DTYPE_F16: v = f16_to_f32(load_u16(blk)); break;
    case CAI_DTYPE_BF16: v = bf16_to_f32(load_u16(blk)); break;
    case CAI_DTYPE_Q8_0: v = load_f16(blk) * static_cast<float>(static_cast<int8_t>(blk[2 + i])); break;
    case CAI_DTYPE_Q4_0: {
      const int byte = blk[2 + i % 16];
      v = load_f16(blk) * static_cast<float>((i < 16 ? (byte & 15) : (byte >> 4)) - 8);
      break;
    }
    case CAI_DTYPE_Q4_K: v = k45_at(blk, nullptr, blk + 16, i); break;
    case CAI_DTYPE_Q5_K: v = k45_at(blk, blk + 16, blk + 48, i); break;
    case CAI_DTYPE_Q6_K: v = q6k_at(blk, i); break;
    case CAI_DTYPE_F8_E4M3: v = fp8_e4m3_to_f32(*blk); break;
    default: {  // the ABI 2.1 types come in whole blocks, which decode_chunk covers: one element of its chunk here
      float c[kChunk];
      added_type_chunk(w.dtype, blk, i - i % kChunk, c);
      v = c[i % kChunk];
      break;
    }
  }
  return w.scale ? v * block_scale(w, row, col) : v;
}

// Fast decoders: v[0..8) = elements i0 .. i0+7 of one block (i0 a multiple of 8).
__device__ inline void q8_0_chunk(const uint8_t* blk, int i0, float* v) {
  uint32_t lo, hi;
  load8_u16(blk + 2 + i0, &lo, &hi);
  const float d = load_f16(blk);
  for (int k = 0; k < kChunk; ++k)
    v[k] = d * small_int_to_f32(static_cast<uint32_t>(byte_of(lo, hi, k)) ^ 0x80u, 128.0f);
}

__device__ inline void q4_0_chunk(const uint8_t* blk, int i0, float* v) {
  uint32_t lo, hi;
  load8_u16(blk + 2 + i0 % 16, &lo, &hi);
  const float d = load_f16(blk);
  const int shift = i0 < 16 ? 0 : 4;
  for (int k = 0; k < kChunk; ++k)
    v[k] = d * small_int_to_f32(static_cast<uint32_t>((byte_of(lo, hi, k) >> shift) & 15), 8.0f);
}

// Q4_K (has_qh false) / Q5_K: the 8 elements share one sub-block scale and min.
__device__ inline void k45_chunk(const uint8_t* blk, bool has_qh, int i0, float* v) {
  const int c = i0 / 64, s = i0 / 32, l0 = i0 % 32;
  int sc, m;
  k_scale_min(blk + 4, s, &sc, &m);
  const float d = load_f16(blk) * static_cast<float>(sc), mn = load_f16(blk + 2) * static_cast<float>(m);
  const uint8_t* qs = blk + (has_qh ? 48 : 16) + 32 * c + l0;
  const uint32_t q_lo = load_u32(qs), q_hi = load_u32(qs + 4);
  uint32_t h_lo = 0, h_hi = 0;
  if (has_qh) {
    h_lo = load_u32(blk + 16 + l0);
    h_hi = load_u32(blk + 20 + l0);
  }
  const int shift = (s & 1) ? 4 : 0;
  for (int k = 0; k < kChunk; ++k) {
    const int q = ((byte_of(q_lo, q_hi, k) >> shift) & 15) | (((byte_of(h_lo, h_hi, k) >> s) & 1) << 4);
    v[k] = mul_rn(d, small_int_to_f32(static_cast<uint32_t>(q), 0.0f)) - mn;
  }
}

__device__ inline void q6_k_chunk(const uint8_t* blk, int i0, float* v) {
  const int h = i0 / 128, r = i0 % 128, g = r / 32, l0 = r % 32;
  uint32_t ql_lo, ql_hi, qh_lo, qh_hi;
  load8_u16(blk + 64 * h + l0 + 32 * (g & 1), &ql_lo, &ql_hi);
  load8_u16(blk + 128 + 32 * h + l0, &qh_lo, &qh_hi);
  const float d = load_f16(blk + 208);
  const float sc = static_cast<float>(static_cast<int8_t>(blk[192 + i0 / 16]));
  const int shift = g < 2 ? 0 : 4;
  for (int k = 0; k < kChunk; ++k) {
    const int q = ((byte_of(ql_lo, ql_hi, k) >> shift) & 15) | (((byte_of(qh_lo, qh_hi, k) >> (2 * g)) & 3) << 4);
    v[k] = d * sc * small_int_to_f32(static_cast<uint32_t>(q), 32.0f);
  }
}

__device__ inline void plain_chunk(const uint8_t* r, int dtype, int64_t col0, float* v) {
  for (int k = 0; k < kChunk; ++k) {
    const int64_t c = col0 + k;
    if (dtype == CAI_DTYPE_F32) v[k] = reinterpret_cast<const float*>(r)[c];
    else if (dtype == CAI_DTYPE_F16) v[k] = f16_to_f32(load_u16(r + 2 * c));
    else if (dtype == CAI_DTYPE_BF16) v[k] = bf16_to_f32(load_u16(r + 2 * c));
    else v[k] = fp8_e4m3_to_f32(r[c]);
  }
}

inline constexpr int kAnyDtype = -1;  // decode_chunk's dtype is w.dtype, switched on at run time

// v[0..8) = w[row, col0 .. col0+7]; col0 is a multiple of 8 and col0 + 8 <= cols. Same values as weight_at. With D
// = w.dtype given at compile time the dtype switch folds away, leaving straight-line loads and arithmetic.
template <int D = kAnyDtype>
__device__ __forceinline__ void decode_chunk(const WeightView& w, int64_t row, int64_t col0, float* v) {
  const int dtype = D == kAnyDtype ? w.dtype : D;
  const uint8_t* r = w.data + static_cast<size_t>(row) * w.row_bytes;
  const int be = block_elems(dtype);
  const uint8_t* blk = r + static_cast<size_t>(col0 / be) * static_cast<size_t>(block_bytes(dtype));
  const int i0 = static_cast<int>(col0 % be);
  switch (dtype) {
    case CAI_DTYPE_Q8_0: q8_0_chunk(blk, i0, v); break;
    case CAI_DTYPE_Q4_0: q4_0_chunk(blk, i0, v); break;
    case CAI_DTYPE_Q4_K: k45_chunk(blk, false, i0, v); break;
    case CAI_DTYPE_Q5_K: k45_chunk(blk, true, i0, v); break;
    case CAI_DTYPE_Q6_K: q6_k_chunk(blk, i0, v); break;
    case CAI_DTYPE_F32:
    case CAI_DTYPE_F16:
    case CAI_DTYPE_BF16:
    case CAI_DTYPE_F8_E4M3: plain_chunk(r, dtype, col0, v); break;
    default: added_type_chunk(dtype, blk, i0, v); break;
  }
  const float s = block_scale(w, row, col0);  // the 8 columns share one 128-column block; 1 without scales
  for (int k = 0; k < kChunk; ++k) v[k] *= s;  // (× 1 is exact: a select, not a branch before the next loads)
}

}  // namespace cai::gpu
