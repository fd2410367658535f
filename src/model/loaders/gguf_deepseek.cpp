// attn_kv_b from mainline llama.cpp's attn_k_b / attn_v_b (the split converter of llama.cpp PR #12801).
#include "model/loaders/gguf_deepseek.h"

#include <algorithm>
#include <cstring>
#include <regex>

#include "core/weight_row.h"
#include "model/loaders/gguf.h"

namespace cai {

namespace {

bool is_plain_float(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

// One layer's attn_kv_b from its k_b [n_head, kv_lora, nope] and v_b [n_head, v, kv_lora] (PyTorch order).
Result<HostTensor> rebuild_one(const std::string& name, const GgufTensorInfo& k, const GgufTensorInfo& v) {
  if (k.ne.size() != 3 || v.ne.size() != 3 || v.ne[0] != k.ne[1] || v.ne[2] != k.ne[2])
    return invalid_argument("'{}' (ne [nope, kv_lora, n_head]) and '{}' (ne [kv_lora, v, n_head]) have shapes {} and {}",
                            k.name, v.name, k.view().shape_string(), v.view().shape_string());
  const int64_t nope = k.ne[0], lora = k.ne[1], n_head = k.ne[2], vd = v.ne[1];
  const bool copy = k.dtype == v.dtype && is_plain_float(k.dtype);
  HostTensor out{name, {}, {}};
  out.view = TensorView::make(nullptr, copy ? k.dtype : DType::kF32, {n_head * (nope + vd), lora});
  const size_t es = row_bytes(out.view.dtype, 1);
  out.bytes.resize(out.view.n_bytes());
  out.view.data = out.bytes.data();
  std::vector<float> tmp(static_cast<size_t>(std::max(nope, lora)));
  // Row r of w in the output dtype: in place for a copy, else dequantized into tmp.
  auto row = [&](const TensorView& w, int64_t r) -> const uint8_t* {
    if (copy) return w.row<const uint8_t>(r);
    dequantize_weight_row(w, r, tmp.data());
    return reinterpret_cast<const uint8_t*>(tmp.data());
  };
  const TensorView kv = k.view(), vv = v.view();
  for (int64_t h = 0; h < n_head; ++h) {
    uint8_t* head = out.bytes.data() + static_cast<size_t>(h * (nope + vd) * lora) * es;
    for (int64_t j = 0; j < lora; ++j) {  // k_b row (h, j) is column j of the head's k_nope rows
      const uint8_t* src = row(kv, h * lora + j);
      for (int64_t i = 0; i < nope; ++i) std::memcpy(head + static_cast<size_t>(i * lora + j) * es, src + i * es, es);
    }
    for (int64_t i = 0; i < vd; ++i)  // v_b row (h, i) is the head's v row i
      std::memcpy(head + static_cast<size_t>((nope + i) * lora) * es, row(vv, h * vd + i), static_cast<size_t>(lora) * es);
  }
  return out;
}

}  // namespace

Result<std::vector<HostTensor>> rebuild_mla_kv_b(const GgufFile& file, std::set<std::string>* replaced) {
  static const std::regex k_b_re(R"(blk\.(\d+)\.attn_k_b\.weight)");
  std::vector<HostTensor> out;
  for (const GgufTensorInfo& k : file.tensors()) {
    std::smatch m;
    if (!std::regex_match(k.name, m, k_b_re)) continue;
    const std::string prefix = "blk." + m[1].str() + ".";
    if (file.find(prefix + "attn_kv_b.weight")) continue;  // ik_llama.cpp files carry both layouts
    const GgufTensorInfo* v = file.find(prefix + "attn_v_b.weight");
    if (!v) return not_found("{}: '{}' has no '{}attn_v_b.weight' beside it", file.source_name(), k.name, prefix);
    CAI_ASSIGN_OR_RETURN(HostTensor t, rebuild_one(prefix + "attn_kv_b.weight", k, *v));
    out.push_back(std::move(t));
    replaced->insert(k.name);
    replaced->insert(v->name);
  }
  return out;
}

}  // namespace cai
