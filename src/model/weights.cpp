// WeightStore: HF→canonical name mapping, shape checks naming the tensor, F32 copies of small tensors, device upload.
#include "model/weights.h"

#include <algorithm>
#include <charconv>
#include <regex>
#include <set>

#include "core/host_memory.h"
#include "core/log.h"
#include "core/mapped_file.h"
#include "core/quant.h"
#include "core/weight_row.h"
#include "hal/remote_device.h"
#include "model/loaders/gguf.h"
#include "model/loaders/mla_weights.h"
#include "model/loaders/safetensors.h"
#include "model/tensor_shard.h"

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
      // DeepSeek-V3/R1 multi-token-prediction modules; their embed_tokens and shared_head.head copy the main model's
      // embedding and head, which the module reads instead (as SGLang does).
      {"enorm.weight", "nextn.enorm.weight"},
      {"hnorm.weight", "nextn.hnorm.weight"},
      {"eh_proj.weight", "nextn.eh_proj.weight"},
      {"shared_head.norm.weight", "nextn.shared_head_norm.weight"},
  };
  return m;
}

}  // namespace

std::string experts_name(int layer, const std::string& proj) {
  return "blk." + std::to_string(layer) + ".ffn_" + proj + "_exps.weight";
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
  if (std::regex_match(rest, em, expert_re))  // one expert: "blk.L.ffn_<proj>_exps.<expert>.weight" (stacked at load)
    return "blk." + m[1].str() + ".ffn_" + em[2].str() + "_exps." + em[1].str() + ".weight";
  for (const auto& [from, to] : layer_suffix_map())
    if (m[2] == from) return "blk." + m[1].str() + "." + to;
  return std::nullopt;
}

int hf_layer_index(const std::string& hf) {
  static constexpr std::string_view kPrefix = "model.layers.";
  if (!hf.starts_with(kPrefix)) return -1;
  int layer = 0;
  const char* end = hf.data() + hf.size();
  const auto [p, ec] = std::from_chars(hf.data() + kPrefix.size(), end, layer);
  return ec == std::errc() && p < end && *p == '.' ? layer : -1;
}

WeightStore::WeightStore() = default;
WeightStore::~WeightStore() = default;
WeightStore::WeightStore(WeightStore&&) noexcept = default;
WeightStore& WeightStore::operator=(WeightStore&&) noexcept = default;

namespace {

constexpr size_t kArenaAlign = 256;
size_t align_up(size_t n) { return (n + kArenaAlign - 1) / kArenaAlign * kArenaAlign; }

// The F32 [⌈rows/128⌉, ⌈cols/128⌉] block scales of FP8 weight w (the checkpoint's `weight`_scale_inv), if it has them.
Result<std::optional<TensorView>> block_scale_view(const SafetensorsCheckpoint& ckpt, const std::string& weight,
                                                   const TensorView& w) {
  const std::string name = weight + "_scale_inv";
  const SafetensorsTensor* s = ckpt.find(name);
  if (!s) return std::optional<TensorView>{};
  const int64_t want_rows = (w.rows() + kFp8ScaleBlock - 1) / kFp8ScaleBlock;
  const int64_t want_cols = (w.cols() + kFp8ScaleBlock - 1) / kFp8ScaleBlock;
  if (w.dtype != DType::kF8_E4M3)
    return invalid_argument("'{}' has block scales but dtype {}", weight, dtype_name(w.dtype));
  if (s->dtype != DType::kF32 || s->shape.size() != 2 || s->shape[0] != want_rows || s->shape[1] != want_cols)
    return invalid_argument("'{}' must be F32 [{}, {}] for weight {}", name, want_rows, want_cols, w.shape_string());
  CAI_ASSIGN_OR_RETURN(TensorView sv, s->view());
  return std::optional<TensorView>{sv};
}

}  // namespace

Status WeightStore::reserve_arenas(const std::map<hal::Device*, size_t>& bytes) {
  for (const auto& [device, n_bytes] : bytes) {
    if (device->host_visible() || n_bytes == 0) continue;
    Result<hal::Buffer> buf = device->allocate(n_bytes);
    if (!buf.ok())
      return out_of_memory("the model's weights need {} bytes ({:.1f} MiB) on {}, which it cannot allocate: {}",
                           n_bytes, static_cast<double>(n_bytes) / (1 << 20), device->name(), buf.status().message());
    arenas_[device] = Arena{std::move(*buf), 0};
  }
  return {};
}

void WeightStore::hold_for_ranks(const std::string& name, const TensorView& host) {
  Held h{host, {}};
  if (host.n_dims == 3 && name.find("_exps.") != std::string::npos) {
    for (int64_t e = 0; e < host.dim(0); ++e) h.slabs.push_back(host.slice(e));
  } else {
    h.slabs.push_back(host.n_dims == 3 ? host.reshaped({host.dim(0) * host.dim(1), host.dim(2)}) : host);
  }
  held_[name] = std::move(h);
}

void WeightStore::hold_for_ranks(const std::string& name, HostTensor t) {
  host_owned_.push_back(std::move(t));
  hold_for_ranks(name, host_owned_.back().view);
}

void WeightStore::release_held() {
  held_.clear();
  host_owned_.clear();
  std::vector<const MappedFile*> files;
  if (gguf_) files = gguf_->mapped_files();
  if (ckpt_)
    for (const auto& shard : ckpt_->shards())
      if (shard->mapped()) files.push_back(shard->mapped());
  advise_copy(files, false);
}

std::vector<std::string> WeightStore::held_names(const std::string& prefix) const {
  std::vector<std::string> names;
  for (auto it = held_.lower_bound(prefix); it != held_.end() && it->first.starts_with(prefix); ++it)
    names.push_back(it->first);
  return names;
}

Result<WeightStore> WeightStore::for_rank(const WeightStore& main,
                                          const std::vector<std::pair<std::string, std::string>>& names, int rank,
                                          int n, bool expert_parallel, hal::Device& device, int n_layers) {
  WeightStore ws;
  ws.placement_ = WeightPlacement::single(device, n_layers);
  ws.repack_ = main.repack_;
  if (expert_parallel) ws.expert_parts_ = n, ws.expert_part_ = rank;
  for (const auto& [name, source] : names) {
    const auto it = main.held_.find(source);
    if (it == main.held_.end()) return not_found("model is missing tensor '{}'", source);
    const Held& held = it->second;
    std::vector<TensorView> slabs = held.slabs;
    ShardAxis axis = name == "token_embd.weight" ? ShardAxis::kNone : shard_axis(name);
    if (expert_parallel && name.find("_exps.") != std::string::npos) {  // whole experts, a range of them
      const size_t n_e = slabs.size();
      if (n_e % static_cast<size_t>(n))
        return invalid_argument("--ep {}: '{}' has {} experts, which do not split over {} ranks", n, name, n_e, n);
      const size_t per = n_e / static_cast<size_t>(n);
      slabs = std::vector<TensorView>(held.slabs.begin() + static_cast<ptrdiff_t>(per) * rank,
                                      held.slabs.begin() + static_cast<ptrdiff_t>(per) * (rank + 1));
      axis = ShardAxis::kNone;
    }
    // Another process slices its own ranks' matrices: here they need only their shapes (vectors keep their values,
    // which get_f32 converts from).
    const bool elsewhere = hal::is_remote(device) && held.whole.n_dims > 1;
    CAI_ASSIGN_OR_RETURN(HostTensor t, shard_tensor(name, slabs, axis, rank, n, !elsewhere));
    if (held.whole.n_dims == 3 && held.slabs.size() == 1)  // heads-first [n_head, rows, cols] (attn_k_b, attn_v_b)
      t.view = t.view.reshaped(
          {held.whole.dim(0) / (axis == ShardAxis::kNone ? 1 : n), held.whole.dim(1), held.whole.dim(2)});
    CAI_ASSIGN_OR_RETURN(ws.tensors_[name], ws.upload(t));
    if (t.view.n_dims == 1) {  // norms and biases: get_f32 converts from these bytes
      ws.host_views_[name] = t.view;
      ws.host_owned_.push_back(std::move(t));
    }
  }
  return ws;
}

Result<TensorView> WeightStore::place(const std::string& name, const TensorView& host_view) {
  hal::Device& device = *placement_.device_for(name);
  TensorView v = host_view;
  v.device = &device;
  if (device.host_visible()) return v;
  host_views_[name] = host_view;
  const size_t n = host_view.n_bytes();
  Arena& arena = arenas_[&device];
  if (arena.used + n > arena.buffer.size()) return upload(host_view, device);  // not reserved (small tensors)
  v.data = static_cast<uint8_t*>(arena.buffer.data()) + arena.used;
  arena.used += align_up(n);
  CAI_TRY(device.default_stream().copy_to_device(v.data, host_view.data, n));
  return v;
}

Result<TensorView> WeightStore::upload(const TensorView& host_view, hal::Device& device) {
  CAI_ASSIGN_OR_RETURN(hal::Buffer buf, device.allocate(host_view.n_bytes()));
  CAI_TRY(device.default_stream().copy_to_device(buf.data(), host_view.data, host_view.n_bytes()));
  TensorView v = host_view;
  v.data = buf.data();
  v.device = &device;
  owned_.push_back(std::move(buf));
  return v;
}

Result<TensorView> WeightStore::upload(const HostTensor& t) {
  hal::Device& device = *placement_.device_for(t.name);
  CAI_ASSIGN_OR_RETURN(TensorView v, upload(t.view, device));
  v.scale = nullptr;
  if (!t.scales.empty()) {
    const TensorView host = TensorView::make(const_cast<float*>(t.scales.data()), DType::kF32,  // only read
                                             {static_cast<int64_t>(t.scales.size())});
    CAI_ASSIGN_OR_RETURN(TensorView sc, upload(host, device));
    v.scale = sc.as<const float>();
  }
  return v;
}

void WeightStore::advise_copy(const std::vector<const MappedFile*>& files, bool copying) const {
  const std::vector<hal::Device*> devices = placement_.devices();
  // Where every device reads the mapping itself, the mapping is the weights: pages come and go with use. Another
  // process's devices read their own mapping.
  if (std::all_of(devices.begin(), devices.end(),
                  [](const hal::Device* d) { return d->host_visible() || hal::is_remote(*d); }))
    return;
  for (const MappedFile* f : files) copying ? f->advise_sequential() : f->release();
}

Result<WeightStore> WeightStore::from_gguf(std::unique_ptr<GgufFile> file, hal::Device& device, const MlaDims* mla) {
  return from_gguf(std::move(file), WeightPlacement::single(device, 0), mla);
}

Result<WeightStore> WeightStore::from_checkpoint(std::unique_ptr<SafetensorsCheckpoint> ckpt, int n_layers,
                                                 hal::Device& device, const MlaDims* mla) {
  return from_checkpoint(std::move(ckpt), n_layers, WeightPlacement::single(device, n_layers), mla);
}

Result<WeightStore> WeightStore::from_gguf(std::unique_ptr<GgufFile> file, const WeightPlacement& placement,
                                           const MlaDims* mla) {
  WeightStore ws;
  ws.placement_ = placement;
  std::set<std::string> replaced;  // DeepSeek attn_kv_b: split into attn_k_b / attn_v_b, or unused beside them
  CAI_ASSIGN_OR_RETURN(std::vector<HostTensor> rebuilt, split_gguf_mla_kv_b(*file, mla, &replaced));
  if (!rebuilt.empty())
    CAI_LOG_INFO("split {} attn_kv_b into attn_k_b ({}) and attn_v_b ({})", rebuilt.size() / 2,
                 dtype_name(rebuilt[0].view.dtype), dtype_name(rebuilt[1].view.dtype));
  std::map<hal::Device*, size_t> total;
  for (const GgufTensorInfo& t : file->tensors())
    if (hal::Device* d = placement.device_for(t.name); d && !replaced.count(t.name) && placement.loads(t.name))
      total[d] += align_up(t.view().n_bytes());
  CAI_TRY(ws.reserve_arenas(total));
  ws.advise_copy(file->mapped_files(), true);
  for (const GgufTensorInfo& t : file->tensors()) {
    if (replaced.count(t.name) || !placement.loads(t.name)) continue;
    if (!placement.device_for(t.name)) {
      ws.hold_for_ranks(t.name, t.view());
      continue;
    }
    CAI_ASSIGN_OR_RETURN(ws.tensors_[t.name], ws.place(t.name, t.view()));
  }
  for (HostTensor& t : rebuilt) {
    if (!placement.loads(t.name)) continue;
    if (!placement.device_for(t.name)) {
      const std::string name = t.name;
      ws.hold_for_ranks(name, std::move(t));
      continue;
    }
    CAI_ASSIGN_OR_RETURN(ws.tensors_[t.name], ws.upload(t));
  }
  ws.advise_copy(file->mapped_files(), false);
  ws.gguf_ = std::move(file);
  return ws;
}

Result<WeightStore> WeightStore::from_checkpoint(std::unique_ptr<SafetensorsCheckpoint> ckpt, int n_layers,
                                                 const WeightPlacement& placement, const MlaDims* mla) {
  static const std::regex expert_re(R"((blk\.\d+\.ffn_(?:gate|up|down)_exps)\.(\d+)\.weight)");
  WeightStore ws;
  ws.placement_ = placement;
  std::vector<std::pair<std::string, TensorView>> plain;
  std::map<std::string, std::vector<std::string>> expert_groups;  // stacked name → HF names by expert index
  struct KvB {
    std::string canon, hf;
    TensorView host;
  };
  std::vector<KvB> kv_b;  // DeepSeek kv_b_proj, split per head on the host (mla_weights.h) once the rest is placed
  std::map<hal::Device*, size_t> total;
  for (const std::string& name : ckpt->names()) {
    if (hf_layer_index(name) >= n_layers) continue;  // MTP layers
    std::optional<std::string> canon = canonical_name_from_hf(name);
    if (!canon) continue;  // rotary caches, MTP-only tensors and others the model does not read
    const SafetensorsTensor* t = ckpt->find(name);
    if (!t->dtype) return unsupported("tensor '{}' has dtype {}, which CAI cannot compute with", name, t->dtype_name);
    std::smatch m;
    if (std::regex_match(*canon, m, expert_re)) {
      std::vector<std::string>& group = expert_groups[m[1].str() + ".weight"];
      const size_t e = std::stoul(m[2]);
      if (group.size() <= e) group.resize(e + 1);
      group[e] = name;
      continue;
    }
    CAI_ASSIGN_OR_RETURN(TensorView host, t->view());
    if (canon->ends_with(".attn_kv_b.weight")) {
      kv_b.push_back({*canon, name, host});
      continue;
    }
    hal::Device* device = placement.device_for(*canon);
    if (!device) {  // tensor-parallel ranks slice it from these bytes, FP8 scales attached
      CAI_ASSIGN_OR_RETURN(std::optional<TensorView> scale, block_scale_view(*ckpt, name, host));
      if (scale) host.scale = scale->as<const float>();
      ws.hold_for_ranks(*canon, host);
      continue;
    }
    total[device] += align_up(host.n_bytes());
    plain.emplace_back(*canon, host);
  }
  CAI_TRY(ws.reserve_arenas(total));
  std::vector<const MappedFile*> files;
  for (const auto& shard : ckpt->shards())
    if (shard->mapped()) files.push_back(shard->mapped());
  ws.advise_copy(files, true);
  for (const auto& [canon, host] : plain) {
    CAI_ASSIGN_OR_RETURN(ws.tensors_[canon], ws.place(canon, host));
  }
  CAI_TRY(ws.attach_block_scales(*ckpt));
  CAI_TRY(ws.stack_experts(*ckpt, expert_groups));  // held per expert for tensor-parallel ranks
  for (KvB& t : kv_b) {
    if (!mla) return invalid_argument("'{}' needs the model's MLA head sizes to split", t.hf);
    CAI_ASSIGN_OR_RETURN(std::optional<TensorView> scale, block_scale_view(*ckpt, t.hf, t.host));
    if (scale) t.host.scale = scale->as<const float>();
    const std::string prefix = t.canon.substr(0, t.canon.size() - std::string_view("attn_kv_b.weight").size());
    CAI_ASSIGN_OR_RETURN(auto parts, split_mla_kv_b(prefix, t.host, *mla));
    if (&t == &kv_b.front())
      CAI_LOG_INFO("splitting {} kv_b_proj into attn_k_b ({}) and attn_v_b ({})", kv_b.size(),
                   dtype_name(parts[0].view.dtype), dtype_name(parts[1].view.dtype));
    for (HostTensor& part : parts) {
      if (!placement.device_for(part.name)) {
        const std::string part_name = part.name;
        ws.hold_for_ranks(part_name, std::move(part));
        continue;
      }
      CAI_ASSIGN_OR_RETURN(ws.tensors_[part.name], ws.upload(part));
    }
  }
  ws.advise_copy(files, false);
  ws.ckpt_ = std::move(ckpt);
  return ws;
}

Status WeightStore::stack_experts(const SafetensorsCheckpoint& ckpt,
                                  const std::map<std::string, std::vector<std::string>>& groups) {
  for (const auto& [stacked, names] : groups) {
    std::vector<TensorView> views;
    std::vector<const SafetensorsTensor*> scales;
    for (size_t e = 0; e < names.size(); ++e) {
      if (names[e].empty()) return not_found("'{}': expert {} is missing from the checkpoint", stacked, e);
      CAI_ASSIGN_OR_RETURN(TensorView v, ckpt.find(names[e])->view());
      if (v.n_dims != 2 || (e > 0 && (v.dtype != views[0].dtype || v.shape != views[0].shape)))
        return invalid_argument("'{}' has a dtype or shape unlike the other experts of its layer", names[e]);
      views.push_back(v);
      scales.push_back(ckpt.find(names[e] + "_scale_inv"));
    }
    const int64_t n_e = static_cast<int64_t>(views.size()), rows = views[0].dim(0), cols = views[0].dim(1);
    if (!placement_.device_for(stacked)) {  // tensor-parallel ranks slice each expert's rows from its own view
      Held held{TensorView::make(nullptr, views[0].dtype, {n_e, rows, cols}), views};
      for (size_t e = 0; e < views.size(); ++e)
        if (scales[e]) {
          CAI_ASSIGN_OR_RETURN(std::optional<TensorView> sv, block_scale_view(ckpt, names[e], views[e]));
          held.slabs[e].scale = sv->as<const float>();
        }
      held_[stacked] = std::move(held);
      continue;
    }
    const size_t slab = views[0].n_bytes();
    hal::Device& device = *placement_.device_for(stacked);
    CAI_ASSIGN_OR_RETURN(hal::Buffer buf, device.allocate(slab * static_cast<size_t>(n_e)));
    for (int64_t e = 0; e < n_e; ++e)
      CAI_TRY(device.default_stream().copy_to_device(static_cast<uint8_t*>(buf.data()) + slab * static_cast<size_t>(e),
                                                     views[static_cast<size_t>(e)].data, slab));
    TensorView v = TensorView::make(buf.data(), views[0].dtype, {n_e, rows, cols});
    v.device = &device;
    owned_.push_back(std::move(buf));
    if (scales[0]) {
      const int64_t per =
          ((rows + kFp8ScaleBlock - 1) / kFp8ScaleBlock) * ((cols + kFp8ScaleBlock - 1) / kFp8ScaleBlock);
      std::vector<float> all;
      for (size_t e = 0; e < scales.size(); ++e) {
        if (!scales[e] || scales[e]->dtype != DType::kF32 ||
            scales[e]->n_bytes != static_cast<size_t>(per) * sizeof(float))
          return invalid_argument("'{}_scale_inv' must be F32 with {} block scales", names[e], per);
        CAI_ASSIGN_OR_RETURN(TensorView sv, scales[e]->view());
        all.insert(all.end(), sv.as<const float>(), sv.as<const float>() + per);
      }
      const TensorView all_scales = TensorView::make(all.data(), DType::kF32, {static_cast<int64_t>(all.size())});
      CAI_ASSIGN_OR_RETURN(TensorView sc, upload(all_scales, device));
      v.scale = sc.as<const float>();
    }
    tensors_[stacked] = v;
  }
  return {};
}

// DeepSeek FP8: `X.weight` (F8_E4M3) has a sibling `X.weight_scale_inv` (F32 [ceil(out/128), ceil(in/128)]).
Status WeightStore::attach_block_scales(const SafetensorsCheckpoint& ckpt) {
  static const std::string kSuffix = "_scale_inv";
  for (const std::string& name : ckpt.names()) {
    if (name.size() <= kSuffix.size() || name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0)
      continue;
    const std::string weight = name.substr(0, name.size() - kSuffix.size());
    std::optional<std::string> canon = canonical_name_from_hf(weight);
    if (!canon || !tensors_.count(*canon)) continue;
    TensorView& w = tensors_[*canon];
    CAI_ASSIGN_OR_RETURN(std::optional<TensorView> sv, block_scale_view(ckpt, weight, w));
    hal::Device& device = *w.device;
    CAI_ASSIGN_OR_RETURN(TensorView placed, device.host_visible() ? place(*canon, *sv) : upload(*sv, device));
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

Result<TensorView> WeightStore::get_gemm_weight(const std::string& name, std::initializer_list<int64_t> shape,
                                                hal::ActivationGrain grain) {
  CAI_ASSIGN_OR_RETURN(TensorView v, get(name, shape));
  hal::Device& device = *v.device;
  if (!repack_ || !device.packs_gemm_weight(v, grain)) return v;
  CAI_ASSIGN_OR_RETURN(hal::Buffer buf, device.allocate(v.n_bytes()));
  CAI_ASSIGN_OR_RETURN(TensorView packed, device.pack_gemm_weight(v, grain, buf.data()));
  owned_.push_back(std::move(buf));
  if (gguf_)  // the packed copy replaces the file's bytes: drop our pages of them
    for (const MappedFile* f : gguf_->mapped_files())
      if (f->contains(v.data, v.n_bytes())) f->release(v.data, v.n_bytes());
  tensors_[name] = packed;
  return packed;
}

Result<TensorView> WeightStore::get_f32(const std::string& name, std::initializer_list<int64_t> shape) {
  if (auto it = f32_cache_.find(name); it != f32_cache_.end()) return it->second;
  CAI_ASSIGN_OR_RETURN(TensorView v, get(name, shape));
  if (v.dtype == DType::kF32) return v;
  // Convert from the file's host bytes (what `v` was placed from), then upload.
  hal::Device& device = *v.device;
  TensorView host = v;
  if (!device.host_visible()) {
    auto it = host_views_.find(name);
    if (it == host_views_.end() || v.scale)
      return unsupported("'{}': no host copy to convert to F32 on {}", name, device.name());
    host = it->second;
  }
  std::vector<float> values(static_cast<size_t>(v.n_elements()));
  for (int64_t r = 0; r < v.rows(); ++r) dequantize_weight_row(host, r, values.data() + r * v.cols());
  TensorView f = v;
  f.dtype = DType::kF32;
  f.scale = nullptr;
  f.data = values.data();
  CAI_ASSIGN_OR_RETURN(f, upload(f, device));
  f32_cache_[name] = f;
  return f;
}

Result<TensorView> WeightStore::upload_f32(const std::string& name, const std::vector<float>& values,
                                           hal::Device& device) {
  const std::string key = name + "@" + device.name();
  if (auto it = f32_cache_.find(key); it != f32_cache_.end()) return it->second;
  std::vector<float> copy = values;  // a mutable source for the view; copy_to_device stages it
  CAI_ASSIGN_OR_RETURN(TensorView v,
                       upload(TensorView::make(copy.data(), DType::kF32, {static_cast<int64_t>(copy.size())}), device));
  f32_cache_[key] = v;
  return v;
}

size_t WeightStore::host_resident_bytes() const {
  size_t n = 0;
  for (const auto& [name, v] : tensors_)
    if (v.device->host_visible()) n += v.n_bytes();
  return n;
}

Status WeightStore::check_lock_limit() const {
  const size_t total = host_resident_bytes();
  if (total == 0) return {};
  return check_lockable(total, fmt::format("the {} bytes of weights", total));
}

Status WeightStore::lock_in_memory() const {
  const size_t total = host_resident_bytes();
  if (total == 0) {
    CAI_LOG_INFO("--mlock: the weights live in the devices' own memory; nothing to lock on the host");
    return {};
  }
  CAI_TRY(check_lock_limit());
  for (const auto& [name, v] : tensors_)
    if (v.device->host_visible())
      CAI_TRY(lock_pages(v.data, v.n_bytes(), fmt::format("the {} bytes of weights (stopped at '{}')", total, name)));
  return {};
}

size_t WeightStore::prewarm(const std::string& substring) const {
  constexpr size_t kPage = 4096;
  size_t n = 0;
  volatile uint8_t sink = 0;
  for (const auto& [name, v] : tensors_) {
    // device copies are resident already
    if (name.find(substring) == std::string::npos || !v.device->host_visible()) continue;
    const uint8_t* p = static_cast<const uint8_t*>(v.data);
    for (size_t off = 0; off < v.n_bytes(); off += kPage) sink = static_cast<uint8_t>(sink + p[off]);
    n += v.n_bytes();
  }
  return n;
}

size_t WeightStore::bytes_matching(const std::string& substring) const {
  size_t n = 0;
  for (const auto& [name, v] : tensors_)
    if (name.find(substring) != std::string::npos) n += v.n_bytes();
  return n;
}

size_t WeightStore::bytes_on(const hal::Device& device) const {
  size_t n = 0;
  for (const auto& [name, v] : tensors_)
    if (v.device == &device) n += v.n_bytes();
  return n;
}

size_t WeightStore::total_bytes() const {
  size_t n = 0;
  for (const auto& [name, v] : tensors_) n += v.n_bytes();
  return n;
}

}  // namespace cai
