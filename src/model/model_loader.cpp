// Model loading: detect the format, read config + weights + tokenizer, pick the architecture from the registry.
#include "model/model_loader.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>

#include "core/host_memory.h"
#include "core/json_file.h"
#include "core/log.h"
#include "model/arch_registry.h"
#include "model/loaders/gguf.h"
#include "model/loaders/mla_weights.h"
#include "model/loaders/safetensors.h"

namespace cai {

namespace fs = std::filesystem;

namespace {

MlaDims mla_dims(const ModelConfig& c) { return {c.num_attention_heads, c.qk_nope_head_dim, c.v_head_dim}; }

// Fails, before any weight is read, when `weight_bytes` plus the KV cache the caller plans exceed what the device has
// available (host: MemAvailable). A device that reports no memory is not checked.
Status check_fits(const hal::Device& device, const ModelConfig& cfg, size_t weight_bytes, DType kv_dtype,
                  const LoadOptions& o) {
  const hal::MemoryInfo mem = device.memory_info();
  if (mem.total_bytes == 0) return {};
  const size_t tokens = static_cast<size_t>(o.kv_tokens == LoadOptions::kModelContext ? cfg.max_position_embeddings
                                                                                       : std::max<int64_t>(0, o.kv_tokens));
  const size_t per_token = kv_spec_for(cfg, kv_dtype).bytes_per_token();
  size_t kv = 0, need = 0;
  if (__builtin_mul_overflow(tokens, per_token, &kv) || __builtin_add_overflow(kv, o.kv_bytes, &kv) ||
      __builtin_add_overflow(weight_bytes, kv, &need))
    need = kv = SIZE_MAX;
  if (need <= mem.free_bytes) return {};
  constexpr double kGiB = 1 << 30;
  return out_of_memory("the model does not fit in {}: it needs {} bytes ({:.2f} GiB: {} bytes of weights + {} bytes of "
                       "{} KV cache) but {} bytes ({:.2f} GiB) are available{}",
                       device.name(), need, static_cast<double>(need) / kGiB, weight_bytes, kv, dtype_name(kv_dtype),
                       mem.free_bytes, static_cast<double>(mem.free_bytes) / kGiB,
                       device.host_visible() ? " (MemAvailable)" : "");
}

// The architecture's model over the placed weights (repacked where the device has its own layout, unless --no-repack),
// then --mlock: after repacking, so the pages locked are the ones the model reads and the file's pages that a packed
// copy replaced can still be dropped. Its RLIMIT_MEMLOCK check comes first, before any weight is repacked.
Result<std::unique_ptr<Model>> make_model(const ArchEntry& arch, const ModelConfig& cfg, WeightStore ws,
                                          hal::Device& device, DType kv_dtype, const LoadOptions& o) {
  if (o.mlock) CAI_TRY(ws.check_lock_limit());
  ws.set_repack(o.repack);
  const auto t0 = std::chrono::steady_clock::now();
  CAI_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, arch.factory(cfg, std::move(ws), device, kv_dtype));
  CAI_LOG_INFO("set up the model's weights on {} ({}) in {:.2f}s", device.name(),
               o.repack ? "in the device's layouts" : "--no-repack: as in the file",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (o.mlock) CAI_TRY(model->lock_weights());
  return model;
}

Result<LoadedModel> load_gguf(const std::string& path, hal::Device& device, DType kv_dtype, const LoadOptions& o) {
  CAI_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::open(path));
  CAI_ASSIGN_OR_RETURN(ModelConfig cfg, config_from_gguf(file->metadata()));
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
  size_t weight_bytes = 0;
  for (const GgufTensorInfo& t : file->tensors()) weight_bytes += t.n_bytes;
  CAI_TRY(check_fits(device, cfg, weight_bytes, kv_dtype, o));
  const MlaDims mla = mla_dims(cfg);
  CAI_ASSIGN_OR_RETURN(WeightStore ws, WeightStore::from_gguf(std::move(file), device, cfg.is_mla() ? &mla : nullptr));
  CAI_ASSIGN_OR_RETURN(out.model, make_model(*arch, cfg, std::move(ws), device, kv_dtype, o));
  out.format = "gguf";
  return out;
}

Result<LoadedModel> load_hf_dir(const fs::path& dir, hal::Device& device, DType kv_dtype, const LoadOptions& o) {
  CAI_ASSIGN_OR_RETURN(nlohmann::json cfg_json, read_json_file((dir / "config.json").string()));
  CAI_ASSIGN_OR_RETURN(ModelConfig cfg, config_from_hf(cfg_json));
  CAI_ASSIGN_OR_RETURN(const ArchEntry* arch, find_arch(cfg));
  LoadedModel out;
  if (fs::exists(dir / "tokenizer.json")) {
    CAI_ASSIGN_OR_RETURN(out.tokenizer, Tokenizer::from_hf_json((dir / "tokenizer.json").string(),
                                                                (dir / "tokenizer_config.json").string()));
  }
  CAI_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsCheckpoint> ckpt, SafetensorsCheckpoint::open_dir(dir.string()));
  size_t weight_bytes = 0;
  for (const auto& shard : ckpt->shards())
    for (const SafetensorsTensor& t : shard->tensors())
      if (hf_layer_index(t.name) < cfg.num_hidden_layers) weight_bytes += t.n_bytes;
  CAI_TRY(check_fits(device, cfg, weight_bytes, kv_dtype, o));
  const MlaDims mla = mla_dims(cfg);
  CAI_ASSIGN_OR_RETURN(WeightStore ws, WeightStore::from_checkpoint(std::move(ckpt), cfg.num_hidden_layers, device,
                                                                    cfg.is_mla() ? &mla : nullptr));
  CAI_ASSIGN_OR_RETURN(out.model, make_model(*arch, cfg, std::move(ws), device, kv_dtype, o));
  out.format = "hf";
  return out;
}

}  // namespace

Result<LoadedModel> load_model(const std::string& path, hal::Device& device, const LoadOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  std::error_code ec;
  if (!fs::exists(path, ec)) return not_found("model path '{}' does not exist", path);
  const DType kv_dtype = options.kv_dtype.value_or(default_kv_dtype(device));
  CAI_TRY(hal::check_kv_cache_dtype(device, "load_model", kv_dtype));  // before any weight is read
  Result<LoadedModel> r =
      fs::is_directory(path, ec) ? load_hf_dir(path, device, kv_dtype, options) : load_gguf(path, device, kv_dtype, options);
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
  CAI_LOG_INFO("loaded {} model {} ({}, {} layers, {:.1f} MiB of weights, {} KV cache) on {} in {:.2f}s, RSS {:.1f} MiB",
               r->format, path, r->model->config().architecture, r->model->config().num_hidden_layers,
               static_cast<double>(r->model->weight_bytes()) / (1 << 20), dtype_name(kv_dtype), device.name(),
               r->load_seconds, static_cast<double>(r->rss_after_load_bytes) / (1 << 20));
  return r;
}

}  // namespace cai
