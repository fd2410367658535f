// Every op of every registered backend against the scalar reference (ops/ref), table-driven.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "core/quant.h"
#include "hal/hal.h"
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

void expect_close(const std::vector<float>& got, const std::vector<float>& want, float tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1.0f + std::fabs(want[i]))) << what << " at " << i;
}

// One case: runs `fn` with the backend's table and with the reference table on separate copies of `inputs`
// (the op may modify them in place) and compares the returned output vectors.
struct OpCase {
  std::string name;
  float tol;
  std::function<std::vector<float>(const hal::OpTable&, const hal::OpContext&)> run;
};

std::vector<OpCase> op_cases() {
  std::vector<OpCase> cases;
  cases.push_back({"embed_q8_0", 1e-6f, [](const hal::OpTable& t, const hal::OpContext& c) {
                     std::vector<float> src = random_floats(64 * 10, 1);
                     std::vector<uint8_t> q(row_bytes(DType::kQ8_0, 64) * 10);
                     EXPECT_TRUE(quantize_row(DType::kQ8_0, src.data(), q.data(), 64 * 10).ok());
                     TensorView table = TensorView::make(q.data(), DType::kQ8_0, {10, 64});
                     std::vector<int32_t> ids = {3, 0, 9, 3};
                     std::vector<float> out(4 * 64);
                     EXPECT_TRUE(t.embed(c, table, ids.data(), 4, view(out, {4, 64})).ok());
                     return out;
                   }});
  cases.push_back({"rms_norm", 1e-5f, [](const hal::OpTable& t, const hal::OpContext& c) {
                     std::vector<float> x = random_floats(5 * 96, 2), w = random_floats(96, 3), out(5 * 96);
                     EXPECT_TRUE(t.rms_norm(c, view(x, {5, 96}), view(w, {96}), 1e-6f, view(out, {5, 96})).ok());
                     return out;
                   }});
  for (auto style : {hal::RopeStyle::kNorm, hal::RopeStyle::kNeox}) {
    for (float yarn : {1.0f, 4.0f}) {
      std::string name = std::string("rope_") + (style == hal::RopeStyle::kNorm ? "norm" : "neox") + (yarn > 1 ? "_yarn" : "");
      cases.push_back({name, 2e-5f, [style, yarn](const hal::OpTable& t, const hal::OpContext& c) {
                         std::vector<float> x = random_floats(3 * 4 * 16, 4);
                         std::vector<int32_t> pos = {0, 7, 300};
                         hal::RopeParams p;
                         p.style = style;
                         p.n_rot = 10;  // partial rotation: dims 0..1 and 12..15 pass through
                         p.rot_offset = 2;
                         p.yarn_factor = yarn;
                         p.yarn_orig_ctx = 256;
                         p.mscale = yarn > 1 ? 1.1f : 1.0f;
                         EXPECT_TRUE(t.rope(c, view(x, {3, 4, 16}), pos.data(), p).ok());
                         return x;
                       }});
    }
  }
  cases.push_back({"dense_gemm_f32_bias", 1e-5f, [](const hal::OpTable& t, const hal::OpContext& c) {
                     std::vector<float> w = random_floats(33 * 64, 5), x = random_floats(3 * 64, 6), b = random_floats(33, 7);
                     std::vector<float> y(3 * 33);
                     TensorView bias = view(b, {33});
                     EXPECT_TRUE(t.dense_gemm(c, view(w, {33, 64}), view(x, {3, 64}), &bias, view(y, {3, 33})).ok());
                     return y;
                   }});
  cases.push_back({"add_swiglu", 1e-6f, [](const hal::OpTable& t, const hal::OpContext& c) {
                     std::vector<float> a = random_floats(1000, 8), b = random_floats(1000, 9), s(1000), g(1000);
                     EXPECT_TRUE(t.add(c, view(a, {1000}), view(b, {1000}), view(s, {1000})).ok());
                     EXPECT_TRUE(t.swiglu(c, view(a, {1000}), view(s, {1000}), view(g, {1000})).ok());
                     s.insert(s.end(), g.begin(), g.end());
                     return s;
                   }});
  cases.push_back({"copy_cols", 0.0f, [](const hal::OpTable& t, const hal::OpContext& c) {
                     std::vector<float> src = random_floats(3 * 10, 21), dst(3 * 7, 0.5f);
                     EXPECT_TRUE(t.copy_cols(c, view(src, {3, 10}), 4, view(dst, {3, 7}), 2, 5).ok());
                     return dst;
                   }});
  cases.push_back({"softmax", 1e-6f, [](const hal::OpTable& t, const hal::OpContext& c) {
                     std::vector<float> x = random_floats(4 * 50, 10, 5.0f);
                     EXPECT_TRUE(t.softmax(c, view(x, {4, 50})).ok());
                     return x;
                   }});
  cases.push_back({"kv_write_attention_gqa", 2e-5f, [](const hal::OpTable& t, const hal::OpContext& c) {
                     // Two sequences over a paged cache of 6 blocks × 4 slots with scrambled block tables.
                     const int nh = 4, nkv = 2, hd = 8, bs = 4, n_slots = 24;
                     std::vector<float> kc(n_slots * nkv * hd, 0.0f), vc(n_slots * nkv * hd, 0.0f);
                     std::vector<int32_t> bt0 = {5, 1, 3}, bt1 = {0, 4};
                     // seq0: 9 tokens already cached + 2 new; seq1: 5 new (prefill).
                     std::vector<float> knew = random_floats(16 * nkv * hd, 11), vnew = random_floats(16 * nkv * hd, 12);
                     std::vector<int32_t> slots;
                     for (int p = 0; p < 11; ++p) slots.push_back(bt0[p / bs] * bs + p % bs);
                     for (int p = 0; p < 5; ++p) slots.push_back(bt1[p / bs] * bs + p % bs);
                     EXPECT_TRUE(t.kv_write(c, view(knew, {16, nkv * hd}), slots.data(), view(kc, {n_slots, nkv * hd})).ok());
                     EXPECT_TRUE(t.kv_write(c, view(vnew, {16, nkv * hd}), slots.data(), view(vc, {n_slots, nkv * hd})).ok());
                     std::vector<float> q = random_floats(7 * nh * hd, 13), out(7 * nh * hd);
                     hal::AttnSeq seqs[2] = {{0, 2, 9, bt0.data()}, {2, 5, 0, bt1.data()}};
                     hal::AttentionParams p{nh, nkv, hd, hd, 0.35f, bs};
                     EXPECT_TRUE(t.attention_gqa(c, p, seqs, 2, view(q, {7, nh, hd}), view(kc, {n_slots, nkv, hd}),
                                                 view(vc, {n_slots, nkv, hd}), view(out, {7, nh, hd})).ok());
                     return out;
                   }});
  for (bool sigmoid : {true, false}) {
    cases.push_back({sigmoid ? "moe_gate_sigmoid_groups_bias" : "moe_gate_softmax", 1e-6f,
                     [sigmoid](const hal::OpTable& t, const hal::OpContext& c) {
                       const int n = 6, n_e = 16, k = 4;
                       std::vector<float> logits = random_floats(n * n_e, 14, 2.0f), bias = random_floats(n_e, 15, 0.3f);
                       std::vector<int32_t> ids(n * k);
                       std::vector<float> w(n * k);
                       hal::MoeGateParams p{n_e, k, sigmoid ? 4 : 1, sigmoid ? 2 : 1, sigmoid, true, 2.5f};
                       TensorView bv = view(bias, {n_e});
                       EXPECT_TRUE(t.moe_gate(c, p, view(logits, {n, n_e}), sigmoid ? &bv : nullptr,
                                              TensorView::make(ids.data(), DType::kI32, {n, k}), view(w, {n, k})).ok());
                       for (int32_t id : ids) w.push_back(static_cast<float>(id));
                       return w;
                     }});
  }
  cases.push_back({"sparse_moe_q8_0", 2e-5f, [](const hal::OpTable& t, const hal::OpContext& c) {
                     const int n_e = 5, hidden = 64, ffn = 32, n = 7, k = 2;
                     std::vector<std::vector<uint8_t>> store;
                     std::vector<TensorView> gate, up, down;
                     for (int e = 0; e < n_e; ++e) {
                       for (auto [rows, cols, list] : {std::tuple{ffn, hidden, &gate}, std::tuple{ffn, hidden, &up},
                                                       std::tuple{hidden, ffn, &down}}) {
                         std::vector<float> f = random_floats(static_cast<size_t>(rows * cols), 100 + store.size(), 0.2f);
                         store.emplace_back(row_bytes(DType::kQ8_0, cols) * rows);
                         EXPECT_TRUE(quantize_row(DType::kQ8_0, f.data(), store.back().data(), rows * cols).ok());
                         list->push_back(TensorView::make(store.back().data(), DType::kQ8_0, {rows, cols}));
                       }
                     }
                     std::vector<float> x = random_floats(n * hidden, 16), w = random_floats(n * k, 17), out(n * hidden);
                     std::vector<int32_t> ids = {0, 3, 3, 1, 4, 0, 2, 3, 1, 4, 0, 1, 3, 2};
                     hal::ExpertWeights ew{gate.data(), up.data(), down.data(), n_e};
                     EXPECT_TRUE(t.sparse_moe(c, ew, view(x, {n, hidden}), TensorView::make(ids.data(), DType::kI32, {n, k}),
                                              view(w, {n, k}), view(out, {n, hidden})).ok());
                     return out;
                   }});
  for (bool fp8 : {false, true}) {
    cases.push_back({fp8 ? "attention_mla_fp8_kv_b" : "attention_mla_f32", 5e-5f,
                     [fp8](const hal::OpTable& t, const hal::OpContext& c) {
                       // The reference is the naive (expanded) form; backends use the absorbed one.
                       const int nh = 3, nope = 8, rope = 4, vd = 6, lora = 16, bs = 4, n_slots = 16;
                       std::vector<float> kvb = random_floats(nh * (nope + vd) * lora, 18, 0.5f);
                       std::vector<uint8_t> codes(kvb.size());
                       std::vector<float> scale = {0.02f};
                       TensorView kv_b = view(kvb, {nh * (nope + vd), lora});
                       if (fp8) {
                         std::vector<float> unscaled(kvb.size());
                         for (size_t i = 0; i < kvb.size(); ++i) unscaled[i] = kvb[i] / scale[0];
                         EXPECT_TRUE(quantize_row(DType::kF8_E4M3, unscaled.data(), codes.data(), static_cast<int64_t>(codes.size())).ok());
                         kv_b = TensorView::make(codes.data(), DType::kF8_E4M3, {nh * (nope + vd), lora});
                         kv_b.scale = scale.data();
                       }
                       std::vector<float> lat = random_floats(n_slots * (lora + rope), 19);
                       std::vector<int32_t> bt0 = {2, 0}, bt1 = {3};
                       std::vector<float> q = random_floats(4 * nh * (nope + rope), 20), out(4 * nh * vd);
                       hal::AttnSeq seqs[2] = {{0, 1, 6, bt0.data()}, {1, 3, 0, bt1.data()}};
                       hal::MlaParams p{nh, nope, rope, vd, lora, 0.3f, bs};
                       EXPECT_TRUE(t.attention_mla(c, p, seqs, 2, view(q, {4, nh, nope + rope}), kv_b,
                                                   view(lat, {n_slots, lora + rope}), view(out, {4, nh * vd})).ok());
                       return out;
                     }});
  }
  return cases;
}

TEST(BackendOps, EveryBackendMatchesReference) {
  hal::Registry& reg = hal::Registry::global();
  ASSERT_FALSE(reg.backends().empty());
  const hal::OpTable& ref = ops::ref::op_table();
  int n_checked = 0;
  for (const auto& backend : reg.backends()) {
    for (hal::Device* dev : backend->devices()) {
      if (!dev->host_visible()) continue;  // device backends are checked through their own copy helpers
      for (const OpCase& oc : op_cases()) {
        SCOPED_TRACE(dev->name() + " " + oc.name);
        std::vector<float> want = oc.run(ref, hal::OpContext{});
        std::vector<float> got = oc.run(dev->ops(), dev->op_context());
        expect_close(got, want, oc.tol, oc.name);
        ++n_checked;
      }
    }
  }
  EXPECT_GE(n_checked, static_cast<int>(op_cases().size()));
}

TEST(BackendOps, CpuRejectsBadInput) {
  hal::Device* cpu = hal::Registry::global().find_device("cpu").value();
  const hal::OpTable& t = cpu->ops();
  std::vector<float> table(4 * 8), out(8);
  std::vector<int32_t> bad = {4};
  EXPECT_FALSE(t.embed(cpu->op_context(), view(table, {4, 8}), bad.data(), 1, view(out, {1, 8})).ok());
  std::vector<float> cache(4 * 8), src(8);
  std::vector<int32_t> slot = {9};
  EXPECT_FALSE(t.kv_write(cpu->op_context(), view(src, {1, 8}), slot.data(), view(cache, {4, 8})).ok());
}

}  // namespace
}  // namespace cai

namespace cai {
namespace {

// With OpContext::batch_invariant, a row's GEMM result is bit-identical alone and inside a batch of 16.
// Every row of a batch equals the same row computed alone, bit for bit: 16 rows run the fused path, 37 rows the tiled
// one (the decoded-weight tile buffer, several column chunks and padded panels); bias included.
TEST(BackendOps, DenseGemmBatchInvariance) {
  hal::Device* cpu = hal::Registry::global().find_device("cpu").value();
  hal::OpContext ctx = cpu->op_context();
  ctx.batch_invariant = true;
  for (DType dt : {DType::kF32, DType::kF16, DType::kQ8_0, DType::kQ4_K, DType::kQ6_K, DType::kBF16})
    for (auto [n, in] : {std::pair<int64_t, int64_t>{16, 256}, {37, 1280}}) {
      const int64_t out = 40;
      std::vector<float> wf = random_floats(out * in, 30), bias = random_floats(out, 32);
      std::vector<uint8_t> w(row_bytes(dt, in) * out);
      ASSERT_TRUE(quantize_row(dt, wf.data(), w.data(), out * in).ok() || dt == DType::kF32);
      if (dt == DType::kF32) std::memcpy(w.data(), wf.data(), w.size());
      const TensorView wv = TensorView::make(w.data(), dt, {out, in}), bv = view(bias, {out});
      std::vector<float> x = random_floats(n * in, 31), y(n * out), y1(out);
      ASSERT_TRUE(cpu->ops().dense_gemm(ctx, wv, view(x, {n, in}), &bv, view(y, {n, out})).ok());
      for (int64_t i = 0; i < n; ++i) {
        std::vector<float> xi(x.begin() + i * in, x.begin() + (i + 1) * in);
        ASSERT_TRUE(cpu->ops().dense_gemm(ctx, wv, view(xi, {1, in}), &bv, view(y1, {1, out})).ok());
        EXPECT_EQ(0, std::memcmp(y1.data(), &y[static_cast<size_t>(i * out)], out * sizeof(float)))
            << dtype_name(dt) << " n " << n << " row " << i;
      }
    }
}

}  // namespace
}  // namespace cai
