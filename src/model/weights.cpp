// WeightStore: HF→canonical name mapping, shape checks naming the tensor, F32 copies of small tensors, device upload.
#include "model/weights.h"

#include <regex>

#include "core/log.h"
#include "core/quant.h"
#include "core/weight_row.h"
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
      // DeepSeek V2/V3: multi-head latent attention and the MoE router / shared experts.
      {"self_attn.q_a_proj.weight", "attn_q_a.weight"},
      {"self_attn.q_a_layernorm.weight", "attn_q_a_norm.weight"},
      {"self_attn.q_b_proj.weight", "attn_q_b.weight"},
      {"self_attn.kv_a_proj_with_mqa.weight", "attn_kv_a_mqa.weight"},
      {"self_attn.kv_a_layernorm.weight", "attn_kv_a_norm.weight"},
      {"self_attn.kv_b_proj.weight", "attn_kv_b.weight"},
      {"mlp.gate.weight", "ffn_gate_inp.weight"},
      {"mlp.gate.e_score_correction_bias", "exp_probs_b.bias"},
      {"mlp.shared_experts.gate_proj.weight", "ffn_gate_shexp.weight"},
      {"mlp.shared_experts.up_proj.weight", "ffn_up_shexp.weight"},
      {"mlp.shared_experts.down_proj.weight", "ffn_down_shexp.weight"},
  };
  return m;
}

}  // namespace

std::string expert_name(int layer, const std::string& proj, int expert) {
  return "blk." + std::to_string(layer) + ".ffn_" + proj + "_exps." + std::to_string(expert) + ".weight";
}

std::optional<std::string> canonical_name_from_hf(const std::string& hf) {
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  static const std::regex layer_re(R"(model\.layers\.(\d+)\.(.+))");
  static const std::regex expert_re(R"(mlp\.experts\.(\d+)\.(gate|up|down)_proj\.weight)");
  std::smatch m;
  if (!std::regex_match(hf, m, layer_re)) return std::nullopt;
  const std::string rest = m[2];
  std::smatch em;
  if (std::regex_match(rest, em, expert_re)) return expert_name(std::stoi(m[1]), em[2].str(), std::stoi(em[1]));
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
  static const std::regex exps_re(R"(blk\.(\d+)\.ffn_(gate|up|down)_exps\.weight)");
  for (const GgufTensorInfo& t : file->tensors()) {
    CAI_ASSIGN_OR_RETURN(TensorView v, ws.place(t.view()));
    ws.tensors_[t.name] = v;
    std::smatch m;
    if (v.n_dims == 3 && std::regex_match(t.name, m, exps_re)) {
      // Stacked experts [n_expert, out, in]: expert e is a contiguous slab.
      for (int64_t e = 0; e < v.dim(0); ++e) {
        TensorView ev = TensorView::make(static_cast<uint8_t*>(v.data) + e * v.dim(1) * v.row_bytes(), v.dtype,
                                         {v.dim(1), v.dim(2)});
        ev.device = v.device;
        const std::string name = expert_name(std::stoi(m[1]), m[2], static_cast<int>(e));
        ws.tensors_[name] = ev;
        ws.aliases_.insert(name);
      }
    }
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
  CAI_TRY(ws.attach_block_scales(*ckpt));
  ws.ckpt_ = std::move(ckpt);
  return ws;
}

// DeepSeek FP8: `X.weight` (F8_E4M3) has a sibling `X.weight_scale_inv` (F32 [ceil(out/128), ceil(in/128)]).
Status WeightStore::attach_block_scales(const SafetensorsCheckpoint& ckpt) {
  static const std::string kSuffix = "_scale_inv";
  for (const std::string& name : ckpt.names()) {
    if (name.size() <= kSuffix.size() || name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) continue;
    const std::string weight = name.substr(0, name.size() - kSuffix.size());
    std::optional<std::string> canon = canonical_name_from_hf(weight);
    if (!canon || !tensors_.count(*canon)) continue;
    TensorView& w = tensors_[*canon];
    const SafetensorsTensor* s = ckpt.find(name);
    const int64_t want_rows = (w.rows() + kFp8ScaleBlock - 1) / kFp8ScaleBlock;
    const int64_t want_cols = (w.cols() + kFp8ScaleBlock - 1) / kFp8ScaleBlock;
    if (w.dtype != DType::kF8_E4M3) return invalid_argument("'{}' has block scales but dtype {}", weight, dtype_name(w.dtype));
    if (s->dtype != DType::kF32 || s->shape.size() != 2 || s->shape[0] != want_rows || s->shape[1] != want_cols)
      return invalid_argument("'{}' must be F32 [{}, {}] for weight {}", name, want_rows, want_cols, w.shape_string());
    CAI_ASSIGN_OR_RETURN(TensorView sv, s->view());
    CAI_ASSIGN_OR_RETURN(TensorView placed, place(sv));
    w.scale = placed.as<const float>();
  }
  for (const auto& [name, w] : tensors_)
    if (w.dtype == DType::kF8_E4M3 && !w.scale && w.n_dims >= 2)
      CAI_LOG_WARN("FP8 weight '{}' has no weight_scale_inv; using unscaled e4m3 values", name);
  return {};
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
    dequantize_weight_row(v, r, static_cast<float*>(buf.data()) + r * v.cols());
  TensorView f = v;
  f.data = buf.data();
  f.dtype = DType::kF32;
  owned_.push_back(std::move(buf));
  f32_cache_[name] = f;
  return f;
}

size_t WeightStore::prewarm(const std::string& substring) const {
  if (!device_->host_visible()) return 0;  // device copies are resident already
  constexpr size_t kPage = 4096;
  size_t n = 0;
  volatile uint8_t sink = 0;
  for (const auto& [name, v] : tensors_) {
    if (name.find(substring) == std::string::npos || aliases_.count(name)) continue;
    const uint8_t* p = static_cast<const uint8_t*>(v.data);
    for (size_t off = 0; off < v.n_bytes(); off += kPage) sink = static_cast<uint8_t>(sink + p[off]);
    n += v.n_bytes();
  }
  return n;
}

size_t WeightStore::bytes_matching(const std::string& substring) const {
  size_t n = 0;
  for (const auto& [name, v] : tensors_)
    if (!aliases_.count(name) && name.find(substring) != std::string::npos) n += v.n_bytes();
  return n;
}

size_t WeightStore::total_bytes() const {
  size_t n = 0;
  for (const auto& [name, v] : tensors_)
    if (!aliases_.count(name)) n += v.n_bytes();
  return n;
}

}  // namespace cai
