// Model footprints from headers only: GGUF tensor infos, safetensors headers, or config.json + dtype rules.
#include "chips/model_footprint.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <regex>

#include "chips/data_dir.h"
#include "core/json_file.h"
#include "model/arch_registry.h"
#include "model/loaders/gguf.h"
#include "model/loaders/safetensors.h"
#include "model/model_loader.h"
#include "model/weight_inventory.h"
#include "model/weights.h"

namespace cai::chips {

namespace fs = std::filesystem;

size_t ModelFootprint::weight_bytes() const {
  size_t b = embedding.bytes + output.bytes + other.bytes;
  for (const LayerFootprint& l : layers) b += l.attention.bytes + l.ffn.bytes + l.experts.bytes;
  return b;
}

int64_t ModelFootprint::params() const {
  int64_t p = embedding.params + output.params + other.params;
  for (const LayerFootprint& l : layers) p += l.attention.params + l.ffn.params + l.experts.params;
  return p;
}

size_t ModelFootprint::expert_bytes(int layer) const {
  const int n = config.n_routed_experts;
  return n > 0 ? layers[static_cast<size_t>(layer)].experts.bytes / static_cast<size_t>(n) : 0;
}

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Adds one stored tensor under its canonical name to the part it belongs to; names the model does not read (and
// layers at or past num_hidden_layers, e.g. DeepSeek's MTP layer) count as skipped.
void add_tensor(ModelFootprint& fp, const std::string& canon, size_t bytes, int64_t params, const std::string& dtype) {
  static const std::regex block_re(R"(blk\.(\d+)\.(.+))");
  PartSize* part = nullptr;
  std::smatch m;
  if (canon == "token_embd.weight") {
    part = &fp.embedding;
  } else if (canon == "output.weight") {
    part = &fp.output;
  } else if (std::regex_match(canon, m, block_re)) {
    const size_t layer = std::stoul(m[1].str());
    const std::string rest = m[2].str();
    if (layer < fp.layers.size()) {
      LayerFootprint& l = fp.layers[layer];
      part = rest.rfind("attn_", 0) == 0 ? &l.attention : rest.find("_exps") != std::string::npos ? &l.experts : &l.ffn;
    }
  } else if (canon == "output_norm.weight" || canon == "rope_freqs.weight") {
    part = &fp.other;
  }
  if (!part) {
    fp.skipped_bytes += bytes;
    return;
  }
  part->add(bytes, params);
  fp.bytes_by_dtype[lower(dtype)] += bytes;
  if (lower(dtype) == "f8_e4m3") fp.fp8_weights = true;
}

int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

ModelFootprint empty_footprint(const ModelConfig& cfg, const std::string& source, const std::string& format) {
  ModelFootprint fp;
  fp.source = source;
  fp.format = format;
  fp.config = cfg;
  fp.layers.resize(static_cast<size_t>(cfg.num_hidden_layers));
  return fp;
}

Result<ModelFootprint> from_gguf(const std::string& path) {
  CAI_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::open(path));
  CAI_ASSIGN_OR_RETURN(ModelConfig cfg, config_from_gguf(file->metadata()));
  exclude_mtp_blocks(cfg, *file);  // the MTP module's tensors are counted as skipped, as from a checkpoint
  CAI_TRY(find_arch(cfg).status());
  cfg.tie_word_embeddings = file->find("output.weight") == nullptr;
  ModelFootprint fp = empty_footprint(cfg, path, "gguf");
  for (const GgufTensorInfo& t : file->tensors())
    add_tensor(fp, t.name, t.n_bytes, product(t.ne), std::string(dtype_name(t.dtype)));
  return fp;
}

bool has_safetensors(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".safetensors") return true;
  return false;
}

Result<ModelFootprint> from_hf_dir(const fs::path& dir) {
  CAI_ASSIGN_OR_RETURN(nlohmann::json cfg_json, read_json_file((dir / "config.json").string()));
  if (!has_safetensors(dir)) return footprint_from_config(cfg_json, dir.string(), "config");
  CAI_ASSIGN_OR_RETURN(ModelConfig cfg, config_from_hf(cfg_json));
  CAI_TRY(find_arch(cfg).status());
  CAI_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsCheckpoint> ckpt, SafetensorsCheckpoint::open_dir(dir.string()));
  ModelFootprint fp = empty_footprint(cfg, dir.string(), "hf");
  static const std::string kScale = "_scale_inv";
  for (const auto& shard : ckpt->shards()) {
    for (const SafetensorsTensor& t : shard->tensors()) {
      const bool scale = t.name.size() > kScale.size() && t.name.ends_with(kScale);
      const std::string weight = scale ? t.name.substr(0, t.name.size() - kScale.size()) : t.name;
      const std::optional<std::string> canon = canonical_name_from_hf(weight);
      if (!canon) {
        fp.skipped_bytes += t.n_bytes;
        continue;
      }
      add_tensor(fp, *canon, t.n_bytes, scale ? 0 : product(t.shape), t.dtype_name);
    }
  }
  return fp;
}

Result<ModelFootprint> from_preset(const std::string& name) {
  static const std::regex name_re(R"([a-z0-9][a-z0-9.\-]*)");
  const std::string dir = default_preset_dir();
  const std::vector<std::string> known = list_presets(dir);
  if (!std::regex_match(name, name_re) || std::find(known.begin(), known.end(), name) == known.end()) {
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    return not_found("unknown preset '{}' (presets in {}: {})", name, dir, list.empty() ? "none" : list);
  }
  CAI_ASSIGN_OR_RETURN(nlohmann::json j, read_json_file((fs::path(dir) / (name + ".json")).string()));
  return footprint_from_config(j, "preset:" + name, "preset");
}

// Element type of the non-quantized tensors: config.json "torch_dtype" (or the newer "dtype"); BF16 when absent.
Result<DType> config_dtype(const nlohmann::json& j) {
  std::string name = "bfloat16";
  for (const char* key : {"torch_dtype", "dtype"})
    if (j.contains(key) && j[key].is_string()) name = j[key].get<std::string>();
  if (name == "bfloat16") return DType::kBF16;
  if (name == "float16") return DType::kF16;
  if (name == "float32") return DType::kF32;
  return unsupported("config.json: torch_dtype '{}' is not one of bfloat16, float16, float32", name);
}

// quantization_config: none → {0, 0}; fp8 → its weight_block_size ([128, 128] when absent); anything else unsupported.
Result<std::pair<int64_t, int64_t>> fp8_blocks(const nlohmann::json& j) {
  auto q = j.find("quantization_config");
  if (q == j.end() || q->is_null()) return std::pair<int64_t, int64_t>{0, 0};
  const std::string method = q->is_object() && q->contains("quant_method") && (*q)["quant_method"].is_string()
                                 ? (*q)["quant_method"].get<std::string>()
                                 : "";
  if (method != "fp8")
    return unsupported(
        "config.json: quantization_config.quant_method '{}' is not sized from a config; point -m at the "
        "checkpoint directory so its safetensors headers are read",
        method);
  auto bs = q->find("weight_block_size");
  if (bs == q->end()) return std::pair<int64_t, int64_t>{128, 128};
  if (!bs->is_array() || bs->size() != 2 || !(*bs)[0].is_number_integer() || !(*bs)[1].is_number_integer() ||
      (*bs)[0].get<int64_t>() <= 0 || (*bs)[1].get<int64_t>() <= 0)
    return invalid_argument("config.json: quantization_config.weight_block_size must be two positive integers");
  return std::pair<int64_t, int64_t>{(*bs)[0].get<int64_t>(), (*bs)[1].get<int64_t>()};
}

}  // namespace

Result<ModelFootprint> footprint_from_config(const nlohmann::json& j, const std::string& source,
                                             const std::string& format) {
  CAI_ASSIGN_OR_RETURN(ModelConfig cfg, config_from_hf(j));
  CAI_TRY(find_arch(cfg).status());
  CAI_ASSIGN_OR_RETURN(const DType plain, config_dtype(j));
  CAI_ASSIGN_OR_RETURN(const auto blocks, fp8_blocks(j));
  ModelFootprint fp = empty_footprint(cfg, source, format);
  const size_t plain_bytes = dtype_info(plain).block_bytes;
  for (const WeightEntry& w : weight_inventory(cfg)) {
    const int64_t n = w.n_elements();
    if (w.kind == WeightKind::kF32Vector) {
      add_tensor(fp, w.name, static_cast<size_t>(n) * 4, n, "f32");
    } else if (w.kind == WeightKind::kLinear && blocks.first > 0) {  // FP8 codes + F32 scale_inv per block
      const size_t n_mats = w.shape.size() == 3 ? static_cast<size_t>(w.shape[0]) : 1;
      const int64_t out = w.shape[w.shape.size() - 2], in = w.shape.back();
      const size_t n_blocks =
          static_cast<size_t>(((out + blocks.first - 1) / blocks.first) * ((in + blocks.second - 1) / blocks.second));
      add_tensor(fp, w.name, static_cast<size_t>(n), n, "f8_e4m3");
      add_tensor(fp, w.name, n_mats * n_blocks * 4, 0, "f32");
    } else {
      add_tensor(fp, w.name, static_cast<size_t>(n) * plain_bytes, n, std::string(dtype_name(plain)));
    }
  }
  return fp;
}

Result<ModelFootprint> load_footprint(const std::string& model) {
  static const std::string kPreset = "preset:";
  if (model.rfind(kPreset, 0) == 0) return from_preset(model.substr(kPreset.size()));
  std::error_code ec;
  if (!fs::exists(model, ec)) return not_found("model '{}' does not exist (or use preset:NAME)", model);
  if (fs::is_directory(model, ec)) return from_hf_dir(model);
  if (fs::path(model).extension() == ".json") {
    CAI_ASSIGN_OR_RETURN(nlohmann::json j, read_json_file(model));
    return footprint_from_config(j, model, "config");
  }
  return from_gguf(model);
}

std::string default_preset_dir() { return find_data_dir("CAI_PRESETS_DIR", "presets", CAI_PRESETS_SOURCE_DIR); }

std::vector<std::string> list_presets(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

size_t activation_bytes_per_token(const ModelConfig& c) {
  const size_t hidden = c.hidden_size, nh = c.num_attention_heads;
  size_t floats = 3 * hidden;  // decoder x, h, y
  if (c.is_mla()) {
    const size_t lora = c.kv_lora_rank, rope = c.qk_rope_head_dim;
    floats += nh * (c.qk_nope_head_dim + rope) + c.q_lora_rank + (lora + rope) + lora + nh * c.v_head_dim;
    floats += nh * (lora + rope) + nh * lora;  // absorbed query and latent attention output
  } else {
    floats += 2 * nh * c.head_dim + 2 * size_t(c.num_key_value_heads) * c.head_dim;  // q, o, k, v
  }
  const bool has_dense = c.n_routed_experts == 0 || c.first_k_dense_replace > 0;
  size_t mlp = has_dense ? size_t(c.intermediate_size) : 0;
  if (c.n_routed_experts > 0) {
    mlp = std::max(mlp, size_t(c.n_shared_experts) * c.moe_intermediate_size);
    const size_t k = c.num_experts_per_tok;
    floats += c.n_routed_experts + 2 * k + hidden + 2 * k * c.moe_intermediate_size;  // router, ids/weights, experts
  }
  floats += 2 * mlp;  // gate and up
  return floats * 4;
}

size_t logits_bytes_per_row(const ModelConfig& c) { return (2 * size_t(c.hidden_size) + c.vocab_size) * 4; }

}  // namespace cai::chips
