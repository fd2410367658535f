// Model loading: detect the format, read config + weights + tokenizer, pick the architecture from the registry.
#include "model/model_loader.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>

#include "core/host_memory.h"
#include "core/json_file.h"
#include "core/log.h"
#include "hal/process_group.h"
#include "hal/remote_device.h"
#include "model/arch_registry.h"
#include "model/loaders/gguf.h"
#include "model/loaders/mla_weights.h"
#include "model/loaders/safetensors.h"
#include "model/tensor_shard.h"

namespace cai {

namespace fs = std::filesystem;

namespace {

MlaDims mla_dims(const ModelConfig& c) { return {c.num_attention_heads, c.qk_nope_head_dim, c.v_head_dim}; }

// Fails, before any weight is read, when a device's share of the weights (`weight_bytes` by device) plus the KV
// cache of its layers that the caller plans exceed what it has available (host: MemAvailable). The KV budget
// (kv_tokens, kv_bytes) is split over the devices by their share of the layers. A device that reports no memory is
// not checked.
Status check_fits(const WeightPlacement& placement, const std::map<hal::Device*, size_t>& weight_bytes,
                  const ModelConfig& cfg, DType kv_dtype, const LoadOptions& o) {
  const size_t tokens = static_cast<size_t>(
      o.kv_tokens == LoadOptions::kModelContext ? cfg.max_position_embeddings : std::max<int64_t>(0, o.kv_tokens));
  const size_t n_layers = std::max<size_t>(1, placement.layer_stage.size());
  // A tensor-parallel rank caches its share of the GQA heads, or MLA's whole latent.
  const size_t per_layer_token =
      kv_spec_for(cfg, kv_dtype).bytes_per_token() / n_layers / static_cast<size_t>(cfg.is_mla() ? 1 : placement.tp);
  for (hal::Device* device : placement.devices()) {
    const hal::MemoryInfo mem = device->memory_info();
    if (mem.total_bytes == 0) continue;
    size_t layers_here = 0;
    for (size_t l = 0; l < placement.layer_stage.size(); ++l) {
      const std::vector<hal::Device*>& ranks = placement.layer_ranks(static_cast<int>(l));
      layers_here += static_cast<size_t>(std::count(ranks.begin(), ranks.end(), device));
    }
    const auto w = weight_bytes.find(device);
    const size_t weights = w == weight_bytes.end() ? 0 : w->second;
    size_t kv = 0, need = 0;
    if (__builtin_mul_overflow(tokens, per_layer_token * layers_here, &kv) ||
        __builtin_add_overflow(kv, o.kv_bytes / n_layers * layers_here, &kv) ||
        __builtin_add_overflow(weights, kv, &need))
      need = kv = SIZE_MAX;
    if (need <= mem.free_bytes) continue;
    constexpr double kGiB = 1 << 30;
    return out_of_memory(
        "the model does not fit in {}: it needs {} bytes ({:.2f} GiB: {} bytes of weights + {} bytes "
        "of {} KV cache{}) but {} bytes ({:.2f} GiB) are available{}",
        device->name(), need, static_cast<double>(need) / kGiB, weights, kv, dtype_name(kv_dtype),
        placement.single_device() ? "" : fmt::format(" for its {} of {} layers", layers_here, n_layers), mem.free_bytes,
        static_cast<double>(mem.free_bytes) / kGiB, device->host_visible() ? " (MemAvailable)" : "");
  }
  return {};
}

// The architecture's model over the placed weights (repacked where the device has its own layout, unless --no-repack),
// then --mlock: after repacking, so the pages locked are the ones the model reads and the file's pages that a packed
// copy replaced can still be dropped. Its RLIMIT_MEMLOCK check comes first, before any weight is repacked.
Result<std::unique_ptr<Model>> make_model(const ArchEntry& arch, const ModelConfig& cfg, WeightStore ws, DType kv_dtype,
                                          const LoadOptions& o) {
  if (o.mlock) CAI_TRY(ws.check_lock_limit());
  ws.set_repack(o.repack);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string where = hal::device_names(ws.placement().devices(), ", ");
  CAI_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, arch.factory(cfg, std::move(ws), kv_dtype));
  CAI_LOG_INFO("set up the model's weights on {} ({}) in {:.2f}s", where,
               o.repack ? "in the device's layouts" : "--no-repack: as in the file",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (o.mlock) CAI_TRY(model->lock_weights());
  return model;
}

// The layout's devices per layer for this model; logged where there is more than one device.
Result<WeightPlacement> placement_for(const Layout& layout, const ModelConfig& cfg, bool tied_embeddings, bool mtp) {
  CAI_ASSIGN_OR_RETURN(WeightPlacement p, WeightPlacement::from_layout(layout, cfg.num_hidden_layers, tied_embeddings));
  if (mtp) {
    if (cfg.n_mtp_layers == 0)
      return invalid_argument(
          "--spec mtp: the model has no multi-token-prediction module (num_nextn_predict_layers / "
          "nextn_predict_layers with its tensors)");
    // The module starts from the main model's final hidden states, which the process of the head's first rank reads:
    // in an MPI job that must be the leader's, which samples.
    if (const hal::ProcessGroup* group = hal::process_group(); group && hal::owning_process(p.head(), *group) != 0)
      return unsupported(
          "--spec mtp in an MPI job: the head's first rank {} runs on rank {}, and the module needs its hidden "
          "states on the leader (rank 0); use a layout whose last stage starts with rank 0's device (--tp or --ep "
          "over the ranks)",
          p.head().name(), hal::owning_process(p.head(), *group));
    p.mtp_layers = 1;  // the module every checkpoint ships; further ones (if any) stay unread
  }
  if (p.single_device()) return p;
  std::string stages;
  for (int l = 0; l < cfg.num_hidden_layers;) {
    const int stage = p.layer_stage[static_cast<size_t>(l)];
    int end = l;
    while (end < cfg.num_hidden_layers && p.layer_stage[static_cast<size_t>(end)] == stage) ++end;
    const std::string ranks = hal::device_names(p.stages[static_cast<size_t>(stage)]);
    stages += fmt::format("{}layers {}..{} on {}", stages.empty() ? "" : "; ", l, end - 1, ranks);
    l = end;
  }
  CAI_LOG_INFO("layout: {}{}; embedding on {}, head on the last stage{}", stages,
               p.tp > 1 ? fmt::format(" (tensor parallel, {} ranks a stage)", p.tp) : "", p.embed->name(),
               layout.moe_devices.empty() ? "" : "; routed experts on " + hal::device_names(layout.moe_devices));
  return p;
}

// Each device's share of a tensor of `bytes` bytes: all of it on its one device, or with tensor-parallel stages a
// 1/tp slice (tensor_shard.h) or a replica on each rank of the stage that holds it.
void add_weight_bytes(const WeightPlacement& p, const std::string& name, size_t bytes,
                      std::map<hal::Device*, size_t>& by_device) {
  if (!p.loads(name)) return;  // an MTP module that was not asked for
  if (hal::Device* d = p.device_for(name)) {
    by_device[d] += bytes;
    return;
  }
  if (name == "token_embd.weight") by_device[p.embed] += bytes;
  const int layer = block_index(name);
  const bool in_layers = layer >= 0 && layer < static_cast<int>(p.layer_stage.size());
  if (!in_layers && name != "output.weight" && name != "output_norm.weight") return;
  const std::vector<hal::Device*>& ranks = in_layers ? p.layer_ranks(layer) : p.stages.back();
  const size_t share = shard_axis(name) == ShardAxis::kNone ? bytes : bytes / ranks.size();
  for (hal::Device* d : ranks) by_device[d] += share;
}

Result<LoadedModel> load_gguf(const std::string& path, const Layout& layout, DType kv_dtype, const LoadOptions& o) {
  CAI_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::open(path));
  CAI_ASSIGN_OR_RETURN(ModelConfig cfg, config_from_gguf(file->metadata()));
  exclude_mtp_blocks(cfg, *file);
  if (const GgufTensorInfo* rf = file->find("rope_freqs.weight")) {
    if (rf->dtype != DType::kF32 || static_cast<int>(rf->n_bytes / 4) != cfg.rope_dim / 2)
      return invalid_argument("{}: rope_freqs.weight must be F32 [{}]", path, cfg.rope_dim / 2);
    const float* f = reinterpret_cast<const float*>(rf->data);
    cfg.rope_freq_divisors.assign(f, f + cfg.rope_dim / 2);
  }
  LoadedModel out;
  if (file->metadata().contains("tokenizer.ggml.model")) {
    CAI_ASSIGN_OR_RETURN(out.tokenizer, Tokenizer::from_gguf_metadata(file->metadata()));
  }
  CAI_ASSIGN_OR_RETURN(const ArchEntry* arch, find_arch(cfg));
  CAI_ASSIGN_OR_RETURN(const WeightPlacement placement,
                       placement_for(layout, cfg, file->find("output.weight") == nullptr, o.mtp));
  std::map<hal::Device*, size_t> weight_bytes;
  for (const GgufTensorInfo& t : file->tensors()) add_weight_bytes(placement, t.name, t.n_bytes, weight_bytes);
  CAI_TRY(check_fits(placement, weight_bytes, cfg, kv_dtype, o));
  const MlaDims mla = mla_dims(cfg);
  CAI_ASSIGN_OR_RETURN(WeightStore ws,
                       WeightStore::from_gguf(std::move(file), placement, cfg.is_mla() ? &mla : nullptr));
  CAI_ASSIGN_OR_RETURN(out.model, make_model(*arch, cfg, std::move(ws), kv_dtype, o));
  out.format = "gguf";
  return out;
}

// The canonical name a checkpoint tensor is loaded under (an FP8 block scale: its weight's), or nullopt.
std::optional<std::string> loaded_name(const std::string& hf_name) {
  static constexpr std::string_view kScale = "_scale_inv";
  if (hf_name.ends_with(kScale)) return canonical_name_from_hf(hf_name.substr(0, hf_name.size() - kScale.size()));
  return canonical_name_from_hf(hf_name);
}

Result<LoadedModel> load_hf_dir(const fs::path& dir, const Layout& layout, DType kv_dtype, const LoadOptions& o) {
  CAI_ASSIGN_OR_RETURN(nlohmann::json cfg_json, read_json_file((dir / "config.json").string()));
  CAI_ASSIGN_OR_RETURN(ModelConfig cfg, config_from_hf(cfg_json));
  CAI_ASSIGN_OR_RETURN(const ArchEntry* arch, find_arch(cfg));
  LoadedModel out;
  if (fs::exists(dir / "tokenizer.json")) {
    CAI_ASSIGN_OR_RETURN(out.tokenizer, Tokenizer::from_hf_json((dir / "tokenizer.json").string(),
                                                                (dir / "tokenizer_config.json").string()));
  }
  CAI_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsCheckpoint> ckpt, SafetensorsCheckpoint::open_dir(dir.string()));
  if (cfg.n_mtp_layers > 0 && !ckpt->find(fmt::format("model.layers.{}.eh_proj.weight", cfg.num_hidden_layers)))
    cfg.n_mtp_layers = 0;  // a checkpoint saved without its MTP module
  CAI_ASSIGN_OR_RETURN(const WeightPlacement placement,
                       placement_for(layout, cfg, ckpt->find("lm_head.weight") == nullptr, o.mtp));
  const int n_load = cfg.num_hidden_layers + placement.mtp_layers;
  std::map<hal::Device*, size_t> weight_bytes;
  for (const auto& shard : ckpt->shards())
    for (const SafetensorsTensor& t : shard->tensors()) {
      const std::optional<std::string> name = loaded_name(t.name);
      if (name) add_weight_bytes(placement, *name, t.n_bytes, weight_bytes);
    }
  CAI_TRY(check_fits(placement, weight_bytes, cfg, kv_dtype, o));
  const MlaDims mla = mla_dims(cfg);
  CAI_ASSIGN_OR_RETURN(WeightStore ws,
                       WeightStore::from_checkpoint(std::move(ckpt), n_load, placement, cfg.is_mla() ? &mla : nullptr));
  CAI_ASSIGN_OR_RETURN(out.model, make_model(*arch, cfg, std::move(ws), kv_dtype, o));
  out.format = "hf";
  return out;
}

}  // namespace

void exclude_mtp_blocks(ModelConfig& cfg, const GgufFile& file) {
  if (cfg.n_mtp_layers == 0) return;
  const int first = cfg.num_hidden_layers - cfg.n_mtp_layers;
  if (first > 0 && file.find("blk." + std::to_string(first) + ".nextn.eh_proj.weight"))
    cfg.num_hidden_layers = first;
  else
    cfg.n_mtp_layers = 0;
}

Result<LoadedModel> load_model(const std::string& path, hal::Device& device, const LoadOptions& options) {
  return load_model(path, Layout{{&device}, 1, false, {}, {}}, options);
}

Result<LoadedModel> load_model(const std::string& path, const Layout& layout, const LoadOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  std::error_code ec;
  if (!fs::exists(path, ec)) return not_found("model path '{}' does not exist", path);
  if (layout.devices.empty()) return invalid_argument("load_model: no device");
  // One dtype for every layer: the stage devices' default where they agree, else the narrower device default.
  DType kv_dtype = default_kv_dtype(*layout.devices.front());
  for (const hal::Device* d : layout.devices)
    if (default_kv_dtype(*d) != kv_dtype) kv_dtype = DType::kBF16;
  kv_dtype = options.kv_dtype.value_or(kv_dtype);
  for (const hal::Device* d : layout.devices)
    CAI_TRY(hal::check_kv_cache_dtype(*d, "load_model", kv_dtype));  // before any weight is read
  Result<LoadedModel> r = fs::is_directory(path, ec) ? load_hf_dir(path, layout, kv_dtype, options)
                                                     : load_gguf(path, layout, kv_dtype, options);
  if (!r.ok()) return r.status();
  r->source = path;
  const auto t1 = std::chrono::steady_clock::now();
  r->load_seconds = std::chrono::duration<double>(t1 - t0).count();
  if (options.prewarm_experts) {
    const size_t bytes = r->model->prewarm_experts();
    r->prewarm_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    CAI_LOG_INFO("pre-warmed {:.1f} MiB of expert weights in {:.2f}s", static_cast<double>(bytes) / (1 << 20),
                 r->prewarm_seconds);
  }
  r->rss_after_load_bytes = resident_bytes();
  const std::string where = hal::device_names(r->model->devices(), ", ");
  CAI_LOG_INFO(
      "loaded {} model {} ({}, {} layers, {:.1f} MiB of weights, {} KV cache) on {} in {:.2f}s, RSS {:.1f} MiB",
      r->format, path, r->model->config().architecture, r->model->config().num_hidden_layers,
      static_cast<double>(r->model->weight_bytes()) / (1 << 20), dtype_name(kv_dtype), where, r->load_seconds,
      static_cast<double>(r->rss_after_load_bytes) / (1 << 20));
  return r;
}

}  // namespace cai
