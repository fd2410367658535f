// Every op of every registered backend against the scalar reference (ops/ref), table-driven.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "core/quant.h"
#include "hal/hal.h"
#include "model/rope_freqs.h"
#include "ops/ref/ref_ops.h"

namespace cai {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

TensorView view(std::vector<float>& v, std::initializer_list<int64_t> shape) {
  return TensorView::make(v.data(), DType::kF32, shape);
}

// Where a case's tensors live: host vectors as they are (the reference, host-visible devices), or copies on a device
// the host cannot address, uploaded and read back through the device's stream like the engine does.
class Env {
 public:
  explicit Env(hal::Device* device) : device_(device) {}
  template <class T>
  TensorView put(std::vector<T>& host, DType dtype, std::initializer_list<int64_t> shape, const float* scale = nullptr,
                 size_t n_scales = 0) {
    TensorView v = TensorView::make(host.data(), dtype, shape);
    EXPECT_EQ(v.n_bytes(), host.size() * sizeof(T)) << "shape " << v.shape_string();
    if (!device_ || device_->host_visible()) {
      v.scale = scale;
      return v;
    }
    v.data = upload(host.data(), v.n_bytes());
    v.device = device_;
    if (scale) v.scale = static_cast<const float*>(upload(scale, n_scales * sizeof(float)));
    return v;
  }
  TensorView f32(std::vector<float>& host, std::initializer_list<int64_t> shape) {
    return put(host, DType::kF32, shape);
  }
  TensorView i32(std::vector<int32_t>& host, std::initializer_list<int64_t> shape) {
    return put(host, DType::kI32, shape);
  }
  // The tensor's bytes back on the host as floats (I32, F16 and BF16 values converted).
  std::vector<float> get(const TensorView& v) {
    std::vector<float> out(static_cast<size_t>(v.n_elements()));
    std::vector<uint8_t> raw(v.n_bytes());
    if (!device_ || device_->host_visible())
      std::memcpy(raw.data(), v.data, raw.size());
    else
      EXPECT_TRUE(device_->default_stream().copy_to_host(raw.data(), v.data, raw.size()).ok());
    dequantize_row(v.dtype, raw.data(), out.data(), v.n_elements());
    return out;
  }

 private:
  void* upload(const void* src, size_t n) {
    Result<hal::Buffer> b = device_->allocate(n);
    EXPECT_TRUE(b.ok()) << b.status().to_string();
    if (!b.ok()) return nullptr;
    EXPECT_TRUE(device_->default_stream().copy_to_device(b->data(), src, n).ok());
    buffers_.push_back(std::move(*b));
    return buffers_.back().data();
  }
  hal::Device* device_;
  std::vector<hal::Buffer> buffers_;
};

// Weight bytes of `rows × cols` random values in dtype `dt` (F32 copied, others quantized).
std::vector<uint8_t> random_weight(DType dt, int64_t rows, int64_t cols, uint32_t seed, float scale = 1.0f) {
  std::vector<float> f = random_floats(static_cast<size_t>(rows * cols), seed, scale);
  std::vector<uint8_t> w(row_bytes(dt, cols) * static_cast<size_t>(rows));
  if (dt == DType::kF32)
    std::memcpy(w.data(), f.data(), w.size());
  else
    EXPECT_TRUE(quantize_row(dt, f.data(), w.data(), rows * cols).ok()) << dtype_name(dt);
  return w;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, float tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1.0f + std::fabs(want[i]))) << what << " at " << i;
}

// One case: runs with the backend's table and with the reference table on separate copies of its inputs (ops may
// modify them in place) and compares the returned output vectors.
struct OpCase {
  std::string name;
  float tol;
  std::function<std::vector<float>(const hal::OpTable&, const hal::OpContext&, Env&)> run;
  DType kv = DType::kF32;  // the KV cache dtype it uses: devices without it (Device::supports_kv_dtype) skip the case
};

// Scales of a FP8 weight [rows, cols]: one per 128×128 block.
std::vector<float> fp8_scales(int64_t rows, int64_t cols) {
  std::vector<float> s(static_cast<size_t>(((rows + 127) / 128) * ((cols + 127) / 128)));
  for (size_t i = 0; i < s.size(); ++i) s[i] = 0.01f * static_cast<float>(i + 1);
  return s;
}

constexpr DType kWeightTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0,   DType::kQ4_0,
                                  DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kF8_E4M3};

void add_weight_cases(std::vector<OpCase>& cases) {
  for (DType dt : kWeightTypes) {
    const std::string tn(dtype_name(dt));
    cases.push_back({"embed_" + tn, 1e-6f, [dt](const hal::OpTable& t, const hal::OpContext& c, Env& env) {
                       std::vector<uint8_t> q = random_weight(dt, 10, 256, 1);
                       const TensorView table = env.put(q, dt, {10, 256});  // embed decodes rows without block scales
                       std::vector<int32_t> ids = {3, 0, 9, 3};
                       std::vector<float> out(4 * 256);
                       TensorView o = env.f32(out, {4, 256});
                       EXPECT_TRUE(t.embed(c, table, env.i32(ids, {4}), o).ok());
                       return env.get(o);
                     }});
    // 3 rows (decode-shaped) and 20 rows (prefill-shaped); 300 outputs: several blocks of 128 for FP8 scales.
    for (int64_t n : {3, 20}) {
      cases.push_back({"dense_gemm_" + tn + "_n" + std::to_string(n), 2e-4f,
                       [dt, n](const hal::OpTable& t, const hal::OpContext& c, Env& env) {
                         const int64_t out = 300, in = 512;
                         std::vector<uint8_t> w = random_weight(dt, out, in, 5, 0.5f);
                         std::vector<float> sc = fp8_scales(out, in);
                         std::vector<float> x = random_floats(static_cast<size_t>(n * in), 6),
                                            b = random_floats(out, 7);
                         std::vector<float> y(static_cast<size_t>(n * out));
                         const TensorView bias = env.f32(b, {out}), yv = env.f32(y, {n, out});
                         const bool fp8 = dt == DType::kF8_E4M3;
                         EXPECT_TRUE(t.dense_gemm(c, env.put(w, dt, {out, in}, fp8 ? sc.data() : nullptr, sc.size()),
                                                  env.f32(x, {n, in}), &bias, yv)
                                         .ok());
                         return env.get(yv);
                       }});
    }
  }
}

// Stacked experts [n_e, rows, cols] of dtype dt (3 slabs) for sparse_moe.
struct ExpertSet {
  std::vector<uint8_t> gate, up, down;
  std::vector<float> gate_s, up_s, down_s;
};

ExpertSet random_experts(DType dt, int n_e, int hidden, int ffn) {
  ExpertSet s;
  s.gate = random_weight(dt, n_e * ffn, hidden, 100, 0.2f);
  s.up = random_weight(dt, n_e * ffn, hidden, 101, 0.2f);
  s.down = random_weight(dt, n_e * hidden, ffn, 102, 0.2f);
  for (int e = 0; e < n_e; ++e) {
    for (auto [dst, rows, cols] :
         {std::tuple{&s.gate_s, ffn, hidden}, std::tuple{&s.up_s, ffn, hidden}, std::tuple{&s.down_s, hidden, ffn}}) {
      std::vector<float> one = fp8_scales(rows, cols);
      dst->insert(dst->end(), one.begin(), one.end());
    }
  }
  return s;
}

void add_moe_cases(std::vector<OpCase>& cases) {
  for (bool sigmoid : {true, false}) {
    cases.push_back({sigmoid ? "moe_gate_sigmoid_groups_bias" : "moe_gate_softmax", 1e-6f,
                     [sigmoid](const hal::OpTable& t, const hal::OpContext& c, Env& env) {
                       const int n = 6, n_e = 16, k = 4;
                       std::vector<float> logits = random_floats(n * n_e, 14, 2.0f),
                                          bias = random_floats(n_e, 15, 0.3f);
                       std::vector<int32_t> ids(n * k);
                       std::vector<float> w(n * k);
                       hal::MoeGateParams p{n_e, k, sigmoid ? 4 : 1, sigmoid ? 2 : 1, sigmoid, true, 2.5f};
                       const TensorView bv = env.f32(bias, {n_e}), iv = env.i32(ids, {n, k}), wv = env.f32(w, {n, k});
                       EXPECT_TRUE(t.moe_gate(c, p, env.f32(logits, {n, n_e}), sigmoid ? &bv : nullptr, iv, wv).ok());
                       std::vector<float> out = env.get(wv), id_out = env.get(iv);
                       out.insert(out.end(), id_out.begin(), id_out.end());
                       return out;
                     }});
  }
  for (DType dt : {DType::kQ8_0, DType::kQ4_K, DType::kF8_E4M3}) {
    cases.push_back(
        {"sparse_moe_" + std::string(dtype_name(dt)), 5e-5f,
         [dt](const hal::OpTable& t, const hal::OpContext& c, Env& env) {
           const int n_e = 5, hidden = 256, ffn = 256, n = 7, k = 2;
           ExpertSet s = random_experts(dt, n_e, hidden, ffn);
           const bool fp8 = dt == DType::kF8_E4M3;
           hal::ExpertWeights ew;
           ew.gate = env.put(s.gate, dt, {n_e, ffn, hidden}, fp8 ? s.gate_s.data() : nullptr, s.gate_s.size());
           ew.up = env.put(s.up, dt, {n_e, ffn, hidden}, fp8 ? s.up_s.data() : nullptr, s.up_s.size());
           ew.down = env.put(s.down, dt, {n_e, hidden, ffn}, fp8 ? s.down_s.data() : nullptr, s.down_s.size());
           std::vector<float> x = random_floats(n * hidden, 16), w = random_floats(n * k, 17), out(n * hidden);
           std::vector<int32_t> ids = {0, 3, 3, 1, 4, 0, 2, 3, 1, 4, 0, 1, 3, 2};
           const TensorView ov = env.f32(out, {n, hidden});
           EXPECT_TRUE(t.sparse_moe(c, ew, env.f32(x, {n, hidden}), env.i32(ids, {n, k}), env.f32(w, {n, k}), ov).ok());
           return env.get(ov);
         }});
  }
}

// Expert parallelism: a stack of experts 2..4 of the layer's 5 (expert_begin 2) computes the choices of those ids only.
// Every backend against the reference; ExpertRangesAddUpToTheWholeLayer checks the reference's meaning of it.
void add_expert_range_case(std::vector<OpCase>& cases) {
  cases.push_back(
      {"sparse_moe_expert_range_q8_0", 5e-5f, [](const hal::OpTable& t, const hal::OpContext& c, Env& env) {
         const int n_e = 5, first = 2, hidden = 256, ffn = 256, n = 7, k = 2;
         ExpertSet s = random_experts(DType::kQ8_0, n_e, hidden, ffn);
         const size_t slab = row_bytes(DType::kQ8_0, hidden) * ffn;  // gate / up / down: 256 x 256 each
         auto tail = [&](std::vector<uint8_t>& v) { v.erase(v.begin(), v.begin() + first * slab); };
         tail(s.gate), tail(s.up), tail(s.down);
         hal::ExpertWeights ew;
         ew.gate = env.put(s.gate, DType::kQ8_0, {n_e - first, ffn, hidden});
         ew.up = env.put(s.up, DType::kQ8_0, {n_e - first, ffn, hidden});
         ew.down = env.put(s.down, DType::kQ8_0, {n_e - first, hidden, ffn});
         ew.expert_begin = first;
         std::vector<float> x = random_floats(n * hidden, 16), w = random_floats(n * k, 17);
         std::vector<float> out(n * hidden);
         std::vector<int32_t> ids = {0, 3, 3, 1, 4, 0, 2, 3, 1, 4, 0, 1, 3, 2};
         const TensorView ov = env.f32(out, {n, hidden});
         EXPECT_TRUE(t.sparse_moe(c, ew, env.f32(x, {n, hidden}), env.i32(ids, {n, k}), env.f32(w, {n, k}), ov).ok());
         return env.get(ov);
       }});
}

// Sequences for the attention cases: rows [q_begin, +n_q) at pos0, with their block tables (I32 [n_seqs, width]).
hal::AttnBatch attn_batch(Env& env, std::vector<int32_t>& seqs, std::vector<int32_t>& tables, int width) {
  hal::AttnBatch b;
  const int64_t n_seqs = static_cast<int64_t>(seqs.size() / 3);
  b.seqs = env.i32(seqs, {n_seqs, 3});
  b.block_tables = env.i32(tables, {n_seqs, width});
  for (int64_t s = 0; s < n_seqs; ++s) {
    b.max_q = std::max(b.max_q, seqs[static_cast<size_t>(s * 3 + 1)]);
    b.max_ctx = std::max(b.max_ctx, seqs[static_cast<size_t>(s * 3 + 2)] + seqs[static_cast<size_t>(s * 3 + 1)]);
  }
  return b;
}

// Zeroed bytes of a [rows, cols] KV cache of dtype dt.
std::vector<uint8_t> zero_cache(DType dt, int64_t rows, int64_t cols) {
  return std::vector<uint8_t>(row_bytes(dt, cols) * static_cast<size_t>(rows), 0);
}

constexpr DType kKvTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0};

void add_attention_cases(std::vector<OpCase>& cases) {
  // kv_write rounds exactly like the reference (the caches are compared too); attention reads the same cache. Q8_0
  // heads are whole 32-element blocks.
  for (DType kv : kKvTypes) {
    cases.push_back({"kv_write_attention_gqa_" + std::string(dtype_name(kv)), 2e-5f,
                     [kv](const hal::OpTable& t, const hal::OpContext& c, Env& env) {
                       // Two sequences over a paged cache of 6 blocks × 4 slots with scrambled block tables.
                       const int nh = 4, nkv = 2, hd = kv == DType::kQ8_0 ? 64 : 8, bs = 4, n_slots = 24;
                       std::vector<uint8_t> kc = zero_cache(kv, n_slots, nkv * hd), vc = kc;
                       std::vector<int32_t> tables = {5, 1, 3, 0, 4, 0};
                       // seq0: 9 tokens already cached + 2 new; seq1: 5 new (prefill).
                       std::vector<float> knew = random_floats(16 * nkv * hd, 11),
                                          vnew = random_floats(16 * nkv * hd, 12);
                       std::vector<int32_t> slots;
                       for (int p = 0; p < 11; ++p) slots.push_back(tables[static_cast<size_t>(p / bs)] * bs + p % bs);
                       for (int p = 0; p < 5; ++p)
                         slots.push_back(tables[static_cast<size_t>(3 + p / bs)] * bs + p % bs);
                       const TensorView kcv = env.put(kc, kv, {n_slots, nkv * hd});
                       const TensorView vcv = env.put(vc, kv, {n_slots, nkv * hd});
                       const TensorView sv = env.i32(slots, {16});
                       EXPECT_TRUE(t.kv_write(c, env.f32(knew, {16, nkv * hd}), sv, kcv).ok());
                       EXPECT_TRUE(t.kv_write(c, env.f32(vnew, {16, nkv * hd}), sv, vcv).ok());
                       std::vector<float> q = random_floats(7 * nh * hd, 13), out(7 * nh * hd);
                       std::vector<int32_t> seqs = {0, 2, 9, 2, 5, 0};
                       const hal::AttnBatch b = attn_batch(env, seqs, tables, 3);
                       hal::AttentionParams p{nh, nkv, hd, hd, 0.35f, bs};
                       const TensorView ov = env.f32(out, {7, nh, hd});
                       EXPECT_TRUE(t.attention_gqa(c, p, b, env.f32(q, {7, nh, hd}), kcv.reshaped({n_slots, nkv, hd}),
                                                   vcv.reshaped({n_slots, nkv, hd}), ov)
                                       .ok());
                       std::vector<float> got = env.get(ov), k_rows = env.get(kcv), v_rows = env.get(vcv);
                       got.insert(got.end(), k_rows.begin(), k_rows.end());
                       got.insert(got.end(), v_rows.begin(), v_rows.end());
                       return got;
                     },
                     kv});
  }
  // The latent cache in every KV dtype (F32 weights), FP8 (block-scaled) and Q4_0 W_UK / W_UV over an F32 latent. A
  // Q8_0 latent's c_kv and k_rope are whole blocks (R1: 512 + 64), as are Q4_0 rows (nope 32, kv_lora 64).
  for (const auto& dtypes : {std::pair{DType::kF32, DType::kF32}, std::pair{DType::kF16, DType::kF32},
                             std::pair{DType::kBF16, DType::kF32}, std::pair{DType::kQ8_0, DType::kF32},
                             std::pair{DType::kF32, DType::kF8_E4M3}, std::pair{DType::kF32, DType::kQ4_0}}) {
    const DType kv = dtypes.first, wt = dtypes.second;  // (latent, weights); clang 14 lambdas capture no bindings
    const std::string weights = wt == DType::kF32 ? "" : "_" + std::string(dtype_name(wt)) + "_weights";
    cases.push_back(
        {"attention_mla_" + std::string(dtype_name(kv)) + weights, 5e-5f,
         [kv, wt](const hal::OpTable& t, const hal::OpContext& c, Env& env) {
           // The reference is the naive (expanded) form; backends use the absorbed one.
           const bool q8 = kv == DType::kQ8_0, blocks = wt == DType::kQ4_0;
           const int nh = 3, nope = blocks ? 32 : 8, rope = q8 ? 32 : 4, vd = 6, lora = q8 || blocks ? 64 : 16, bs = 4,
                     n_slots = 16;
           std::vector<float> uk_f = random_floats(nh * lora * nope, 18, 0.5f),
                              uv_f = random_floats(nh * vd * lora, 17, 0.5f);
           std::vector<uint8_t> uk_codes, uv_codes;
           std::vector<float> scale = {0.02f};
           // W as wt: F32 as drawn; FP8 codes of W / scale with that one block scale; Q4_0 blocks.
           const auto weight = [&](std::vector<float>& w, std::vector<uint8_t>& codes, int64_t rows, int64_t cols) {
             if (wt == DType::kF32) return env.f32(w, {rows, cols});
             std::vector<float> src = w;
             if (wt == DType::kF8_E4M3)
               for (float& x : src) x /= scale[0];
             codes.resize(row_bytes(wt, cols) * static_cast<size_t>(rows));
             for (int64_t r = 0; r < rows; ++r)
               EXPECT_TRUE(quantize_row(wt, src.data() + r * cols, codes.data() + row_bytes(wt, cols) * r, cols).ok());
             return wt == DType::kF8_E4M3 ? env.put(codes, wt, {rows, cols}, scale.data(), 1)
                                          : env.put(codes, wt, {rows, cols});
           };
           const TensorView w_uk = weight(uk_f, uk_codes, nh * lora, nope);
           const TensorView w_uv = weight(uv_f, uv_codes, nh * vd, lora);
           const std::vector<float> lat_f = random_floats(n_slots * (lora + rope), 19);
           std::vector<uint8_t> lat = zero_cache(kv, n_slots, lora + rope);
           EXPECT_TRUE(quantize_row(kv, lat_f.data(), lat.data(), static_cast<int64_t>(lat_f.size())).ok());
           std::vector<int32_t> tables = {2, 0, 3, 0}, seqs = {0, 1, 6, 1, 3, 0};
           std::vector<float> q = random_floats(4 * nh * (nope + rope), 20), out(4 * nh * vd);
           const hal::AttnBatch b = attn_batch(env, seqs, tables, 2);
           hal::MlaParams p{nh, nope, rope, vd, lora, 0.3f, bs};
           const TensorView ov = env.f32(out, {4, nh * vd});
           EXPECT_TRUE(t.attention_mla(c, p, b, env.f32(q, {4, nh, nope + rope}), w_uk, w_uv,
                                       env.put(lat, kv, {n_slots, lora + rope}), ov)
                           .ok());
           return env.get(ov);
         },
         kv});
  }
}

std::vector<OpCase> op_cases() {
  std::vector<OpCase> cases;
  cases.push_back({"rms_norm", 1e-5f, [](const hal::OpTable& t, const hal::OpContext& c, Env& env) {
                     std::vector<float> x = random_floats(5 * 96, 2), w = random_floats(96, 3), out(5 * 96);
                     const TensorView ov = env.f32(out, {5, 96});
                     EXPECT_TRUE(t.rms_norm(c, env.f32(x, {5, 96}), env.f32(w, {96}), 1e-6f, ov).ok());
                     return env.get(ov);
                   }});
  for (int32_t style : {hal::RopeStyle::kNorm, hal::RopeStyle::kNeox}) {
    for (float yarn : {1.0f, 4.0f}) {
      std::string name =
          std::string("rope_") + (style == hal::RopeStyle::kNorm ? "norm" : "neox") + (yarn > 1 ? "_yarn" : "");
      cases.push_back({name, 2e-5f, [style, yarn](const hal::OpTable& t, const hal::OpContext& c, Env& env) {
                         std::vector<float> x = random_floats(3 * 4 * 16, 4);
                         std::vector<int32_t> pos = {0, 7, 300};
                         RopeFreqConfig fc;
                         fc.n_rot = 10;
                         fc.yarn_factor = yarn;
                         fc.yarn_orig_ctx = 256;
                         std::vector<float> inv_freq = rope_inv_freqs(fc);
                         hal::RopeParams p;
                         p.style = style;
                         p.n_rot = 10;  // partial rotation: dims 0..1 and 12..15 pass through
                         p.rot_offset = 2;
                         p.mscale = yarn > 1 ? 1.1f : 1.0f;
                         const TensorView xv = env.f32(x, {3, 4, 16});
                         EXPECT_TRUE(t.rope(c, xv, env.i32(pos, {3}), env.f32(inv_freq, {5}), p).ok());
                         return env.get(xv);
                       }});
    }
  }
  cases.push_back({"add_swiglu", 1e-6f, [](const hal::OpTable& t, const hal::OpContext& c, Env& env) {
                     std::vector<float> a = random_floats(1000, 8), b = random_floats(1000, 9), s(1000), g(1000);
                     const TensorView av = env.f32(a, {1000}), sv = env.f32(s, {1000}), gv = env.f32(g, {1000});
                     EXPECT_TRUE(t.add(c, av, env.f32(b, {1000}), sv).ok());
                     EXPECT_TRUE(t.swiglu(c, av, sv, gv).ok());
                     std::vector<float> out = env.get(sv), gated = env.get(gv);
                     out.insert(out.end(), gated.begin(), gated.end());
                     return out;
                   }});
  cases.push_back({"copy_cols", 0.0f, [](const hal::OpTable& t, const hal::OpContext& c, Env& env) {
                     std::vector<float> src = random_floats(3 * 10, 21), dst(3 * 7, 0.5f);
                     const TensorView dv = env.f32(dst, {3, 7});
                     EXPECT_TRUE(t.copy_cols(c, env.f32(src, {3, 10}), 4, dv, 2, 5).ok());
                     return env.get(dv);
                   }});
  cases.push_back({"softmax", 1e-6f, [](const hal::OpTable& t, const hal::OpContext& c, Env& env) {
                     std::vector<float> x = random_floats(4 * 50, 10, 5.0f);
                     const TensorView xv = env.f32(x, {4, 50});
                     EXPECT_TRUE(t.softmax(c, xv).ok());
                     return env.get(xv);
                   }});
  add_weight_cases(cases);
  add_attention_cases(cases);
  add_moe_cases(cases);
  add_expert_range_case(cases);
  return cases;
}

// Every device of every backend that implements the whole op table, host-visible or not (those get their tensors
// through Env's uploads). Plugins next to the test binary are loaded first (the simt backend among them).
std::vector<hal::Device*> all_devices() {
  static const std::vector<hal::Device*> devices = [] {
    hal::Registry& reg = hal::Registry::global();
    reg.load_plugins_from_default_paths();
    std::vector<hal::Device*> out;
    for (const auto& backend : reg.backends())
      for (hal::Device* dev : backend->devices()) {
        bool complete = true;
        for (int op = 0; op < static_cast<int>(hal::OpId::kCount); ++op)
          complete &= dev->supports(static_cast<hal::OpId>(op));
        if (complete)
          out.push_back(dev);
        else
          std::printf("skipping %s: it leaves ops out (a partial test backend)\n", dev->name().c_str());
      }
    return out;
  }();
  return devices;
}

TEST(BackendOps, SimtBackendIsTested) {
  bool found = false;
  for (hal::Device* dev : all_devices()) found |= dev->name() == "simt:0";
  EXPECT_TRUE(found) << "libcai-backend-simt.so was not found next to the test binary";
}

TEST(BackendOps, EveryBackendMatchesReference) {
  const hal::OpTable& ref = ops::ref::op_table();
  int n_checked = 0;
  for (hal::Device* dev : all_devices()) {
    for (const OpCase& oc : op_cases()) {
      if (!dev->supports_kv_dtype(oc.kv)) continue;
      SCOPED_TRACE(dev->name() + " " + oc.name);
      Env host(nullptr), on_device(dev);
      std::vector<float> want = oc.run(ref, hal::OpContext{}, host);
      std::vector<float> got = oc.run(dev->ops(), dev->op_context(), on_device);
      expect_close(got, want, oc.tol, oc.name);
      ++n_checked;
    }
  }
  EXPECT_GE(n_checked, static_cast<int>(op_cases().size()));  // the CPU runs every case
}

// The reference's meaning of expert_begin: a layer's experts split into stacks [0, 2) and [2, 5) give partial sums
// that add up to the whole stack's output (up to the order of the additions).
TEST(BackendOps, ExpertRangesAddUpToTheWholeLayer) {
  const hal::OpTable& ref = ops::ref::op_table();
  const int n_e = 5, hidden = 64, ffn = 64, n = 7, k = 2;
  ExpertSet s = random_experts(DType::kQ8_0, n_e, hidden, ffn);
  const size_t slab = row_bytes(DType::kQ8_0, hidden) * ffn;
  std::vector<float> x = random_floats(n * hidden, 16), w = random_floats(n * k, 17);
  std::vector<int32_t> ids = {0, 3, 3, 1, 4, 0, 2, 3, 1, 4, 0, 1, 3, 2};
  Env env(nullptr);
  auto run = [&](int first, int count) {
    auto part = [&](const std::vector<uint8_t>& v) {
      return std::vector<uint8_t>(v.begin() + first * slab, v.begin() + (first + count) * slab);
    };
    std::vector<uint8_t> gate = part(s.gate), up = part(s.up), down = part(s.down);
    hal::ExpertWeights ew;
    ew.gate = env.put(gate, DType::kQ8_0, {count, ffn, hidden});
    ew.up = env.put(up, DType::kQ8_0, {count, ffn, hidden});
    ew.down = env.put(down, DType::kQ8_0, {count, hidden, ffn});
    ew.expert_begin = first;
    std::vector<float> out(n * hidden);
    EXPECT_TRUE(ref.sparse_moe({}, ew, env.f32(x, {n, hidden}), env.i32(ids, {n, k}), env.f32(w, {n, k}),
                               env.f32(out, {n, hidden}))
                    .ok());
    return out;
  };
  const std::vector<float> whole = run(0, n_e), low = run(0, 2), high = run(2, 3);
  std::vector<float> sum(whole.size());
  for (size_t i = 0; i < sum.size(); ++i) sum[i] = low[i] + high[i];
  expect_close(sum, whole, 1e-6f, "expert ranges");
  EXPECT_NE(low, whole);  // each range alone is a part of it
}

TEST(BackendOps, CpuRejectsBadInput) {
  hal::Device* cpu = hal::Registry::global().find_device("cpu").value();
  const hal::OpTable& t = cpu->ops();
  std::vector<float> table(4 * 8), out(8);
  std::vector<int32_t> bad = {4};
  Env env(cpu);
  EXPECT_FALSE(t.embed(cpu->op_context(), view(table, {4, 8}), env.i32(bad, {1}), view(out, {1, 8})).ok());
  std::vector<float> cache(4 * 8), src(8);
  std::vector<int32_t> slot = {9};
  EXPECT_FALSE(t.kv_write(cpu->op_context(), view(src, {1, 8}), env.i32(slot, {1}), view(cache, {4, 8})).ok());
}

// A KV cache is F32, F16, BF16 or Q8_0: kv_write into Q4_0 is unsupported in the reference and on every device, and
// into Q8_0 on the devices that say they lack it (the GPU plugins; Device::supports_kv_dtype).
TEST(BackendOps, KvCacheOfOtherDtypeIsUnsupported) {
  std::vector<std::pair<const hal::OpTable*, hal::Device*>> tables = {{&ops::ref::op_table(), nullptr}};
  for (hal::Device* dev : all_devices()) tables.push_back({&dev->ops(), dev});
  for (auto [t, dev] : tables) {
    for (DType kv : {DType::kQ4_0, DType::kQ8_0}) {
      const bool taken = kv == DType::kQ8_0 && (!dev || dev->supports_kv_dtype(kv));
      SCOPED_TRACE((dev ? dev->name() : "reference") + " " + std::string(dtype_name(kv)));
      Env env(dev);
      std::vector<float> src(32);
      std::vector<int32_t> slot = {1};
      std::vector<uint8_t> cache(row_bytes(kv, 32) * 2);
      const Status st = t->kv_write(dev ? dev->op_context() : hal::OpContext{}, env.f32(src, {1, 32}),
                                    env.i32(slot, {1}), env.put(cache, kv, {2, 32}));
      EXPECT_EQ(st.code(), taken ? StatusCode::kOk : StatusCode::kUnsupported) << st.to_string();
      if (!taken) EXPECT_NE(st.message().find("not supported"), std::string::npos) << st.to_string();
    }
  }
  EXPECT_TRUE(hal::Registry::global().find_device("cpu").value()->supports_kv_dtype(DType::kQ8_0));
}

// Q8_0 rows are read per head / latent part: parts that are not whole 32-element blocks are refused.
TEST(BackendOps, CpuQ8_0KvNeedsWholeBlocksPerHead) {
  hal::Device* cpu = hal::Registry::global().find_device("cpu").value();
  Env env(cpu);
  std::vector<float> q(4 * 16), out(4 * 16);
  std::vector<uint8_t> cache(row_bytes(DType::kQ8_0, 64) * 4);
  std::vector<int32_t> seqs = {0, 1, 0}, tables = {0};
  const hal::AttnBatch b = attn_batch(env, seqs, tables, 1);
  const TensorView kc = env.put(cache, DType::kQ8_0, {4, 64});
  const Status st = cpu->ops().attention_gqa(cpu->op_context(), hal::AttentionParams{4, 4, 16, 16, 0.25f, 4}, b,
                                             view(q, {1, 4, 16}), kc, kc, view(out, {1, 4, 16}));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  EXPECT_NE(st.message().find("whole blocks of 32, not 16"), std::string::npos) << st.to_string();
  std::vector<float> lat_q(1 * 2 * (8 + 24)), uk(2 * 40 * 8, 0.0f), uv(2 * 8 * 40, 0.0f), lat_out(2 * 8);
  std::vector<uint8_t> lat(row_bytes(DType::kQ8_0, 64) * 4);  // kv_lora 40 + qk_rope 24 = 64: blocks straddle the split
  const Status mla = cpu->ops().attention_mla(cpu->op_context(), hal::MlaParams{2, 8, 24, 8, 40, 0.3f, 4}, b,
                                              view(lat_q, {1, 2, 32}), view(uk, {80, 8}), view(uv, {16, 40}),
                                              env.put(lat, DType::kQ8_0, {4, 64}), view(lat_out, {1, 16}));
  EXPECT_EQ(mla.code(), StatusCode::kInvalidArgument) << mla.to_string();
}

}  // namespace
}  // namespace cai

namespace cai {
namespace {

// With OpContext::batch_invariant every row of a batch equals the same row computed alone, bit for bit, on every
// backend. On the CPU 16 rows run the fused path, 37 rows the tiled one (the decoded-weight tile buffer, several
// column chunks and padded panels); bias included.
TEST(BackendOps, DenseGemmBatchInvariance) {
  for (hal::Device* dev : all_devices()) {
    hal::OpContext ctx = dev->op_context();
    dev->set_batch_invariant(true);
    ctx = dev->op_context();
    ctx.batch_invariant = true;
    for (DType dt : {DType::kF32, DType::kF16, DType::kQ8_0, DType::kQ4_K, DType::kQ6_K, DType::kBF16})
      for (auto [n, in] : {std::pair<int64_t, int64_t>{16, 256}, {37, 1280}}) {
        const int64_t out = 40;
        Env env(dev);
        std::vector<uint8_t> w = random_weight(dt, out, in, 30);
        std::vector<float> bias = random_floats(out, 32);
        const TensorView wv = env.put(w, dt, {out, in}), bv = env.f32(bias, {out});
        std::vector<float> x = random_floats(static_cast<size_t>(n * in), 31), y(static_cast<size_t>(n * out));
        const TensorView yv = env.f32(y, {n, out});
        ASSERT_TRUE(dev->ops().dense_gemm(ctx, wv, env.f32(x, {n, in}), &bv, yv).ok());
        const std::vector<float> all = env.get(yv);
        for (int64_t i = 0; i < n; ++i) {
          std::vector<float> xi(x.begin() + i * in, x.begin() + (i + 1) * in), y1(static_cast<size_t>(out));
          const TensorView y1v = env.f32(y1, {1, out});
          ASSERT_TRUE(dev->ops().dense_gemm(ctx, wv, env.f32(xi, {1, in}), &bv, y1v).ok());
          const std::vector<float> solo = env.get(y1v);
          EXPECT_EQ(0, std::memcmp(solo.data(), &all[static_cast<size_t>(i * out)], out * sizeof(float)))
              << dev->name() << " " << dtype_name(dt) << " n " << n << " row " << i;
        }
      }
    dev->set_batch_invariant(false);
  }
}

}  // namespace
}  // namespace cai
