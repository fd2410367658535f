// simt tests (warp 32/64) of paged GQA and absorbed MLA attention vs the reference over F32, F16 and BF16 caches,
// batch invariance included.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "cuda/expect_close.h"
#include "cuda/simt_test_util.h"
#include "ops/ref/ref_ops.h"

namespace cai::gpu::test {
namespace {

struct SeqSpec {
  int32_t pos0, n_q;
};

// One batch of sequences over a paged cache whose blocks are handed out in shuffled order.
struct PagedBatch {
  std::vector<int32_t> seqs;    // [n, 3]: q_begin, n_q, pos0
  std::vector<int32_t> tables;  // [n, max_blocks]
  int32_t max_blocks = 0, max_q = 0, max_ctx = 0, n_tok = 0;

  int64_t n_seqs() const { return static_cast<int64_t>(seqs.size() / 3); }
  hal::AttnBatch host() {
    hal::AttnBatch b;
    b.seqs = TensorView::make(seqs.data(), DType::kI32, {n_seqs(), 3});
    b.block_tables = TensorView::make(tables.data(), DType::kI32, {n_seqs(), max_blocks});
    b.max_q = max_q;
    b.max_ctx = max_ctx;
    return b;
  }
  CaiAttnBatch upload(SimtDevice& dev) const {
    CaiAttnBatch b{};
    b.seqs = SimtDevice::tensor(dev.upload(seqs), CAI_DTYPE_I32, {n_seqs(), 3});
    b.block_tables = SimtDevice::tensor(dev.upload(tables), CAI_DTYPE_I32, {n_seqs(), max_blocks});
    b.max_q = max_q;
    b.max_ctx = max_ctx;
    return b;
  }
  // Sequence s alone, its queries at rows 0 .. n_q.
  PagedBatch single(int64_t s) const {
    PagedBatch one;
    one.seqs = {0, seqs[s * 3 + 1], seqs[s * 3 + 2]};
    one.tables.assign(tables.begin() + s * max_blocks, tables.begin() + (s + 1) * max_blocks);
    one.max_blocks = max_blocks;
    one.max_q = one.n_tok = seqs[s * 3 + 1];
    one.max_ctx = seqs[s * 3 + 1] + seqs[s * 3 + 2];
    return one;
  }
};

// The batch and the number of cache slots it needs (plus two spare blocks nobody owns).
PagedBatch make_batch(const std::vector<SeqSpec>& specs, int block_size, std::mt19937& rng, int64_t* n_slots) {
  PagedBatch b;
  for (const SeqSpec& s : specs) {
    b.max_blocks = std::max(b.max_blocks, (s.pos0 + s.n_q + block_size - 1) / block_size);
    b.max_q = std::max(b.max_q, s.n_q);
    b.max_ctx = std::max(b.max_ctx, s.pos0 + s.n_q);
  }
  const int n_blocks = static_cast<int>(specs.size()) * b.max_blocks + 2;
  std::vector<int32_t> ids(static_cast<size_t>(n_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  b.tables.assign(specs.size() * static_cast<size_t>(b.max_blocks), 0);
  size_t next = 0;
  for (size_t s = 0; s < specs.size(); ++s) {
    b.seqs.insert(b.seqs.end(), {b.n_tok, specs[s].n_q, specs[s].pos0});
    b.n_tok += specs[s].n_q;
    for (int i = 0; i < b.max_blocks; ++i) b.tables[s * static_cast<size_t>(b.max_blocks) + i] = ids[next++];
  }
  *n_slots = static_cast<int64_t>(n_blocks) * block_size;
  return b;
}

// Rows [row0, row0 + n) of a [rows, width] matrix.
std::vector<float> row_slice(const std::vector<float>& v, int64_t width, int64_t row0, int64_t n) {
  return {v.begin() + row0 * width, v.begin() + (row0 + n) * width};
}

std::vector<float> run_gqa(SimtDevice& dev, const CaiAttentionParams& p, const PagedBatch& b, std::vector<float>& q,
                           const CaiTensor& k, const CaiTensor& v) {
  CaiError err{};
  const CaiTensor dq = dev.upload_tensor(host_f32(q, {b.n_tok, p.n_head, p.head_dim}));
  const CaiTensor out = dev.zeros_f32({b.n_tok, p.n_head, p.head_dim_v});
  EXPECT_EQ(attention_gqa(dev.ctx(), p, b.upload(dev), dq, k, v, out, &err), CAI_OK) << err.message;
  return dev.download<float>(out.data, static_cast<size_t>(b.n_tok) * p.n_head * p.head_dim_v);
}

// The reference reads the same cache bytes (kv_cache: F32, F16 or BF16) as the kernel.
void check_gqa(const CaiAttentionParams& p, const std::vector<SeqSpec>& specs, DType kv_cache = DType::kF32) {
  SCOPED_TRACE("heads " + std::to_string(p.n_head) + "/" + std::to_string(p.n_kv_head) + " cache " +
               std::string(dtype_name(kv_cache)));
  std::mt19937 rng(11);
  int64_t n_slots = 0;
  PagedBatch b = make_batch(specs, p.block_size, rng, &n_slots);
  auto q = gaussian(static_cast<size_t>(b.n_tok) * p.n_head * p.head_dim, rng);
  HostWeights k = make_weights(kv_cache, {n_slots, p.n_kv_head, p.head_dim}, false, rng);
  HostWeights v = make_weights(kv_cache, {n_slots, p.n_kv_head, p.head_dim_v}, false, rng);
  std::vector<float> want(static_cast<size_t>(b.n_tok) * p.n_head * p.head_dim_v);
  const Status st =
      ops::ref::op_table().attention_gqa({}, p, b.host(), host_f32(q, {b.n_tok, p.n_head, p.head_dim}), k.view(),
                                         v.view(), host_f32(want, {b.n_tok, p.n_head, p.head_dim_v}));
  ASSERT_TRUE(st.ok()) << st.to_string();
  const int64_t q_width = static_cast<int64_t>(p.n_head) * p.head_dim, o_width = int64_t{p.n_head} * p.head_dim_v;
  for_each_warp([&](SimtDevice& dev) {
    const CaiTensor dk = dev.upload_tensor(k.view());
    const CaiTensor dv = dev.upload_tensor(v.view());
    const auto got = run_gqa(dev, p, b, q, dk, dv);
    expect_close(got, want, 1e-4f, 2e-5f, "attention_gqa");
    for (int64_t s = 0; s < b.n_seqs(); ++s) {
      const int64_t row0 = b.seqs[s * 3], n_q = b.seqs[s * 3 + 1];
      auto q_s = row_slice(q, q_width, row0, n_q);
      expect_bit_equal(run_gqa(dev, p, b.single(s), q_s, dk, dv), row_slice(got, o_width, row0, n_q),
                       "sequence " + std::to_string(s) + " alone vs batched");
    }
    dev.ctx().shared_mem_per_block = 3000;  // fewer query heads per block: same arithmetic per output
    expect_bit_equal(run_gqa(dev, p, b, q, dk, dv), got, "small shared memory");
    PagedBatch understated = b;  // a max_ctx below the real contexts: one partition then takes each whole context
    understated.max_ctx = b.max_q;
    expect_close(run_gqa(dev, p, understated, q, dk, dv), want, 1e-4f, 2e-5f, "max_ctx understated");
  });
}

TEST(CudaAttentionGqa, MatchesReferenceAndIsBatchInvariant) {
  // Prefill from 0, decode past two chunks, a mid-context chunk and a context of 1400+ positions (several context
  // partitions merged).
  check_gqa(CaiAttentionParams{8, 2, 64, 64, 0.125f, 16}, {{0, 5}, {150, 1}, {37, 3}, {1400, 2}});
  // Plain multi-head attention, q/k wider than v, block size 8, an idle sequence.
  check_gqa(CaiAttentionParams{3, 3, 48, 32, 0.2f, 8}, {{0, 1}, {5, 0}, {70, 4}});
}

TEST(CudaAttentionGqa, MergesPartitionsOverSeveralPasses) {
  // 16,500 positions: 65 partitions of 256, merged 64 weights at a time, beside a sequence of one partition.
  check_gqa(CaiAttentionParams{2, 1, 8, 8, 0.3f, 16}, {{16500, 1}, {3, 2}});
}

TEST(CudaAttentionGqa, ReadsBf16AndF16Caches) {
  for (DType kv_cache : {DType::kBF16, DType::kF16}) {
    check_gqa(CaiAttentionParams{8, 2, 64, 64, 0.125f, 16}, {{0, 5}, {150, 1}, {37, 3}, {300, 2}}, kv_cache);
    check_gqa(CaiAttentionParams{3, 3, 48, 32, 0.2f, 8}, {{0, 1}, {5, 0}, {70, 4}}, kv_cache);
  }
}

TEST(CudaAttentionGqa, RejectsBadShapes) {
  for_each_warp([&](SimtDevice& dev) {
    CaiError err{};
    const CaiAttentionParams p{4, 3, 16, 16, 1.0f, 16};  // 4 heads cannot share 3 kv heads
    const CaiTensor t = dev.zeros_f32({4, 4, 16});
    const CaiAttnBatch b{};
    EXPECT_EQ(attention_gqa(dev.ctx(), p, b, t, t, t, t, &err), CAI_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(err.message).find("attention"), std::string::npos);
    const CaiAttentionParams ok{4, 2, 16, 16, 1.0f, 16};
    const CaiTensor i32_cache = SimtDevice::tensor(t.data, CAI_DTYPE_I32, {4, 2, 16});
    EXPECT_EQ(attention_gqa(dev.ctx(), ok, b, t, i32_cache, i32_cache, t, &err), CAI_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(err.message).find("f32, f16 or bf16"), std::string::npos) << err.message;
  });
}

struct MlaCase {
  DType dtype;  // w_uk's and w_uv's
  int kv_lora;
  bool scaled;
  DType latent = DType::kF32;  // the latent cache's
  int qk_nope = 16;            // w_uk's row length
};

std::vector<float> run_mla(SimtDevice& dev, const CaiMlaParams& p, const PagedBatch& b, std::vector<float>& q,
                           const CaiTensor& w_uk, const CaiTensor& w_uv, const CaiTensor& latent) {
  CaiError err{};
  const CaiTensor dq = dev.upload_tensor(host_f32(q, {b.n_tok, p.n_head, p.qk_nope + p.qk_rope}));
  const CaiTensor out = dev.zeros_f32({b.n_tok, int64_t{p.n_head} * p.v_head_dim});
  EXPECT_EQ(attention_mla(dev.ctx(), p, b.upload(dev), dq, w_uk, w_uv, latent, out, &err), CAI_OK) << err.message;
  return dev.download<float>(out.data, static_cast<size_t>(b.n_tok) * p.n_head * p.v_head_dim);
}

void check_mla(const MlaCase& c) {
  SCOPED_TRACE(std::string(dtype_name(c.dtype)) + " kv_lora " + std::to_string(c.kv_lora) + " nope " +
               std::to_string(c.qk_nope) + " latent " + std::string(dtype_name(c.latent)));
  std::mt19937 rng(12);
  const CaiMlaParams p{4, c.qk_nope, 8, 12, c.kv_lora, 0.1f, 16};
  const int qk = p.qk_nope + p.qk_rope, width = p.kv_lora + p.qk_rope;
  int64_t n_slots = 0;
  PagedBatch b = make_batch({{0, 3}, {130, 1}, {20, 2}, {600, 1}}, p.block_size, rng, &n_slots);
  HostWeights w_uk = make_weights(c.dtype, {int64_t{p.n_head} * p.kv_lora, p.qk_nope}, c.scaled, rng);
  HostWeights w_uv = make_weights(c.dtype, {int64_t{p.n_head} * p.v_head_dim, p.kv_lora}, c.scaled, rng);
  auto q = gaussian(static_cast<size_t>(b.n_tok) * p.n_head * qk, rng);
  HostWeights latent = make_weights(c.latent, {n_slots, width}, false, rng);
  std::vector<float> want(static_cast<size_t>(b.n_tok) * p.n_head * p.v_head_dim);
  const Status st = ops::ref::op_table().attention_mla({}, p, b.host(), host_f32(q, {b.n_tok, p.n_head, qk}),
                                                       w_uk.view(), w_uv.view(), latent.view(),
                                                       host_f32(want, {b.n_tok, int64_t{p.n_head} * p.v_head_dim}));
  ASSERT_TRUE(st.ok()) << st.to_string();
  const int64_t o_width = int64_t{p.n_head} * p.v_head_dim;
  for_each_warp([&](SimtDevice& dev) {
    const CaiTensor d_uk = dev.upload_tensor(w_uk.view()), d_uv = dev.upload_tensor(w_uv.view());
    const CaiTensor d_latent = dev.upload_tensor(latent.view());
    const auto got = run_mla(dev, p, b, q, d_uk, d_uv, d_latent);
    expect_close(got, want, 1e-4f, 1e-4f, "attention_mla");
    for (int64_t s = 0; s < b.n_seqs(); ++s) {
      const int64_t row0 = b.seqs[s * 3], n_q = b.seqs[s * 3 + 1];
      auto q_s = row_slice(q, int64_t{p.n_head} * qk, row0, n_q);
      expect_bit_equal(run_mla(dev, p, b.single(s), q_s, d_uk, d_uv, d_latent), row_slice(got, o_width, row0, n_q),
                       "sequence " + std::to_string(s) + " alone vs batched");
    }
  });
}

TEST(CudaAttentionMla, MatchesReferenceAndIsBatchInvariant) {
  check_mla({DType::kF32, 36, false, DType::kF32, 12});  // rows not a multiple of 8: the decoder's tail path
  check_mla({DType::kBF16, 48, false});
  check_mla({DType::kQ8_0, 64, false, DType::kF32, 32});
  check_mla({DType::kF8_E4M3, 40, true});
  check_mla({DType::kBF16, 48, false, DType::kBF16});  // the latent cache in BF16 and F16
  check_mla({DType::kF16, 36, false, DType::kF16});
}

}  // namespace
}  // namespace cai::gpu::test
