// Reference implementations of the ops, written for clarity: the definition each backend must match.
#include "ops/ref/ref_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/quant.h"
#include "core/weight_row.h"

namespace cai::ops::ref {

namespace {

using hal::OpContext;

std::vector<float> dequant(const TensorView& t, int64_t r) {
  std::vector<float> v(static_cast<size_t>(t.cols()));
  dequantize_weight_row(t, r, v.data());
  return v;
}

Status embed(const OpContext&, const TensorView& table, const TensorView& id_view, const TensorView& out) {
  const int32_t* ids = id_view.as<const int32_t>();
  for (int64_t i = 0; i < id_view.n_elements(); ++i) {
    if (ids[i] < 0 || ids[i] >= table.rows()) return invalid_argument("embed: token id {} outside vocab", ids[i]);
    dequantize_row(table.dtype, table.row(ids[i]), out.row<float>(i), table.cols());
  }
  return {};
}

Status rms_norm(const OpContext&, const TensorView& x, const TensorView& w, float eps, const TensorView& out) {
  for (int64_t r = 0; r < x.rows(); ++r) {
    double ss = 0;
    for (int64_t i = 0; i < x.cols(); ++i) ss += std::pow(static_cast<double>(x.row<float>(r)[i]), 2);
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(x.cols()) + eps);
    for (int64_t i = 0; i < x.cols(); ++i)
      out.row<float>(r)[i] = static_cast<float>(x.row<float>(r)[i] * inv * w.as<float>()[i]);
  }
  return {};
}

Status rope(const OpContext&, const TensorView& x, const TensorView& pos_view, const TensorView& inv_freq_view,
            const hal::RopeParams& p) {
  const int32_t* pos = pos_view.as<const int32_t>();
  const float* inv_freq = inv_freq_view.as<const float>();
  const int64_t n_tok = x.dim(0), n_head = x.dim(1), hd = x.dim(2);
  const int half = p.n_rot / 2;
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t h = 0; h < n_head; ++h) {
      float* v = x.as<float>() + (t * n_head + h) * hd + p.rot_offset;
      for (int i = 0; i < half; ++i) {
        const double angle = static_cast<double>(pos[t]) * inv_freq[i];
        const double c = std::cos(angle) * p.mscale, s = std::sin(angle) * p.mscale;
        const int i0 = p.style == hal::RopeStyle::kNorm ? 2 * i : i;
        const int i1 = p.style == hal::RopeStyle::kNorm ? 2 * i + 1 : i + half;
        const double a = v[i0], b = v[i1];
        v[i0] = static_cast<float>(a * c - b * s);
        v[i1] = static_cast<float>(a * s + b * c);
      }
    }
  return {};
}

Status dense_gemm(const OpContext&, const TensorView& w, const TensorView& x, const TensorView* bias,
                  const TensorView& y) {
  if (x.cols() != w.cols() || y.cols() != w.rows() || y.rows() != x.rows())
    return invalid_argument("dense_gemm: w {} x {} y {}", w.shape_string(), x.shape_string(), y.shape_string());
  for (int64_t o = 0; o < w.rows(); ++o) {
    std::vector<float> wr = dequant(w, o);
    for (int64_t n = 0; n < x.rows(); ++n) {
      double acc = bias ? bias->as<float>()[o] : 0.0;
      for (int64_t c = 0; c < w.cols(); ++c)
        acc += static_cast<double>(wr[static_cast<size_t>(c)]) * x.row<float>(n)[c];
      y.row<float>(n)[o] = static_cast<float>(acc);
    }
  }
  return {};
}

Status add(const OpContext&, const TensorView& a, const TensorView& b, const TensorView& out) {
  for (int64_t i = 0; i < a.n_elements(); ++i) out.as<float>()[i] = a.as<float>()[i] + b.as<float>()[i];
  return {};
}

Status swiglu(const OpContext&, const TensorView& gate, const TensorView& up, const TensorView& out) {
  for (int64_t i = 0; i < gate.n_elements(); ++i) {
    const double g = gate.as<float>()[i];
    out.as<float>()[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up.as<float>()[i]);
  }
  return {};
}

Status softmax(const OpContext&, const TensorView& x) {
  for (int64_t r = 0; r < x.rows(); ++r) {
    float* v = x.row<float>(r);
    double mx = -INFINITY, sum = 0;
    for (int64_t i = 0; i < x.cols(); ++i) mx = std::max(mx, static_cast<double>(v[i]));
    for (int64_t i = 0; i < x.cols(); ++i) sum += std::exp(v[i] - mx);
    for (int64_t i = 0; i < x.cols(); ++i) v[i] = static_cast<float>(std::exp(v[i] - mx) / sum);
  }
  return {};
}

Status copy_cols(const OpContext&, const TensorView& src, int64_t src_col, const TensorView& dst, int64_t dst_col,
                 int64_t n_cols) {
  for (int64_t r = 0; r < src.rows(); ++r)
    for (int64_t j = 0; j < n_cols; ++j) dst.row<float>(r)[dst_col + j] = src.row<float>(r)[src_col + j];
  return {};
}

// Every element of a tensor as float (dequantize_row): how the reference reads KV caches of any dtype (Q8_0 too).
std::vector<float> decode_all(const TensorView& t) {
  std::vector<float> v(static_cast<size_t>(t.n_elements()));
  dequantize_row(t.dtype, t.data, v.data(), t.n_elements());
  return v;
}

Status kv_write(const OpContext&, const TensorView& src, const TensorView& slot_view, const TensorView& cache) {
  CAI_TRY(hal::check_kv_cache_dtype("kv_write", cache.dtype));
  const int32_t* slots = slot_view.as<const int32_t>();
  for (int64_t i = 0; i < src.rows(); ++i)
    CAI_TRY(quantize_row(cache.dtype, src.row<float>(i), cache.row(slots[i]), src.cols()));
  return {};
}

Status attention_gqa(const OpContext&, const hal::AttentionParams& p, const hal::AttnBatch& batch, const TensorView& q,
                     const TensorView& k_cache, const TensorView& v_cache, const TensorView& out) {
  CAI_TRY(hal::check_kv_cache_dtype("attention_gqa", k_cache.dtype));
  CAI_TRY(hal::check_kv_cache_dtype("attention_gqa", v_cache.dtype));
  const std::vector<float> k = decode_all(k_cache), v = decode_all(v_cache);
  const std::vector<hal::AttnSeq> seqs = batch.host_seqs();
  const int n_seqs = static_cast<int>(seqs.size());
  const int group = p.n_head / p.n_kv_head;
  auto slot_of = [&](const hal::AttnSeq& s, int t) {
    return static_cast<int64_t>(s.block_table[t / p.block_size]) * p.block_size + t % p.block_size;
  };
  for (int s = 0; s < n_seqs; ++s)
    for (int j = 0; j < seqs[s].n_q; ++j)
      for (int h = 0; h < p.n_head; ++h) {
        const int64_t row = seqs[s].q_begin + j;
        const int n_ctx = seqs[s].pos0 + j + 1, kvh = h / group;
        const float* qv = q.as<float>() + (row * p.n_head + h) * p.head_dim;
        std::vector<double> sc(static_cast<size_t>(n_ctx));
        double mx = -INFINITY, sum = 0;
        for (int t = 0; t < n_ctx; ++t) {
          const float* kv = k.data() + (slot_of(seqs[s], t) * p.n_kv_head + kvh) * p.head_dim;
          double dot = 0;
          for (int d = 0; d < p.head_dim; ++d) dot += static_cast<double>(qv[d]) * kv[d];
          sc[static_cast<size_t>(t)] = dot * p.scale;
          mx = std::max(mx, sc[static_cast<size_t>(t)]);
        }
        for (double& x : sc) sum += (x = std::exp(x - mx));
        for (int d = 0; d < p.head_dim_v; ++d) {
          double acc = 0;
          for (int t = 0; t < n_ctx; ++t)
            acc += sc[static_cast<size_t>(t)] * v[(slot_of(seqs[s], t) * p.n_kv_head + kvh) * p.head_dim_v + d];
          out.as<float>()[(row * p.n_head + h) * p.head_dim_v + d] = static_cast<float>(acc / sum);
        }
      }
  return {};
}

// Sorting everything: the plain statement of the DeepSeek gate.
Status moe_gate(const OpContext&, const hal::MoeGateParams& p, const TensorView& logits, const TensorView* bias,
                const TensorView& ids, const TensorView& weights) {
  const int n_e = p.n_experts, per_group = n_e / p.n_group;
  for (int64_t t = 0; t < logits.rows(); ++t) {
    const float* l = logits.row<float>(t);
    std::vector<double> score(static_cast<size_t>(n_e)), biased(static_cast<size_t>(n_e));
    double mx = -INFINITY, sum = 0;
    for (int e = 0; e < n_e; ++e) mx = std::max(mx, static_cast<double>(l[e]));
    for (int e = 0; e < n_e; ++e) sum += std::exp(l[e] - mx);
    for (int e = 0; e < n_e; ++e) {
      score[static_cast<size_t>(e)] =
          p.sigmoid ? 1.0 / (1.0 + std::exp(-static_cast<double>(l[e]))) : std::exp(l[e] - mx) / sum;
      biased[static_cast<size_t>(e)] = score[static_cast<size_t>(e)] + (bias ? bias->as<float>()[e] : 0.0f);
    }
    auto better = [](const std::vector<double>& v) {
      return [&v](int a, int b) {
        return v[static_cast<size_t>(a)] > v[static_cast<size_t>(b)] ||
               (v[static_cast<size_t>(a)] == v[static_cast<size_t>(b)] && a < b);
      };
    };
    std::vector<double> gscore(static_cast<size_t>(p.n_group));
    for (int g = 0; g < p.n_group; ++g) {
      std::vector<double> m(biased.begin() + g * per_group, biased.begin() + (g + 1) * per_group);
      std::sort(m.rbegin(), m.rend());
      gscore[static_cast<size_t>(g)] = bias && m.size() >= 2 ? m[0] + m[1] : m[0];
    }
    std::vector<int> order(static_cast<size_t>(p.n_group));
    for (int g = 0; g < p.n_group; ++g) order[static_cast<size_t>(g)] = g;
    std::sort(order.begin(), order.end(), better(gscore));
    std::vector<int> eligible;
    for (int i = 0; i < p.topk_group; ++i)
      for (int e = 0; e < per_group; ++e) eligible.push_back(order[static_cast<size_t>(i)] * per_group + e);
    std::sort(eligible.begin(), eligible.end(), better(biased));
    double wsum = 0;
    for (int k = 0; k < p.top_k; ++k) wsum += score[static_cast<size_t>(eligible[static_cast<size_t>(k)])];
    for (int k = 0; k < p.top_k; ++k) {
      const int e = eligible[static_cast<size_t>(k)];
      ids.as<int32_t>()[t * p.top_k + k] = e;
      weights.as<float>()[t * p.top_k + k] =
          static_cast<float>(score[static_cast<size_t>(e)] / (p.norm_topk_prob ? wsum : 1.0) * p.routed_scaling);
    }
  }
  return {};
}

// Token by token, expert by expert: no grouping.
Status sparse_moe(const OpContext&, const hal::ExpertWeights& w, const TensorView& x, const TensorView& ids,
                  const TensorView& weights, const TensorView& out) {
  const int64_t hidden = x.cols(), top_k = ids.cols();
  for (int64_t t = 0; t < x.rows(); ++t) {
    std::vector<double> acc(static_cast<size_t>(hidden), 0.0);
    for (int64_t k = 0; k < top_k; ++k) {
      const int e = ids.as<int32_t>()[t * top_k + k] - w.expert_begin;  // expert parallelism: this stack's range
      if (e < 0 || e >= w.n_experts()) continue;
      const double wt = weights.as<float>()[t * top_k + k];
      const TensorView gate = w.gate.slice(e), up = w.up.slice(e), down = w.down.slice(e);
      const int64_t ffn = gate.rows();
      std::vector<double> act(static_cast<size_t>(ffn));
      for (int64_t f = 0; f < ffn; ++f) {
        std::vector<float> g = dequant(gate, f), u = dequant(up, f);
        double gs = 0, us = 0;
        for (int64_t c = 0; c < hidden; ++c) {
          gs += static_cast<double>(g[static_cast<size_t>(c)]) * x.row<float>(t)[c];
          us += static_cast<double>(u[static_cast<size_t>(c)]) * x.row<float>(t)[c];
        }
        act[static_cast<size_t>(f)] = gs / (1.0 + std::exp(-gs)) * us;
      }
      for (int64_t c = 0; c < hidden; ++c) {
        std::vector<float> d = dequant(down, c);
        double s = 0;
        for (int64_t f = 0; f < ffn; ++f) s += d[static_cast<size_t>(f)] * act[static_cast<size_t>(f)];
        acc[static_cast<size_t>(c)] += wt * s;
      }
    }
    for (int64_t c = 0; c < hidden; ++c) out.row<float>(t)[c] = static_cast<float>(acc[static_cast<size_t>(c)]);
  }
  return {};
}

// The naive (non-absorbed) form: expand every cached latent into per-head k_nope and v with W_UK and W_UV, then attend.
Status attention_mla(const OpContext&, const hal::MlaParams& p, const hal::AttnBatch& batch, const TensorView& q,
                     const TensorView& w_uk, const TensorView& w_uv, const TensorView& latent_cache,
                     const TensorView& out) {
  CAI_TRY(hal::check_kv_cache_dtype("attention_mla", latent_cache.dtype));
  const std::vector<float> latent = decode_all(latent_cache);
  const int qk = p.qk_nope + p.qk_rope, per_head = p.qk_nope + p.v_head_dim;
  for (int64_t s = 0; s < batch.n_seqs(); ++s) {
    const hal::AttnSeq sq = batch.host_seq(s);
    for (int h = 0; h < p.n_head; ++h) {
      // w[i] = head h's row i of [W_UK; W_UV] over the latent (w_uk holds W_UK transposed: column i of its rows).
      const size_t lora = static_cast<size_t>(p.kv_lora);
      std::vector<std::vector<float>> w(static_cast<size_t>(per_head), std::vector<float>(lora));
      for (size_t c = 0; c < lora; ++c) {
        const std::vector<float> uk = dequant(w_uk, static_cast<int64_t>(h) * p.kv_lora + static_cast<int64_t>(c));
        for (size_t i = 0; i < static_cast<size_t>(p.qk_nope); ++i) w[i][c] = uk[i];
      }
      for (int i = 0; i < p.v_head_dim; ++i)
        w[static_cast<size_t>(p.qk_nope + i)] = dequant(w_uv, static_cast<int64_t>(h) * p.v_head_dim + i);
      for (int j = 0; j < sq.n_q; ++j) {
        const float* qh = q.as<float>() + ((sq.q_begin + j) * p.n_head + h) * qk;
        const int n_ctx = sq.pos0 + j + 1;
        std::vector<double> sc(static_cast<size_t>(n_ctx));
        std::vector<std::vector<double>> v(static_cast<size_t>(n_ctx),
                                           std::vector<double>(static_cast<size_t>(p.v_head_dim)));
        double mx = -INFINITY;
        for (int t = 0; t < n_ctx; ++t) {
          const int64_t slot = static_cast<int64_t>(sq.block_table[t / p.block_size]) * p.block_size + t % p.block_size;
          const float* lat = latent.data() + slot * latent_cache.cols();
          double dot = 0;
          for (int i = 0; i < p.qk_nope; ++i) {
            double k_nope = 0;
            for (int c = 0; c < p.kv_lora; ++c)
              k_nope += static_cast<double>(w[static_cast<size_t>(i)][static_cast<size_t>(c)]) * lat[c];
            dot += qh[i] * k_nope;
          }
          for (int r = 0; r < p.qk_rope; ++r) dot += static_cast<double>(qh[p.qk_nope + r]) * lat[p.kv_lora + r];
          for (int i = 0; i < p.v_head_dim; ++i)
            for (int c = 0; c < p.kv_lora; ++c)
              v[static_cast<size_t>(t)][static_cast<size_t>(i)] +=
                  static_cast<double>(w[static_cast<size_t>(p.qk_nope + i)][static_cast<size_t>(c)]) * lat[c];
          sc[static_cast<size_t>(t)] = dot * p.scale;
          mx = std::max(mx, sc[static_cast<size_t>(t)]);
        }
        double sum = 0;
        for (double& x : sc) sum += (x = std::exp(x - mx));
        float* o = out.as<float>() + ((sq.q_begin + j) * p.n_head + h) * p.v_head_dim;
        for (int i = 0; i < p.v_head_dim; ++i) {
          double acc = 0;
          for (int t = 0; t < n_ctx; ++t)
            acc += sc[static_cast<size_t>(t)] * v[static_cast<size_t>(t)][static_cast<size_t>(i)];
          o[i] = static_cast<float>(acc / sum);
        }
      }
    }
  }
  return {};
}

}  // namespace

const hal::OpTable& op_table() {
  static const hal::OpTable table = CAI_OP_TABLE_OF_KERNELS();
  return table;
}

}  // namespace cai::ops::ref
