// Reference implementations of the ops, written for clarity: the definition each backend must match.
#include "ops/ref/ref_ops.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "core/quant.h"
#include "hal/rope_freqs.h"

namespace cai::ops::ref {

namespace {

using hal::OpContext;

std::vector<float> dequant(const TensorView& t, int64_t r) {
  std::vector<float> v(static_cast<size_t>(t.cols()));
  dequantize_row(t.dtype, t.row(r), v.data(), t.cols());
  return v;
}

Status embed(const OpContext&, const TensorView& table, const int32_t* ids, int64_t n, const TensorView& out) {
  for (int64_t i = 0; i < n; ++i) {
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

Status rope(const OpContext&, const TensorView& x, const int32_t* pos, const hal::RopeParams& p) {
  const std::vector<float> inv_freq = hal::rope_inv_freqs(p);
  const int64_t n_tok = x.dim(0), n_head = x.dim(1), hd = x.dim(2);
  const int half = p.n_rot / 2;
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t h = 0; h < n_head; ++h) {
      float* v = x.as<float>() + (t * n_head + h) * hd;
      for (int i = 0; i < half; ++i) {
        const double angle = static_cast<double>(pos[t]) * inv_freq[static_cast<size_t>(i)];
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

Status dense_gemm(const OpContext&, const TensorView& w, const TensorView& x, const TensorView* bias, const TensorView& y) {
  if (x.cols() != w.cols() || y.cols() != w.rows() || y.rows() != x.rows())
    return invalid_argument("dense_gemm: w {} x {} y {}", w.shape_string(), x.shape_string(), y.shape_string());
  for (int64_t o = 0; o < w.rows(); ++o) {
    std::vector<float> wr = dequant(w, o);
    if (w.scale) {
      const int64_t n_col_blocks = (w.cols() + 127) / 128;
      for (int64_t c = 0; c < w.cols(); ++c) wr[static_cast<size_t>(c)] *= w.scale[(o / 128) * n_col_blocks + c / 128];
    }
    for (int64_t n = 0; n < x.rows(); ++n) {
      double acc = bias ? bias->as<float>()[o] : 0.0;
      for (int64_t c = 0; c < w.cols(); ++c) acc += static_cast<double>(wr[static_cast<size_t>(c)]) * x.row<float>(n)[c];
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

Status kv_write(const OpContext&, const TensorView& src, const int32_t* slots, const TensorView& cache) {
  for (int64_t i = 0; i < src.rows(); ++i)
    std::memcpy(cache.row<float>(slots[i]), src.row<float>(i), src.row_bytes());
  return {};
}

Status attention_gqa(const OpContext&, const hal::AttentionParams& p, const hal::AttnSeq* seqs, int n_seqs,
                     const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& out) {
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
          const float* kv = k.as<float>() + (slot_of(seqs[s], t) * p.n_kv_head + kvh) * p.head_dim;
          double dot = 0;
          for (int d = 0; d < p.head_dim; ++d) dot += static_cast<double>(qv[d]) * kv[d];
          sc[static_cast<size_t>(t)] = dot * p.scale;
          mx = std::max(mx, sc[static_cast<size_t>(t)]);
        }
        for (double& x : sc) sum += (x = std::exp(x - mx));
        for (int d = 0; d < p.head_dim_v; ++d) {
          double acc = 0;
          for (int t = 0; t < n_ctx; ++t)
            acc += sc[static_cast<size_t>(t)] * v.as<float>()[(slot_of(seqs[s], t) * p.n_kv_head + kvh) * p.head_dim_v + d];
          out.as<float>()[(row * p.n_head + h) * p.head_dim_v + d] = static_cast<float>(acc / sum);
        }
      }
  return {};
}

}  // namespace

const hal::OpTable& op_table() {
  static const hal::OpTable table = [] {
    hal::OpTable t;
    t.embed = embed;
    t.rms_norm = rms_norm;
    t.rope = rope;
    t.dense_gemm = dense_gemm;
    t.add = add;
    t.swiglu = swiglu;
    t.softmax = softmax;
    t.kv_write = kv_write;
    t.attention_gqa = attention_gqa;
    return t;
  }();
  return table;
}

}  // namespace cai::ops::ref
