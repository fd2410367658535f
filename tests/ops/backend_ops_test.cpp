// Every op of every registered backend against the scalar reference (ops/ref): the op table check `cai doctor` runs
// (src/doctor/op_check.h), here on every backend; and the reference's own meaning of a few ops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "core/quant.h"
#include "doctor/op_check.h"
#include "hal/hal.h"
#include "ops/ref/ref_ops.h"

namespace cai {
namespace {

using doctor::attn_batch;
using doctor::CaseTensors;
using doctor::ExpertSet;
using doctor::random_experts;
using doctor::random_floats;
using doctor::random_weight;

TensorView view(std::vector<float>& v, std::initializer_list<int64_t> shape) {
  return TensorView::make(v.data(), DType::kF32, shape);
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, float tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1.0f + std::fabs(want[i]))) << what << " at " << i;
}

// Every device of every backend that implements the whole op table, host-visible or not (those get their tensors
// through CaseTensors' uploads). Plugins next to the test binary are loaded first (the simt backend among them).
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
  const std::vector<doctor::OpCase> cases = doctor::op_cases();
  for (hal::Device* dev : all_devices()) {
    for (const doctor::OpCase& oc : cases) {
      const doctor::CaseResult r = doctor::run_op_case(oc, *dev);
      // A complete backend runs every case but the KV cache dtypes it does not take.
      if (!dev->supports_kv_dtype(oc.kv)) {
        EXPECT_EQ(r.outcome, doctor::CaseOutcome::kSkipped) << dev->name() << " " << oc.name;
        continue;
      }
      EXPECT_EQ(r.outcome, doctor::CaseOutcome::kPass) << dev->name() << " " << oc.name << ": " << r.detail;
      EXPECT_LE(r.worst, 1.0) << dev->name() << " " << oc.name;
    }
  }
}

// The check fails a case whose values are off, naming where, and one whose op errs, with the error.
TEST(BackendOps, CheckNamesAWrongValueAndAFailingOp) {
  hal::Device* cpu = hal::Registry::global().find_device("cpu").value();
  doctor::OpCase off;
  off.name = "off_by_one";
  off.tol = 1e-6f;
  off.ops = {hal::OpId::kAdd};
  off.run = [](const hal::OpTable& t, const hal::OpContext& c, CaseTensors& ts) -> Result<std::vector<float>> {
    std::vector<float> a = {1, 2, 3}, b = {1, 1, 1}, out(3);
    const TensorView o = ts.f32(out, {3});
    CAI_TRY(t.add(c, ts.f32(a, {3}), ts.f32(b, {3}), o));
    std::vector<float> v = ts.get(o);
    if (&t != &ops::ref::op_table()) v[2] += 1;  // the device's answer is wrong at 2
    return v;
  };
  doctor::CaseResult r = doctor::run_op_case(off, *cpu);
  EXPECT_EQ(r.outcome, doctor::CaseOutcome::kFail);
  EXPECT_NE(r.detail.find("at 2 of 3: got 5, want 4"), std::string::npos) << r.detail;
  doctor::OpCase bad;
  bad.name = "bad_ids";
  bad.ops = {hal::OpId::kEmbed};
  bad.run = [](const hal::OpTable& t, const hal::OpContext& c, CaseTensors& ts) -> Result<std::vector<float>> {
    std::vector<float> table(4 * 8), out(8);
    std::vector<int32_t> ids = {&t == &ops::ref::op_table() ? 1 : 9};  // out of range on the device only
    const TensorView o = ts.f32(out, {1, 8});
    CAI_TRY(t.embed(c, ts.f32(table, {4, 8}), ts.i32(ids, {1}), o));
    return ts.get(o);
  };
  r = doctor::run_op_case(bad, *cpu);
  EXPECT_EQ(r.outcome, doctor::CaseOutcome::kFail);
  EXPECT_NE(r.detail.find("9"), std::string::npos) << r.detail;
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
  CaseTensors env(nullptr);
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
  CaseTensors env(cpu);
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
      CaseTensors env(dev);
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
  CaseTensors env(cpu);
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
        CaseTensors env(dev);
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
