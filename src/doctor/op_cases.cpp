// The built-in cases of the op table check: small shapes that still cross the kernels' block boundaries (several
// 128-blocks of FP8 scales, decode- and prefill-shaped GEMMs, paged caches with scrambled block tables).
#include <algorithm>
#include <cstring>
#include <random>
#include <tuple>

#include "core/quant.h"
#include "doctor/op_check.h"
#include "model/rope_freqs.h"

namespace cai::doctor {

std::vector<float> random_floats(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::vector<uint8_t> random_weight(DType dt, int64_t rows, int64_t cols, uint32_t seed, float scale) {
  std::vector<float> f = random_floats(static_cast<size_t>(rows * cols), seed, scale);
  std::vector<uint8_t> w(row_bytes(dt, cols) * static_cast<size_t>(rows));
  if (dt == DType::kF32) {
    std::memcpy(w.data(), f.data(), w.size());
  } else {
    const Status st = quantize_row(dt, f.data(), w.data(), rows * cols);
    CAI_CHECK(st.ok(), "quantizing a check's {} weight: {}", dtype_name(dt), st.to_string());
  }
  return w;
}

std::vector<float> fp8_scales(int64_t rows, int64_t cols) {
  std::vector<float> s(static_cast<size_t>(((rows + 127) / 128) * ((cols + 127) / 128)));
  for (size_t i = 0; i < s.size(); ++i) s[i] = 0.01f * static_cast<float>(i + 1);
  return s;
}

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

hal::AttnBatch attn_batch(CaseTensors& t, std::vector<int32_t>& seqs, std::vector<int32_t>& tables, int width) {
  hal::AttnBatch b;
  const int64_t n_seqs = static_cast<int64_t>(seqs.size() / 3);
  b.seqs = t.i32(seqs, {n_seqs, 3});
  b.block_tables = t.i32(tables, {n_seqs, width});
  for (int64_t s = 0; s < n_seqs; ++s) {
    b.max_q = std::max(b.max_q, seqs[static_cast<size_t>(s * 3 + 1)]);
    b.max_ctx = std::max(b.max_ctx, seqs[static_cast<size_t>(s * 3 + 2)] + seqs[static_cast<size_t>(s * 3 + 1)]);
  }
  return b;
}

namespace {

using hal::OpId;

// The values of several outputs, one after the other.
std::vector<float> joined(std::initializer_list<std::vector<float>> parts) {
  std::vector<float> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

constexpr DType kWeightTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0,   DType::kQ4_0,
                                  DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kF8_E4M3};

void add_weight_cases(std::vector<OpCase>& cases) {
  for (DType dt : kWeightTypes) {
    const std::string tn(dtype_name(dt));
    cases.push_back(
        {"embed_" + tn,
         1e-6f,
         {OpId::kEmbed},
         dt,
         DType::kF32,
         [dt](const hal::OpTable& t, const hal::OpContext& c, CaseTensors& ts) -> Result<std::vector<float>> {
           std::vector<uint8_t> q = random_weight(dt, 10, 256, 1);
           const TensorView table = ts.put(q, dt, {10, 256});  // embed decodes rows without block scales
           std::vector<int32_t> ids = {3, 0, 9, 3};
           std::vector<float> out(4 * 256);
           const TensorView o = ts.f32(out, {4, 256});
           CAI_TRY(t.embed(c, table, ts.i32(ids, {4}), o));
           return ts.get(o);
         }});
    // 3 rows (decode-shaped) and 20 rows (prefill-shaped); 300 outputs: several blocks of 128 for FP8 scales.
    for (int64_t n : {3, 20}) {
      cases.push_back(
          {"dense_gemm_" + tn + "_n" + std::to_string(n),
           2e-4f,
           {OpId::kDenseGemm},
           dt,
           DType::kF32,
           [dt, n](const hal::OpTable& t, const hal::OpContext& c, CaseTensors& ts) -> Result<std::vector<float>> {
             const int64_t out = 300, in = 512;
             std::vector<uint8_t> w = random_weight(dt, out, in, 5, 0.5f);
             std::vector<float> sc = fp8_scales(out, in);
             std::vector<float> x = random_floats(static_cast<size_t>(n * in), 6), b = random_floats(out, 7);
             std::vector<float> y(static_cast<size_t>(n * out));
             const TensorView bias = ts.f32(b, {out}), yv = ts.f32(y, {n, out});
             const bool fp8 = dt == DType::kF8_E4M3;
             CAI_TRY(t.dense_gemm(c, ts.put(w, dt, {out, in}, fp8 ? sc.data() : nullptr, sc.size()), ts.f32(x, {n, in}),
                                  &bias, yv));
             return ts.get(yv);
           }});
    }
  }
}

void add_moe_cases(std::vector<OpCase>& cases) {
  for (bool sigmoid : {true, false}) {
    cases.push_back(
        {sigmoid ? "moe_gate_sigmoid_groups_bias" : "moe_gate_softmax",
         1e-6f,
         {OpId::kMoeGate},
         DType::kF32,
         DType::kF32,
         [sigmoid](const hal::OpTable& t, const hal::OpContext& c, CaseTensors& ts) -> Result<std::vector<float>> {
           const int n = 6, n_e = 16, k = 4;
           std::vector<float> logits = random_floats(n * n_e, 14, 2.0f), bias = random_floats(n_e, 15, 0.3f);
           std::vector<int32_t> ids(n * k);
           std::vector<float> w(n * k);
           hal::MoeGateParams p{n_e, k, sigmoid ? 4 : 1, sigmoid ? 2 : 1, sigmoid, true, 2.5f};
           const TensorView bv = ts.f32(bias, {n_e}), iv = ts.i32(ids, {n, k}), wv = ts.f32(w, {n, k});
           CAI_TRY(t.moe_gate(c, p, ts.f32(logits, {n, n_e}), sigmoid ? &bv : nullptr, iv, wv));
           return joined({ts.get(wv), ts.get(iv)});
         }});
  }
  for (DType dt : {DType::kQ8_0, DType::kQ4_K, DType::kF8_E4M3}) {
    cases.push_back(
        {"sparse_moe_" + std::string(dtype_name(dt)),
         5e-5f,
         {OpId::kSparseMoe},
         dt,
         DType::kF32,
         [dt](const hal::OpTable& t, const hal::OpContext& c, CaseTensors& ts) -> Result<std::vector<float>> {
           const int n_e = 5, hidden = 256, ffn = 256, n = 7, k = 2;
           ExpertSet s = random_experts(dt, n_e, hidden, ffn);
           const bool fp8 = dt == DType::kF8_E4M3;
           hal::ExpertWeights ew;
           ew.gate = ts.put(s.gate, dt, {n_e, ffn, hidden}, fp8 ? s.gate_s.data() : nullptr, s.gate_s.size());
           ew.up = ts.put(s.up, dt, {n_e, ffn, hidden}, fp8 ? s.up_s.data() : nullptr, s.up_s.size());
           ew.down = ts.put(s.down, dt, {n_e, hidden, ffn}, fp8 ? s.down_s.data() : nullptr, s.down_s.size());
           std::vector<float> x = random_floats(n * hidden, 16), w = random_floats(n * k, 17), out(n * hidden);
           std::vector<int32_t> ids = {0, 3, 3, 1, 4, 0, 2, 3, 1, 4, 0, 1, 3, 2};
           const TensorView ov = ts.f32(out, {n, hidden});
           CAI_TRY(t.sparse_moe(c, ew, ts.f32(x, {n, hidden}), ts.i32(ids, {n, k}), ts.f32(w, {n, k}), ov));
           return ts.get(ov);
         }});
  }
  // Expert parallelism: a stack of experts 2..4 of the layer's 5 (expert_begin 2) computes the choices of those ids.
  cases.push_back({"sparse_moe_expert_range_q8_0",
                   5e-5f,
                   {OpId::kSparseMoe},
                   DType::kQ8_0,
                   DType::kF32,
                   [](const hal::OpTable& t, const hal::OpContext& c, CaseTensors& ts) -> Result<std::vector<float>> {
                     const int n_e = 5, first = 2, hidden = 256, ffn = 256, n = 7, k = 2;
                     ExpertSet s = random_experts(DType::kQ8_0, n_e, hidden, ffn);
                     const size_t slab = row_bytes(DType::kQ8_0, hidden) * ffn;  // gate / up / down: 256 x 256 each
                     auto tail = [&](std::vector<uint8_t>& v) { v.erase(v.begin(), v.begin() + first * slab); };
                     tail(s.gate), tail(s.up), tail(s.down);
                     hal::ExpertWeights ew;
                     ew.gate = ts.put(s.gate, DType::kQ8_0, {n_e - first, ffn, hidden});
                     ew.up = ts.put(s.up, DType::kQ8_0, {n_e - first, ffn, hidden});
                     ew.down = ts.put(s.down, DType::kQ8_0, {n_e - first, hidden, ffn});
                     ew.expert_begin = first;
                     std::vector<float> x = random_floats(n * hidden, 16), w = random_floats(n * k, 17),
                                        out(n * hidden);
                     std::vector<int32_t> ids = {0, 3, 3, 1, 4, 0, 2, 3, 1, 4, 0, 1, 3, 2};
                     const TensorView ov = ts.f32(out, {n, hidden});
                     CAI_TRY(t.sparse_moe(c, ew, ts.f32(x, {n, hidden}), ts.i32(ids, {n, k}), ts.f32(w, {n, k}), ov));
                     return ts.get(ov);
                   }});
}

// Zeroed bytes of a [rows, cols] KV cache of dtype dt.
std::vector<uint8_t> zero_cache(DType dt, int64_t rows, int64_t cols) {
  return std::vector<uint8_t>(row_bytes(dt, cols) * static_cast<size_t>(rows), 0);
}

constexpr DType kKvTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0};

// kv_write rounds exactly like the reference (the caches are compared too) and attention reads the same cache. Q8_0
// heads are whole 32-element blocks.
void add_gqa_cases(std::vector<OpCase>& cases) {
  for (DType kv : kKvTypes) {
    cases.push_back(
        {"kv_write_attention_gqa_" + std::string(dtype_name(kv)),
         2e-5f,
         {OpId::kKvWrite, OpId::kAttentionGqa},
         DType::kF32,
         kv,
         [kv](const hal::OpTable& t, const hal::OpContext& c, CaseTensors& ts) -> Result<std::vector<float>> {
           // Two sequences over a paged cache of 6 blocks × 4 slots with scrambled block tables.
           const int nh = 4, nkv = 2, hd = kv == DType::kQ8_0 ? 64 : 8, bs = 4, n_slots = 24;
           std::vector<uint8_t> kc = zero_cache(kv, n_slots, nkv * hd), vc = kc;
           std::vector<int32_t> tables = {5, 1, 3, 0, 4, 0};
           // seq0: 9 tokens already cached + 2 new; seq1: 5 new (prefill).
           std::vector<float> knew = random_floats(16 * nkv * hd, 11), vnew = random_floats(16 * nkv * hd, 12);
           std::vector<int32_t> slots;
           for (int p = 0; p < 11; ++p) slots.push_back(tables[static_cast<size_t>(p / bs)] * bs + p % bs);
           for (int p = 0; p < 5; ++p) slots.push_back(tables[static_cast<size_t>(3 + p / bs)] * bs + p % bs);
           const TensorView kcv = ts.put(kc, kv, {n_slots, nkv * hd}), vcv = ts.put(vc, kv, {n_slots, nkv * hd});
           const TensorView sv = ts.i32(slots, {16});
           CAI_TRY(t.kv_write(c, ts.f32(knew, {16, nkv * hd}), sv, kcv));
           CAI_TRY(t.kv_write(c, ts.f32(vnew, {16, nkv * hd}), sv, vcv));
           std::vector<float> q = random_floats(7 * nh * hd, 13), out(7 * nh * hd);
           std::vector<int32_t> seqs = {0, 2, 9, 2, 5, 0};
           const hal::AttnBatch b = attn_batch(ts, seqs, tables, 3);
           hal::AttentionParams p{nh, nkv, hd, hd, 0.35f, bs};
           const TensorView ov = ts.f32(out, {7, nh, hd});
           CAI_TRY(t.attention_gqa(c, p, b, ts.f32(q, {7, nh, hd}), kcv.reshaped({n_slots, nkv, hd}),
                                   vcv.reshaped({n_slots, nkv, hd}), ov));
           return joined({ts.get(ov), ts.get(kcv), ts.get(vcv)});
         }});
  }
}

// The latent cache in every KV dtype (F32 weights), FP8 (block-scaled) and Q4_0 W_UK / W_UV over an F32 latent. A Q8_0
// latent's c_kv and k_rope are whole blocks (R1: 512 + 64), as are Q4_0 rows (nope 32, kv_lora 64). The reference is
// the naive (expanded) form; backends use the absorbed one.
void add_mla_cases(std::vector<OpCase>& cases) {
  for (const auto& dtypes : {std::pair{DType::kF32, DType::kF32}, std::pair{DType::kF16, DType::kF32},
                             std::pair{DType::kBF16, DType::kF32}, std::pair{DType::kQ8_0, DType::kF32},
                             std::pair{DType::kF32, DType::kF8_E4M3}, std::pair{DType::kF32, DType::kQ4_0}}) {
    const DType kv = dtypes.first, wt = dtypes.second;  // (latent, weights); clang 14 lambdas capture no bindings
    const std::string weights = wt == DType::kF32 ? "" : "_" + std::string(dtype_name(wt)) + "_weights";
    cases.push_back(
        {"attention_mla_" + std::string(dtype_name(kv)) + weights,
         5e-5f,
         {OpId::kAttentionMla},
         wt,
         kv,
         [kv, wt](const hal::OpTable& t, const hal::OpContext& c, CaseTensors& ts) -> Result<std::vector<float>> {
           const bool q8 = kv == DType::kQ8_0, blocks = wt == DType::kQ4_0;
           const int nh = 3, nope = blocks ? 32 : 8, rope = q8 ? 32 : 4, vd = 6, lora = q8 || blocks ? 64 : 16, bs = 4,
                     n_slots = 16;
           std::vector<float> uk_f = random_floats(nh * lora * nope, 18, 0.5f),
                              uv_f = random_floats(nh * vd * lora, 17, 0.5f);
           std::vector<uint8_t> uk_codes, uv_codes;
           std::vector<float> scale = {0.02f};
           // W as wt: F32 as drawn; FP8 codes of W / scale with that one block scale; Q4_0 blocks.
           const auto weight = [&](std::vector<float>& w, std::vector<uint8_t>& codes, int64_t rows, int64_t cols) {
             if (wt == DType::kF32) return ts.f32(w, {rows, cols});
             std::vector<float> src = w;
             if (wt == DType::kF8_E4M3)
               for (float& x : src) x /= scale[0];
             codes.resize(row_bytes(wt, cols) * static_cast<size_t>(rows));
             for (int64_t r = 0; r < rows; ++r)
               CAI_CHECK(quantize_row(wt, src.data() + r * cols, codes.data() + row_bytes(wt, cols) * r, cols).ok());
             return wt == DType::kF8_E4M3 ? ts.put(codes, wt, {rows, cols}, scale.data(), 1)
                                          : ts.put(codes, wt, {rows, cols});
           };
           const TensorView w_uk = weight(uk_f, uk_codes, nh * lora, nope);
           const TensorView w_uv = weight(uv_f, uv_codes, nh * vd, lora);
           const std::vector<float> lat_f = random_floats(n_slots * (lora + rope), 19);
           std::vector<uint8_t> lat = zero_cache(kv, n_slots, lora + rope);
           CAI_TRY(quantize_row(kv, lat_f.data(), lat.data(), static_cast<int64_t>(lat_f.size())));
           std::vector<int32_t> tables = {2, 0, 3, 0}, seqs = {0, 1, 6, 1, 3, 0};
           std::vector<float> q = random_floats(4 * nh * (nope + rope), 20), out(4 * nh * vd);
           const hal::AttnBatch b = attn_batch(ts, seqs, tables, 2);
           hal::MlaParams p{nh, nope, rope, vd, lora, 0.3f, bs};
           const TensorView ov = ts.f32(out, {4, nh * vd});
           CAI_TRY(t.attention_mla(c, p, b, ts.f32(q, {4, nh, nope + rope}), w_uk, w_uv,
                                   ts.put(lat, kv, {n_slots, lora + rope}), ov));
           return ts.get(ov);
         }});
  }
}

void add_elementwise_cases(std::vector<OpCase>& cases) {
  cases.push_back({"rms_norm",
                   1e-5f,
                   {OpId::kRmsNorm},
                   DType::kF32,
                   DType::kF32,
                   [](const hal::OpTable& t, const hal::OpContext& c, CaseTensors& ts) -> Result<std::vector<float>> {
                     std::vector<float> x = random_floats(5 * 96, 2), w = random_floats(96, 3), out(5 * 96);
                     const TensorView ov = ts.f32(out, {5, 96});
                     CAI_TRY(t.rms_norm(c, ts.f32(x, {5, 96}), ts.f32(w, {96}), 1e-6f, ov));
                     return ts.get(ov);
                   }});
  for (int32_t style : {hal::RopeStyle::kNorm, hal::RopeStyle::kNeox}) {
    for (float yarn : {1.0f, 4.0f}) {
      std::string name =
          std::string("rope_") + (style == hal::RopeStyle::kNorm ? "norm" : "neox") + (yarn > 1 ? "_yarn" : "");
      cases.push_back({name,
                       2e-5f,
                       {OpId::kRope},
                       DType::kF32,
                       DType::kF32,
                       [style, yarn](const hal::OpTable& t, const hal::OpContext& c,
                                     CaseTensors& ts) -> Result<std::vector<float>> {
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
                         const TensorView xv = ts.f32(x, {3, 4, 16});
                         CAI_TRY(t.rope(c, xv, ts.i32(pos, {3}), ts.f32(inv_freq, {5}), p));
                         return ts.get(xv);
                       }});
    }
  }
  // add and swiglu: out = f(a, b) over two F32 inputs.
  using Binary =
      Status (*hal::OpTable::*)(const hal::OpContext&, const TensorView&, const TensorView&, const TensorView&);
  for (const auto& entry : {std::tuple<const char*, OpId, Binary>{"add", OpId::kAdd, &hal::OpTable::add},
                            std::tuple<const char*, OpId, Binary>{"swiglu", OpId::kSwiglu, &hal::OpTable::swiglu}}) {
    const Binary op = std::get<2>(entry);  // clang 14 lambdas capture no bindings
    cases.push_back(
        {std::get<0>(entry),
         1e-6f,
         {std::get<1>(entry)},
         DType::kF32,
         DType::kF32,
         [op](const hal::OpTable& t, const hal::OpContext& c, CaseTensors& ts) -> Result<std::vector<float>> {
           std::vector<float> a = random_floats(1000, 8), b = random_floats(1000, 9), out(1000);
           const TensorView ov = ts.f32(out, {1000});
           CAI_TRY((t.*op)(c, ts.f32(a, {1000}), ts.f32(b, {1000}), ov));
           return ts.get(ov);
         }});
  }
  cases.push_back({"copy_cols",
                   0.0f,
                   {OpId::kCopyCols},
                   DType::kF32,
                   DType::kF32,
                   [](const hal::OpTable& t, const hal::OpContext& c, CaseTensors& ts) -> Result<std::vector<float>> {
                     std::vector<float> src = random_floats(3 * 10, 21), dst(3 * 7, 0.5f);
                     const TensorView dv = ts.f32(dst, {3, 7});
                     CAI_TRY(t.copy_cols(c, ts.f32(src, {3, 10}), 4, dv, 2, 5));
                     return ts.get(dv);
                   }});
  cases.push_back({"softmax",
                   1e-6f,
                   {OpId::kSoftmax},
                   DType::kF32,
                   DType::kF32,
                   [](const hal::OpTable& t, const hal::OpContext& c, CaseTensors& ts) -> Result<std::vector<float>> {
                     std::vector<float> x = random_floats(4 * 50, 10, 5.0f);
                     const TensorView xv = ts.f32(x, {4, 50});
                     CAI_TRY(t.softmax(c, xv));
                     return ts.get(xv);
                   }});
}

}  // namespace

std::vector<OpCase> op_cases() {
  std::vector<OpCase> cases;
  add_elementwise_cases(cases);
  add_weight_cases(cases);
  add_gqa_cases(cases);
  add_mla_cases(cases);
  add_moe_cases(cases);
  return cases;
}

}  // namespace cai::doctor
