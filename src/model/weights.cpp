// WeightStore: HF→canonical name mapping, shape checks naming the tensor, F32 copies of small tensors, device upload.
#include "model/weights.h"

#include <regex>

#include "core/quant.h"
#include "model/loaders/gguf.h"
#include "model/loaders/safetensors.h"

namespace cai {

namespace {

// HF suffix under "model.layers.N." → canonical suffix under "blk.N.".
const std::vector<std::pair<std::string, std::string>>& layer_suffix_map() {
  static const std::vector<std::pair<std::string, std::string>> m = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
  };
  return m;
}

}  // namespace

std::optional<std::string> canonical_name_from_hf(const std::string& hf) {
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  static const std::regex layer_re(R"(model\.layers\.(\d+)\.(.+))");
  std::smatch m;
  if (!std::regex_match(hf, m, layer_re)) return std::nullopt;
  for (const auto& [from, to] : layer_suffix_map())
    if (m[2] == from) return "blk." + m[1].str() + "." + to;
  return std::nullopt;
}

WeightStore::WeightStore() = default;
WeightStore::~WeightStore() = default;
WeightStore::WeightStore(WeightStore&&) noexcept = default;
WeightStore& WeightStore::operator=(WeightStore&&) noexcept = default;

Result<TensorView> WeightStore::place(const TensorView& host_view) {
  if (device_->host_visible()) {
    TensorView v = host_view;
    v.device = device_;
    return v;
  }
  CAI_ASSIGN_OR_RETURN(hal::Buffer buf, device_->allocate(host_view.n_bytes()));
  CAI_TRY(device_->default_stream().copy_to_device(buf.data(), host_view.data, host_view.n_bytes()));
  TensorView v = host_view;
  v.data = buf.data();
  v.device = device_;
  owned_.push_back(std::move(buf));
  return v;
}

Result<WeightStore> WeightStore::from_gguf(std::unique_ptr<GgufFile> file, hal::Device& device) {
  WeightStore ws;
  ws.device_ = &device;
  for (const GgufTensorInfo& t : file->tensors()) {
    CAI_ASSIGN_OR_RETURN(TensorView v, ws.place(t.view()));
    ws.tensors_[t.name] = v;
  }
  ws.gguf_ = std::move(file);
  return ws;
}

Result<WeightStore> WeightStore::from_checkpoint(std::unique_ptr<SafetensorsCheckpoint> ckpt, hal::Device& device) {
  WeightStore ws;
  ws.device_ = &device;
  for (const std::string& name : ckpt->names()) {
    std::optional<std::string> canon = canonical_name_from_hf(name);
    if (!canon) continue;  // rotary caches, MTP layers and other tensors the model does not read
    const SafetensorsTensor* t = ckpt->find(name);
    if (!t->dtype) return unsupported("tensor '{}' has dtype {}, which CAI cannot compute with", name, t->dtype_name);
    CAI_ASSIGN_OR_RETURN(TensorView host, t->view());
    CAI_ASSIGN_OR_RETURN(TensorView v, ws.place(host));
    ws.tensors_[*canon] = v;
  }
  ws.ckpt_ = std::move(ckpt);
  return ws;
}

Result<TensorView> WeightStore::get(const std::string& name, std::initializer_list<int64_t> shape) {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) return not_found("model is missing tensor '{}'", name);
  TensorView want = TensorView::make(nullptr, DType::kF32, shape);
  const TensorView& v = it->second;
  bool same = v.n_dims == want.n_dims;
  for (int i = 0; same && i < v.n_dims; ++i) same = v.dim(i) == want.dim(i);
  if (!same)
    return invalid_argument("tensor '{}' has shape {}, expected {}", name, v.shape_string(), want.shape_string());
  return v;
}

Result<TensorView> WeightStore::get_f32(const std::string& name, std::initializer_list<int64_t> shape) {
  if (auto it = f32_cache_.find(name); it != f32_cache_.end()) return it->second;
  CAI_ASSIGN_OR_RETURN(TensorView v, get(name, shape));
  if (v.dtype == DType::kF32) return v;
  if (!device_->host_visible()) return unsupported("'{}': F32 conversion on a non-host device", name);
  CAI_ASSIGN_OR_RETURN(hal::Buffer buf, device_->allocate(static_cast<size_t>(v.n_elements()) * sizeof(float)));
  for (int64_t r = 0; r < v.rows(); ++r)
    dequantize_row(v.dtype, v.row(r), static_cast<float*>(buf.data()) + r * v.cols(), v.cols());
  TensorView f = v;
  f.data = buf.data();
  f.dtype = DType::kF32;
  owned_.push_back(std::move(buf));
  f32_cache_[name] = f;
  return f;
}

size_t WeightStore::total_bytes() const {
  size_t n = 0;
  for (const auto& [name, v] : tensors_) n += v.n_bytes();
  return n;
}

}  // namespace cai
