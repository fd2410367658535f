// tokenizer.json (byte-level BPE) + tokenizer_config.json → GGUF tokenizer.ggml.* keys and the chat template.
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <unordered_map>

#include "convert.h"
#include "tokenizer/hf_json_reader.h"
#include "vocab.h"

namespace cai::mkmodel {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int64_t kMaxTokens = int64_t{1} << 24;

struct GgufVocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<std::string> merges;
  std::string pre;
  std::optional<int64_t> bos, eos, pad;
  bool add_bos = false;
  std::string chat_template;
};

Result<std::string> read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return io_error("cannot open {}", p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The regex of the first Split step of the pre-tokenizer (a lone Split or one inside a Sequence), or "".
std::string split_regex(const json& pre) {
  if (!pre.is_object()) return "";
  if (pre.value("type", "") == "Split" && pre.contains("pattern") && pre["pattern"].contains("Regex")) {
    return pre["pattern"]["Regex"].get<std::string>();
  }
  if (pre.value("type", "") == "Sequence" && pre.contains("pretokenizers")) {
    for (const json& p : pre["pretokenizers"]) {
      std::string r = split_regex(p);
      if (!r.empty()) return r;
    }
  }
  return "";
}

// "<s>" or {"content": "<s>", ...} (tokenizer_config.json spells special tokens both ways).
std::string token_text(const json& cfg, const char* key) {
  auto it = cfg.find(key);
  if (it == cfg.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"];
  return "";
}

Result<GgufVocab> read_vocab(const std::string& text, int64_t n_vocab) {
  CAI_ASSIGN_OR_RETURN(tok::HfJsonDocument doc, tok::read_hf_tokenizer_json(text));
  const json& model = doc.dom.contains("model") ? doc.dom["model"] : json::object();
  if (model.value("type", "") != "BPE" || !doc.has_vocab_object) {
    return unsupported("tokenizer.json: model type '{}' is not a BPE vocabulary", model.value("type", "?"));
  }
  if (model.value("byte_fallback", false)) {
    return unsupported("tokenizer.json: BPE with byte_fallback (SentencePiece style) is not converted");
  }
  GgufVocab v;
  int64_t n = n_vocab;
  for (const auto& [t, id] : doc.vocab) n = std::max(n, id + 1);
  const json added = doc.dom.value("added_tokens", json::array());
  for (const json& a : added) n = std::max(n, a.value("id", int64_t{0}) + 1);
  if (n > kMaxTokens) return corrupt("tokenizer.json: token ids up to {} (more than {})", n - 1, kMaxTokens);
  v.tokens.assign(static_cast<size_t>(n), "");
  v.types.assign(static_cast<size_t>(n), kTokenUnused);
  for (const auto& [t, id] : doc.vocab) {
    if (id < 0) return corrupt("tokenizer.json: token '{}' has id {}", t, id);
    v.tokens[static_cast<size_t>(id)] = t;
    v.types[static_cast<size_t>(id)] = kTokenNormal;
  }
  for (const json& a : added) {
    const int64_t id = a.value("id", int64_t{-1});
    if (id < 0 || !a.contains("content") || !a["content"].is_string()) {
      return corrupt("tokenizer.json: bad added token {}", a.dump());
    }
    v.tokens[static_cast<size_t>(id)] = a["content"].get<std::string>();
    v.types[static_cast<size_t>(id)] = a.value("special", false) ? kTokenControl : kTokenUserDefined;
  }
  for (size_t id = 0; id < v.tokens.size(); ++id) {
    if (v.tokens[id].empty()) v.tokens[id] = "[PAD" + std::to_string(id) + "]";
  }
  v.merges.reserve(doc.merges.size());
  for (const auto& [a, b] : doc.merges) v.merges.push_back(a + " " + b);
  const std::string regex = split_regex(doc.dom.value("pre_tokenizer", json()));
  v.pre = regex == kQwen2Regex ? "qwen2" : regex == kLlama3Regex ? "llama-bpe" : "";
  return v;
}

// Special token ids, add_bos and the chat template from tokenizer_config.json, ids falling back to config.json.
void read_specials(const fs::path& dir, GgufVocab& v) {
  std::unordered_map<std::string, int64_t> ids;
  for (size_t i = 0; i < v.tokens.size(); ++i) ids.emplace(v.tokens[i], static_cast<int64_t>(i));
  json tc = json::object(), cfg = json::object();
  if (auto t = read_text(dir / "tokenizer_config.json"); t.ok()) tc = json::parse(*t, nullptr, false);
  if (auto t = read_text(dir / "config.json"); t.ok()) cfg = json::parse(*t, nullptr, false);
  if (!tc.is_object()) tc = json::object();
  if (!cfg.is_object()) cfg = json::object();
  auto lookup = [&](const char* tc_key, const char* cfg_key) -> std::optional<int64_t> {
    if (auto it = ids.find(token_text(tc, tc_key)); it != ids.end()) return it->second;
    if (cfg.contains(cfg_key) && cfg[cfg_key].is_number_integer()) return cfg[cfg_key].get<int64_t>();
    return std::nullopt;
  };
  v.bos = lookup("bos_token", "bos_token_id");
  v.eos = lookup("eos_token", "eos_token_id");
  v.pad = lookup("pad_token", "pad_token_id");
  v.add_bos = tc.contains("add_bos_token") && tc["add_bos_token"].is_boolean() && tc["add_bos_token"].get<bool>();
  if (tc.contains("chat_template") && tc["chat_template"].is_string()) v.chat_template = tc["chat_template"];
}

}  // namespace

Result<std::function<void(GgufWriter&)>> gguf_tokenizer_from_hf(const std::string& dir, const std::string& default_pre,
                                                                int64_t n_vocab) {
  CAI_ASSIGN_OR_RETURN(std::string text, read_text(fs::path(dir) / "tokenizer.json"));
  Result<GgufVocab> parsed = [&]() -> Result<GgufVocab> {
    try {
      return read_vocab(text, n_vocab);
    } catch (const json::exception& e) {
      return corrupt("tokenizer.json: {}", e.what());
    }
  }();
  if (!parsed.ok()) return parsed.status();
  auto v = std::make_shared<GgufVocab>(std::move(parsed).value());
  if (v->pre.empty()) v->pre = default_pre;
  read_specials(fs::path(dir), *v);
  return std::function<void(GgufWriter&)>([v](GgufWriter& w) {
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", v->pre);
    w.set_strings("tokenizer.ggml.tokens", v->tokens);
    w.set_i32s("tokenizer.ggml.token_type", v->types);
    w.set_strings("tokenizer.ggml.merges", v->merges);
    if (v->bos) w.set_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(*v->bos));
    if (v->eos) w.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(*v->eos));
    if (v->pad) w.set_u32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(*v->pad));
    w.set_bool("tokenizer.ggml.add_bos_token", v->add_bos);
    w.set_bool("tokenizer.ggml.add_eos_token", false);
    if (!v->chat_template.empty()) w.set_string("tokenizer.chat_template", v->chat_template);
  });
}

}  // namespace cai::mkmodel
