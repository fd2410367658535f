// HF → GGUF conversion: config.json → ModelShape → GGUF keys; safetensors rows → GGUF tensors, experts stacked,
// DeepSeek kv_b split into attn_k_b / attn_v_b as mainline llama.cpp writes it.
#include "convert.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>

#include "core/weight_row.h"
#include "model/loaders/safetensors.h"
#include "model/weights.h"

namespace cai::mkmodel {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Result<json> read_config(const std::string& dir) {
  const fs::path p = fs::path(dir) / "config.json";
  std::ifstream in(p);
  if (!in) return not_found("'{}' has no config.json: not a Hugging Face model directory", dir);
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return corrupt("{} is not a JSON object", p.string());
  return j;
}

// A GGUF tensor being assembled from HF tensors: one source, or one per expert (stacked).
struct Source {
  std::vector<int64_t> shape;     // HF shape (PyTorch order) of one source
  std::vector<TensorView> views;  // [0] = the tensor; experts: [e] = expert e
};

// The HF tensor as a host view, with its FP8 block scales attached
// (docs/design/formats.md#fp8-e4m3-and-deepseek-block-scales).
Result<TensorView> source_view(const SafetensorsCheckpoint& ckpt, const std::string& name) {
  const SafetensorsTensor* t = ckpt.find(name);
  if (!t->dtype) return unsupported("tensor '{}' has dtype {}, which cannot be converted", name, t->dtype_name);
  if (t->shape.empty() || t->shape.size() > 2) {
    return unsupported("tensor '{}' has {} dimensions (1 or 2 expected)", name, t->shape.size());
  }
  CAI_ASSIGN_OR_RETURN(TensorView v, t->view());
  const SafetensorsTensor* s = ckpt.find(name + "_scale_inv");
  if (v.dtype != DType::kF8_E4M3) {
    if (s) return invalid_argument("'{}' has block scales but dtype {}", name, t->dtype_name);
    return v;
  }
  const int64_t want_r = (v.rows() + kFp8ScaleBlock - 1) / kFp8ScaleBlock;
  const int64_t want_c = (v.cols() + kFp8ScaleBlock - 1) / kFp8ScaleBlock;
  if (!s) return invalid_argument("FP8 weight '{}' has no '{}_scale_inv'", name, name);
  if (s->dtype != DType::kF32 || s->shape != std::vector<int64_t>{want_r, want_c}) {
    return invalid_argument("'{}_scale_inv' must be F32 [{}, {}]", name, want_r, want_c);
  }
  v.scale = reinterpret_cast<const float*>(s->data);
  return v;
}

GgufRole role_of(const std::string& gguf_name, size_t n_dims, bool has_output) {
  if (n_dims == 1 || gguf_name.ends_with("ffn_gate_inp.weight")) return GgufRole::kF32;
  if (gguf_name == "output.weight" || (gguf_name == "token_embd.weight" && !has_output)) return GgufRole::kOutput;
  return GgufRole::kMatrix;
}

// Row maker for a GGUF tensor: stacked experts pick their expert; llama q/k rows (and biases) are permuted.
RowMaker row_maker(const Source& src, int64_t permute_head_dim) {
  if (src.views.size() > 1) {
    const int64_t out = src.shape[0];
    return [views = src.views, out](int64_t r, float* dst) { dequantize_weight_row(views[r / out], r % out, dst); };
  }
  const TensorView v = src.views[0];
  if (permute_head_dim > 0 && src.shape.size() == 1) {  // a bias: one row, elements permuted
    return [v, permute_head_dim](int64_t, float* dst) {
      std::vector<float> row(static_cast<size_t>(v.cols()));
      dequantize_weight_row(v, 0, row.data());
      for (int64_t i = 0; i < v.cols(); ++i) dst[i] = row[llama_permuted_row(i, permute_head_dim)];
    };
  }
  if (permute_head_dim > 0) {
    return [v, permute_head_dim](int64_t r, float* dst) {
      dequantize_weight_row(v, llama_permuted_row(r, permute_head_dim), dst);
    };
  }
  return [v](int64_t r, float* dst) { dequantize_weight_row(v, r, dst); };
}

// Canonical (GGUF) name → its sources, for every HF tensor kept; experts grouped under the stacked name.
// Counts what is dropped: layers past the MTP modules kept, names with no GGUF counterpart (the modules' copies of
// the embedding and head).
Status collect_sources(const SafetensorsCheckpoint& ckpt, const ModelShape& s, std::map<std::string, Source>& out,
                       int64_t& n_dropped) {
  static const std::regex layer_re(R"(blk\.(\d+)\..*)");
  static const std::regex expert_re(R"(blk\.(\d+)\.ffn_(gate|up|down)_exps\.(\d+)\.weight)");
  for (const std::string& name : ckpt.names()) {
    if (name.ends_with("_scale_inv")) continue;  // read with its weight
    const std::optional<std::string> canon = canonical_name_from_hf(name);
    std::smatch m;
    if (!canon || (std::regex_match(*canon, m, layer_re) && std::stoll(m[1]) >= s.n_layers + s.n_mtp_layers)) {
      ++n_dropped;
      continue;
    }
    CAI_ASSIGN_OR_RETURN(TensorView v, source_view(ckpt, name));
    const std::vector<int64_t> shape = ckpt.find(name)->shape;
    if (!std::regex_match(*canon, m, expert_re)) {
      out[*canon] = Source{shape, {v}};
      continue;
    }
    const int64_t e = std::stoll(m[3]);
    if (e >= s.mla.n_routed_experts) return invalid_argument("'{}': expert {} of {}", name, e, s.mla.n_routed_experts);
    Source& st = out[fmt::format("blk.{}.ffn_{}_exps.weight", m[1].str(), m[2].str())];
    if (st.views.empty()) {
      st.shape = shape;
      st.views.resize(static_cast<size_t>(s.mla.n_routed_experts));
    }
    if (shape != st.shape) return invalid_argument("'{}' has a shape unlike the other experts of its layer", name);
    st.views[static_cast<size_t>(e)] = v;
  }
  for (const auto& [name, src] : out) {
    for (size_t e = 0; e < src.views.size(); ++e) {
      if (!src.views[e].data) return not_found("'{}': expert {} is missing from the checkpoint", name, e);
    }
  }
  return Status::ok_status();
}

// GGUF order: rope_freqs, token_embd, blocks by layer number, output_norm, output.
std::tuple<int, int64_t, std::string> order_key(const std::string& name) {
  if (name == "rope_freqs.weight") return {0, 0, name};
  if (name == "token_embd.weight") return {1, 0, name};
  if (name.starts_with("blk.")) return {2, std::stoll(name.substr(4)), name};
  return {3, 0, name};
}

Result<std::vector<GgufTensorSpec>> gguf_tensors(const std::map<std::string, Source>& sources, const ModelShape& s,
                                                 const std::vector<float>& rope_freq_divisors) {
  std::map<std::tuple<int, int64_t, std::string>, GgufTensorSpec> ordered;
  const bool has_output = sources.count("output.weight") != 0;
  for (const auto& [name, src] : sources) {
    if (s.arch == "deepseek2" && name.ends_with(".attn_kv_b.weight")) {  // written split, as mainline llama.cpp does
      const std::vector<int64_t> want = {s.n_heads * (s.mla.qk_nope_head_dim + s.mla.v_head_dim), s.mla.kv_lora_rank};
      if (src.shape != want) {
        return invalid_argument("'{}' is not [{}, {}] (heads × (qk_nope + v), kv_lora_rank)", name, want[0], want[1]);
      }
      std::vector<GgufTensorSpec> split;
      add_kv_b_split(s, name.substr(0, name.size() - std::string_view("attn_kv_b.weight").size()), row_maker(src, 0),
                     split);
      for (GgufTensorSpec& t : split) ordered[order_key(t.name)] = std::move(t);
      continue;
    }
    int64_t permute = 0;
    if (s.arch == "llama" && name.find(".attn_q.") != std::string::npos) permute = src.shape[0] / s.n_heads;
    if (s.arch == "llama" && name.find(".attn_k.") != std::string::npos) permute = src.shape[0] / s.n_kv_heads;
    std::vector<int64_t> shape = src.shape;
    if (src.views.size() > 1) shape.insert(shape.begin(), static_cast<int64_t>(src.views.size()));
    ordered[order_key(name)] = {name, shape, role_of(name, src.shape.size(), has_output), row_maker(src, permute)};
  }
  // Llama-3 / linear scaling: per-pair divisors (docs/design/formats.md#llama-3-frequency-scaling)
  if (!rope_freq_divisors.empty()) {
    ordered[order_key("rope_freqs.weight")] = {
        "rope_freqs.weight",
        {static_cast<int64_t>(rope_freq_divisors.size())},
        GgufRole::kF32,
        [d = rope_freq_divisors](int64_t, float* dst) { std::copy(d.begin(), d.end(), dst); }};
  }
  std::vector<GgufTensorSpec> out;
  for (auto& [key, t] : ordered) out.push_back(std::move(t));
  return out;
}

}  // namespace

Result<ModelShape> shape_from_hf_config(const ModelConfig& c, const json& raw) {
  ModelShape s;
  const std::string type = c.model_type;
  if (type == "deepseek_v3" || type == "deepseek_v2") {
    s.arch = "deepseek2";
  } else if (type == "llama" || type == "qwen2") {
    s.arch = type;
    if (c.head_dim * c.num_attention_heads != c.hidden_size) {
      return unsupported("config.json: head_dim {} × {} heads != hidden_size {}", c.head_dim, c.num_attention_heads,
                         c.hidden_size);
    }
  } else {
    return unsupported("config.json: model_type '{}' cannot be converted (llama, qwen2, deepseek_v3)", type);
  }
  s.hidden = c.hidden_size;
  s.n_layers = c.num_hidden_layers;
  s.n_heads = c.num_attention_heads;
  s.n_kv_heads = c.num_key_value_heads;
  s.ffn = c.intermediate_size;
  s.vocab = c.vocab_size;
  s.ctx = c.max_position_embeddings;
  s.tied = c.tie_word_embeddings;
  s.rope_theta = c.rope_theta;
  s.rms_eps = c.rms_norm_eps;
  if (c.yarn_factor > 1.0f) {
    s.yarn_factor = c.yarn_factor;
    s.yarn_original_ctx = c.yarn_original_max_position_embeddings;
    s.yarn_beta_fast = c.yarn_beta_fast;
    s.yarn_beta_slow = c.yarn_beta_slow;
    s.yarn_mscale = c.yarn_mscale;
    s.yarn_mscale_all_dim = c.yarn_mscale_all_dim;
    // GGUF keeps one number, 0.1 × mscale_all_dim, and readers take mscale = mscale_all_dim from it.
    const bool representable =
        c.yarn_mscale == c.yarn_mscale_all_dim || (c.yarn_mscale_all_dim == 0.0f && c.yarn_mscale == 1.0f);
    if (s.arch == "deepseek2" && !representable) {
      return unsupported("config.json: rope_scaling mscale {} != mscale_all_dim {} cannot be expressed in GGUF",
                         c.yarn_mscale, c.yarn_mscale_all_dim);
    }
  }
  if (s.arch == "deepseek2") {
    MlaMoeShape& d = s.mla;
    d.q_lora_rank = c.q_lora_rank;
    d.kv_lora_rank = c.kv_lora_rank;
    d.qk_nope_head_dim = c.qk_nope_head_dim;
    d.qk_rope_head_dim = c.qk_rope_head_dim;
    d.v_head_dim = c.v_head_dim;
    d.first_k_dense_replace = c.n_routed_experts > 0 ? c.first_k_dense_replace : c.num_hidden_layers;
    d.n_routed_experts = c.n_routed_experts;
    d.moe_ffn = c.moe_intermediate_size;
    d.n_shared_experts = c.n_shared_experts;
    d.top_k = c.num_experts_per_tok;
    d.n_group = c.n_group;
    d.topk_group = c.topk_group;
    d.sigmoid = c.scoring_func == "sigmoid";
    d.norm_topk_prob = c.norm_topk_prob;
    d.routed_scaling_factor = c.routed_scaling_factor;
    if (raw.contains("moe_layer_freq") && raw["moe_layer_freq"] != 1) {
      return unsupported("config.json: moe_layer_freq {} (only 1 is supported)", raw["moe_layer_freq"].dump());
    }
  }
  return s;
}

Result<ConvertStats> convert_hf_to_gguf(const std::string& dir, const EmitOptions& o, const std::string& path) {
  CAI_ASSIGN_OR_RETURN(json raw, read_config(dir));
  CAI_ASSIGN_OR_RETURN(ModelConfig cfg, config_from_hf(raw));
  CAI_ASSIGN_OR_RETURN(ModelShape shape, shape_from_hf_config(cfg, raw));
  CAI_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsCheckpoint> ckpt, SafetensorsCheckpoint::open_dir(dir));
  // DeepSeek's MTP modules go along as the last blocks (blk.L.nextn.* beside a decoder block), as llama.cpp keeps them.
  if (shape.arch == "deepseek2" && ckpt->find(fmt::format("model.layers.{}.eh_proj.weight", cfg.num_hidden_layers)))
    shape.n_mtp_layers = cfg.n_mtp_layers;
  ConvertStats stats;
  stats.arch = shape.arch;
  std::map<std::string, Source> sources;
  CAI_TRY(collect_sources(*ckpt, shape, sources, stats.n_dropped));
  CAI_ASSIGN_OR_RETURN(std::vector<GgufTensorSpec> tensors, gguf_tensors(sources, shape, cfg.rope_freq_divisors));

  std::function<void(GgufWriter&)> tokenizer = [](GgufWriter&) {};
  if (fs::exists(fs::path(dir) / "tokenizer.json")) {
    const std::string pre = shape.arch == "deepseek2" ? "deepseek-v3" : shape.arch == "llama" ? "llama-bpe" : "qwen2";
    Result<std::function<void(GgufWriter&)>> t = gguf_tokenizer_from_hf(dir, pre, shape.vocab);
    if (t.ok()) {
      tokenizer = std::move(t).value();
      stats.has_tokenizer = true;
    } else if (t.status().code() == StatusCode::kUnsupported) {
      stats.tokenizer_note = t.status().message();
    } else {
      return t.status();
    }
  } else {
    stats.tokenizer_note = "no tokenizer.json";
  }
  auto metadata = [&](GgufWriter& w) {
    if (shape.arch == "deepseek2") {
      deepseek2_gguf_keys(shape, w);
    } else {
      llama_family_gguf_keys(shape, w);
    }
    tokenizer(w);
  };
  CAI_ASSIGN_OR_RETURN(stats.emit, write_gguf_file(tensors, metadata, o, path));
  return stats;
}

}  // namespace cai::mkmodel
