// attn_k_b / attn_v_b from a joint kv_b_proj (HF checkpoints, older GGUFs), as mainline llama.cpp stores them.
#include "model/loaders/mla_weights.h"

#include <cstring>
#include <regex>

#include "core/weight_row.h"
#include "model/loaders/gguf.h"

namespace cai {

namespace {

bool is_plain_float(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

HostTensor make_host(const std::string& name, DType dtype, std::initializer_list<int64_t> shape) {
  HostTensor t{name, TensorView::make(nullptr, dtype, shape), {}, {}};
  t.bytes.resize(t.view.n_bytes());
  t.view.data = t.bytes.data();
  return t;
}

}  // namespace

Result<std::array<HostTensor, 2>> split_mla_kv_b(const std::string& prefix, const TensorView& kv_b, const MlaDims& d) {
  const int64_t per_head = d.qk_nope + d.v_head_dim, lora = kv_b.cols();
  if (kv_b.n_dims != 2 || d.n_head <= 0 || d.qk_nope <= 0 || d.v_head_dim <= 0 || kv_b.rows() != d.n_head * per_head)
    return invalid_argument("'{}attn_kv_b.weight' has shape {}, expected [{} heads × ({} + {}), kv_lora]", prefix,
                            kv_b.shape_string(), d.n_head, d.qk_nope, d.v_head_dim);
  constexpr int64_t kB = kFp8ScaleBlock;
  const bool fp8_blocks =
      kv_b.scale && kv_b.dtype == DType::kF8_E4M3 && d.qk_nope % kB == 0 && d.v_head_dim % kB == 0 && lora % kB == 0;
  const bool plain = (is_plain_float(kv_b.dtype) && !kv_b.scale) || fp8_blocks;  // elements copied as they are
  const bool decode_v = kv_b.scale && !fp8_blocks;
  HostTensor k = make_host(prefix + "attn_k_b.weight", plain ? kv_b.dtype : DType::kF32, {d.n_head, lora, d.qk_nope});
  HostTensor v =
      make_host(prefix + "attn_v_b.weight", decode_v ? DType::kF32 : kv_b.dtype, {d.n_head, d.v_head_dim, lora});
  if (fp8_blocks) {
    // kv_b's grid [n_head·(nope + v) / 128, kv_lora / 128]; attn_k_b's [n_head·kv_lora / 128, nope / 128] holds at
    // (head h's kv_lora block cb, nope block ib) kv_b's (h's k row block ib, cb); attn_v_b's [n_head·v / 128,
    // kv_lora / 128] is kv_b's v row blocks.
    const int64_t lb = lora / kB, nb = d.qk_nope / kB, vb = d.v_head_dim / kB, hb = per_head / kB;
    k.scales.resize(static_cast<size_t>(d.n_head * lb * nb));
    v.scales.resize(static_cast<size_t>(d.n_head * vb * lb));
    for (int64_t h = 0; h < d.n_head; ++h) {
      for (int64_t cb = 0; cb < lb; ++cb)
        for (int64_t ib = 0; ib < nb; ++ib)
          k.scales[static_cast<size_t>((h * lb + cb) * nb + ib)] = kv_b.scale[(h * hb + ib) * lb + cb];
      for (int64_t b = 0; b < vb; ++b)
        for (int64_t cb = 0; cb < lb; ++cb)
          v.scales[static_cast<size_t>((h * vb + b) * lb + cb)] = kv_b.scale[(h * hb + nb + b) * lb + cb];
    }
    k.view.scale = k.scales.data();
    v.view.scale = v.scales.data();
  }
  const size_t es = row_bytes(k.view.dtype, 1), v_row = row_bytes(v.view.dtype, lora);
  std::vector<float> tmp(static_cast<size_t>(lora));
  for (int64_t h = 0; h < d.n_head; ++h) {
    for (int64_t i = 0; i < d.qk_nope; ++i) {  // kv_b's k_nope row (h, i) is column i of attn_k_b rows (h, ·)
      const uint8_t* src = kv_b.row<const uint8_t>(h * per_head + i);
      if (!plain) {
        dequantize_weight_row(kv_b, h * per_head + i, tmp.data());
        src = reinterpret_cast<const uint8_t*>(tmp.data());
      }
      for (int64_t c = 0; c < lora; ++c)
        std::memcpy(k.bytes.data() + static_cast<size_t>((h * lora + c) * d.qk_nope + i) * es, src + c * es, es);
    }
    for (int64_t i = 0; i < d.v_head_dim; ++i) {  // kv_b's v row (h, i) is attn_v_b row (h, i)
      uint8_t* dst = v.bytes.data() + static_cast<size_t>(h * d.v_head_dim + i) * v_row;
      if (decode_v)
        dequantize_weight_row(kv_b, h * per_head + d.qk_nope + i, reinterpret_cast<float*>(dst));
      else
        std::memcpy(dst, kv_b.row<const uint8_t>(h * per_head + d.qk_nope + i), v_row);
    }
  }
  return std::array<HostTensor, 2>{std::move(k), std::move(v)};
}

Result<std::vector<HostTensor>> split_gguf_mla_kv_b(const GgufFile& file, const MlaDims* dims,
                                                    std::set<std::string>* skipped) {
  static const std::regex layer_re(R"(blk\.(\d+)\.attn_(kv_b|k_b)\.weight)");
  std::vector<HostTensor> out;
  for (const GgufTensorInfo& t : file.tensors()) {
    std::smatch m;
    if (!std::regex_match(t.name, m, layer_re)) continue;
    const std::string prefix = "blk." + m[1].str() + ".";
    const bool stored_split = file.find(prefix + "attn_k_b.weight") != nullptr;
    if (stored_split && !file.find(prefix + "attn_v_b.weight"))
      return not_found("{}: '{}attn_k_b.weight' has no '{}attn_v_b.weight' beside it", file.source_name(), prefix,
                       prefix);
    if (m[2] == "k_b") continue;
    skipped->insert(t.name);
    if (stored_split) continue;
    if (!dims)
      return invalid_argument("{}: '{}' needs the model's MLA head sizes to split", file.source_name(), t.name);
    CAI_ASSIGN_OR_RETURN(auto kv, split_mla_kv_b(prefix, t.view(), *dims));
    out.push_back(std::move(kv[0]));
    out.push_back(std::move(kv[1]));
  }
  return out;
}

}  // namespace cai
