// CPU mixture-of-experts kernels: the DeepSeek gate (group-limited top-k) and sparse_moe grouped by expert.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/thread_pool.h"
#include "hal/cpu/kernels/kernels.h"

namespace cai::hal::cpu {

namespace {

// Indices of the k largest values (ties → lower index), in descending order of value.
void top_k_indices(const std::vector<float>& v, int k, std::vector<int>& out) {
  out.resize(v.size());
  std::iota(out.begin(), out.end(), 0);
  std::partial_sort(out.begin(), out.begin() + k, out.end(), [&](int a, int b) {
    return v[static_cast<size_t>(a)] > v[static_cast<size_t>(b)] ||
           (v[static_cast<size_t>(a)] == v[static_cast<size_t>(b)] && a < b);
  });
  out.resize(static_cast<size_t>(k));
}

void gate_one_token(const MoeGateParams& p, const float* logits, const float* bias, int32_t* ids, float* weights) {
  const int n_e = p.n_experts, per_group = n_e / p.n_group;
  std::vector<float> score(static_cast<size_t>(n_e)), biased(static_cast<size_t>(n_e));
  if (p.sigmoid) {
    for (int e = 0; e < n_e; ++e) score[static_cast<size_t>(e)] = 1.0f / (1.0f + std::exp(-logits[e]));
  } else {
    const float mx = *std::max_element(logits, logits + n_e);
    float sum = 0;
    for (int e = 0; e < n_e; ++e) sum += score[static_cast<size_t>(e)] = std::exp(logits[e] - mx);
    for (float& s : score) s /= sum;
  }
  for (int e = 0; e < n_e; ++e)
    biased[static_cast<size_t>(e)] = score[static_cast<size_t>(e)] + (bias ? bias[e] : 0.0f);
  std::vector<int> picked;
  if (p.n_group > 1 && p.topk_group < p.n_group) {
    // Group score: sum of the two best biased scores (with a correction bias, V3) or the best score (V2).
    std::vector<float> group_score(static_cast<size_t>(p.n_group));
    for (int g = 0; g < p.n_group; ++g) {
      std::vector<float> members(biased.begin() + g * per_group, biased.begin() + (g + 1) * per_group);
      std::sort(members.begin(), members.end(), std::greater<float>());
      group_score[static_cast<size_t>(g)] = bias && per_group >= 2 ? members[0] + members[1] : members[0];
    }
    std::vector<int> groups;
    top_k_indices(group_score, p.topk_group, groups);
    std::vector<float> masked(static_cast<size_t>(n_e), -INFINITY);
    for (int g : groups)
      for (int e = g * per_group; e < (g + 1) * per_group; ++e)
        masked[static_cast<size_t>(e)] = biased[static_cast<size_t>(e)];
    top_k_indices(masked, p.top_k, picked);
  } else {
    top_k_indices(biased, p.top_k, picked);
  }
  float sum = 0;
  for (int k = 0; k < p.top_k; ++k) sum += score[static_cast<size_t>(picked[static_cast<size_t>(k)])];
  for (int k = 0; k < p.top_k; ++k) {
    const int e = picked[static_cast<size_t>(k)];
    ids[k] = e;
    weights[k] = score[static_cast<size_t>(e)] / (p.norm_topk_prob ? sum : 1.0f) * p.routed_scaling;
  }
}

}  // namespace

Status moe_gate(const OpContext& ctx, const MoeGateParams& p, const TensorView& logits, const TensorView* bias,
                const TensorView& ids, const TensorView& weights) {
  const int64_t n = logits.rows();
  if (p.n_experts <= 0 || logits.cols() != p.n_experts || p.n_group <= 0 || p.n_experts % p.n_group || p.top_k <= 0 ||
      p.topk_group <= 0 || p.topk_group > p.n_group || p.top_k > p.topk_group * (p.n_experts / p.n_group))
    return invalid_argument("moe_gate: {} experts, top-{}, {} groups keeping {}: inconsistent", p.n_experts, p.top_k,
                            p.n_group, p.topk_group);
  if (ids.n_elements() != n * p.top_k || weights.n_elements() != n * p.top_k || ids.dtype != DType::kI32)
    return invalid_argument("moe_gate: ids/weights must be [{}, {}]", n, p.top_k);
  if (bias && bias->n_elements() != p.n_experts)
    return invalid_argument("moe_gate: bias must have {} values", p.n_experts);
  parallel_rows(ctx, n, 4, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t)
      gate_one_token(p, logits.row<const float>(t), bias ? bias->as<const float>() : nullptr,
                     ids.as<int32_t>() + t * p.top_k, weights.as<float>() + t * p.top_k);
  });
  return {};
}

namespace {

// One expert's SwiGLU MLP over its m gathered tokens xs [m, hidden] into down [m, hidden]. The scratch is a thread's
// own and outlives the call: a prompt's experts take tens of MiB a layer, which fresh vectors would zero (and fault in)
// again for every layer, a cost that shows in the profile of a prefill (`cai bench` on DeepSeek-V2-Lite's shape).
struct ExpertScratch {
  std::vector<float> gate, up;
};
Status run_expert(const OpContext& ctx, const ExpertWeights& w, int64_t e, float* xs, int64_t m, float* down,
                  ExpertScratch& s) {
  const TensorView gate_w = w.gate.slice(e), up_w = w.up.slice(e), down_w = w.down.slice(e);
  const int64_t hidden = gate_w.cols(), ffn = gate_w.rows();
  if (s.gate.size() < static_cast<size_t>(m * ffn)) {
    s.gate.resize(static_cast<size_t>(m * ffn));
    s.up.resize(static_cast<size_t>(m * ffn));
  }
  const TensorView xv = TensorView::make(xs, DType::kF32, {m, hidden});
  const TensorView gv = TensorView::make(s.gate.data(), DType::kF32, {m, ffn});
  const TensorView uv = TensorView::make(s.up.data(), DType::kF32, {m, ffn});
  const TensorView dv = TensorView::make(down, DType::kF32, {m, hidden});
  CAI_TRY(dense_gemm(ctx, gate_w, xv, nullptr, gv));
  CAI_TRY(dense_gemm(ctx, up_w, xv, nullptr, uv));
  CAI_TRY(swiglu(ctx, gv, uv, gv));
  return dense_gemm(ctx, down_w, gv, nullptr, dv);
}

}  // namespace

Status sparse_moe(const OpContext& ctx, const ExpertWeights& w, const TensorView& x, const TensorView& ids,
                  const TensorView& weights, const TensorView& out) {
  const int64_t n = x.rows(), hidden = x.cols(), top_k = ids.cols();
  if (out.rows() != n || out.cols() != hidden || ids.rows() != n || weights.n_elements() != ids.n_elements())
    return invalid_argument("sparse_moe: x {} ids {} weights {} out {}", x.shape_string(), ids.shape_string(),
                            weights.shape_string(), out.shape_string());
  // Bucket (token, weight) pairs by expert so each selected expert runs once over all of its tokens.
  const int64_t n_experts = w.n_experts();
  std::vector<std::vector<std::pair<int64_t, float>>> buckets(static_cast<size_t>(n_experts));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t k = 0; k < top_k; ++k) {
      const int32_t id = ids.as<const int32_t>()[t * top_k + k];
      if (id < 0) return invalid_argument("sparse_moe: expert id {}", id);
      const int64_t e = id - int64_t{w.expert_begin};  // this stack's experts; another rank's add nothing here
      if (e < 0 || e >= n_experts) continue;
      buckets[static_cast<size_t>(e)].push_back({t, weights.as<const float>()[t * top_k + k]});
    }
  // Each selected expert: its tokens gathered [m, hidden], then its output [m, hidden], in this thread's scratch.
  struct Active {
    int64_t id;
    const std::vector<std::pair<int64_t, float>>* tokens;
    float *xs, *down;
    Status status;
  };
  thread_local std::vector<float> gathered, outputs;
  if (gathered.size() < static_cast<size_t>(n * top_k * hidden)) {
    gathered.resize(static_cast<size_t>(n * top_k * hidden));
    outputs.resize(gathered.size());
  }
  std::vector<Active> active;
  size_t used = 0;
  for (int64_t e = 0; e < n_experts; ++e) {
    const auto& bucket = buckets[static_cast<size_t>(e)];
    if (bucket.empty()) continue;
    Active& a = active.emplace_back(Active{e, &bucket, gathered.data() + used, outputs.data() + used, {}});
    used += bucket.size() * static_cast<size_t>(hidden);
    for (size_t r = 0; r < bucket.size(); ++r)
      std::copy_n(x.row<const float>(bucket[r].first), hidden, a.xs + r * hidden);
  }
  const auto run = [&](const OpContext& c, Active& a) {
    // Each thread's own scratch, declared where every thread that runs an expert passes: a thread_local declared in
    // the caller and named from a pool thread is that thread's instance, never constructed there and so never
    // destroyed when the thread ends (LeakSanitizer caught its buffers).
    thread_local ExpertScratch scratch;
    a.status = run_expert(c, w, a.id, a.xs, static_cast<int64_t>(a.tokens->size()), a.down, scratch);
  };
  // With at least as many experts as threads (a decode step: top-k of them; a prompt: most of them), the experts run
  // side by side, each GEMM on one thread: one parallel region per layer instead of four per expert. Each thread takes
  // the next expert in order of falling token count, so a prompt's largest experts start first and the threads end
  // together (in fixed chunks of experts one thread could be left with a large last chunk). Otherwise one expert at a
  // time, each GEMM over the pool. A GEMM row's result does not depend on its threads, so all give the same bits.
  const int threads = ctx.pool ? ctx.pool->size() : 1;
  if (threads > 1 && static_cast<int64_t>(active.size()) >= threads) {
    std::vector<size_t> order(active.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return active[a].tokens->size() > active[b].tokens->size(); });
    std::atomic<size_t> next{0};
    OpContext one_thread = ctx;
    one_thread.pool = nullptr;
    parallel_rows(ctx, threads, 1, [&](int64_t, int64_t) {
      for (size_t i = next++; i < order.size(); i = next++) run(one_thread, active[order[i]]);
    });
  } else {
    for (Active& a : active) run(ctx, a);
  }
  for (const Active& a : active) CAI_TRY(a.status);
  // Weighted sum in expert order, whichever way they ran.
  std::fill(out.as<float>(), out.as<float>() + n * hidden, 0.0f);
  for (const Active& a : active)
    for (size_t r = 0; r < a.tokens->size(); ++r) {
      float* o = out.row<float>((*a.tokens)[r].first);
      const float wt = (*a.tokens)[r].second;
      for (int64_t c = 0; c < hidden; ++c) o[c] += wt * a.down[r * hidden + c];
    }
  return {};
}

}  // namespace cai::hal::cpu
