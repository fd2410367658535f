// Tokenizer::from_hf_json*: builds a Tokenizer from HF tokenizer.json (+ tokenizer_config.json).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/log.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/hf_json_reader.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unigram_model.h"

namespace cai {
namespace {

using nlohmann::json;
using tok::TokenKind;

constexpr int64_t kMaxVocab = 1 << 24;  // far above any real vocabulary; guards against absurd ids

Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot open '{}'", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return io_error("cannot read '{}'", path);
  return ss.str();
}

Status check_id(const json& id, const char* what) {
  if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= kMaxVocab)
    return corrupt("tokenizer.json: {} has a bad id {}", what, id.dump());
  return Status::ok_status();
}

// BPE: "vocab" is {text: id}; "<0xXX>" entries are byte tokens.
Status load_bpe_vocab(tok::HfJsonDocument& doc, tok::Vocab& vocab) {
  if (!doc.has_vocab_object) return corrupt("tokenizer.json: BPE model.vocab must be an object");
  int64_t max_id = -1;
  for (const auto& [text, id] : doc.vocab) {
    if (id < 0 || id >= kMaxVocab) return corrupt("tokenizer.json: model.vocab entry '{}' has a bad id {}", text, id);
    max_id = std::max(max_id, id);
  }
  vocab.reserve(static_cast<size_t>(max_id + 1) + 1024);
  for (auto& [text, id] : doc.vocab) {
    const bool is_byte = text.size() == 6 && text.starts_with("<0x") && text.back() == '>';
    vocab.set(static_cast<int32_t>(id), std::move(text), is_byte ? TokenKind::kByte : TokenKind::kNormal);
  }
  doc.vocab = {};
  return Status::ok_status();
}

Result<std::unique_ptr<tok::TokenModel>> make_bpe(const json& model, const tok::HfJsonDocument& doc,
                                                  std::shared_ptr<const tok::Vocab> vocab) {
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(key) && model[key].is_string() && !model[key].get<std::string>().empty())
      return unsupported("tokenizer.json: BPE with {} is not supported", key);
  if (!doc.has_merges) return corrupt("tokenizer.json: BPE model has no merges array");
  tok::BpeOptions options;
  options.ignore_merges = model.value("ignore_merges", false);
  options.byte_fallback = model.value("byte_fallback", false);
  options.fuse_unk = model.value("fuse_unk", false);
  if (model.contains("unk_token") && model["unk_token"].is_string())
    options.unk_id = vocab->find(model["unk_token"].get<std::string>()).value_or(-1);
  auto bpe = std::make_unique<tok::BpeModel>(vocab, options);
  bpe->reserve(doc.merges.size());
  size_t n_skipped = 0;
  for (const auto& [left, right] : doc.merges) n_skipped += !bpe->add_merge(left, right);
  if (n_skipped > 0) CAI_LOG_WARN("tokenizer.json: {} merges name tokens missing from the vocab; skipped", n_skipped);
  return std::unique_ptr<tok::TokenModel>(std::move(bpe));
}

// Unigram: "vocab" is [[text, score], ...] in id order.
Result<std::vector<float>> load_unigram_vocab(const json& model, tok::Vocab& vocab) {
  const json& v = model.at("vocab");
  if (!v.is_array()) return corrupt("tokenizer.json: Unigram model.vocab must be an array");
  std::vector<float> scores;
  for (const json& entry : v) {
    if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_number())
      return corrupt("tokenizer.json: Unigram vocab entries must be [text, score]");
    const std::string& text = entry[0].get_ref<const std::string&>();
    const bool is_byte = text.size() == 6 && text.starts_with("<0x") && text.back() == '>';
    vocab.add(text, is_byte ? TokenKind::kByte : TokenKind::kNormal);
    scores.push_back(entry[1].get<float>());
  }
  return scores;
}

Status load_added_tokens(const json& added, tok::Vocab& vocab, tok::AddedTokenMatcher& matcher) {
  if (added.is_null()) return Status::ok_status();
  if (!added.is_array()) return corrupt("tokenizer.json: added_tokens must be an array");
  for (const json& a : added) {
    CAI_TRY(check_id(a.at("id"), "added token"));
    tok::AddedToken t;
    t.id = a["id"].get<int32_t>();
    t.content = a.at("content").get<std::string>();
    t.special = a.value("special", false);
    t.normalized = a.value("normalized", !t.special);
    t.lstrip = a.value("lstrip", false);
    t.rstrip = a.value("rstrip", false);
    t.single_word = a.value("single_word", false);
    vocab.set(t.id, t.content, t.special ? TokenKind::kControl : TokenKind::kUserDefined);
    matcher.add(std::move(t));
  }
  return Status::ok_status();
}

// bos_token / eos_token in tokenizer_config.json: a string or {"content": ...}.
std::string config_token_text(const json& config, const char* key) {
  if (!config.contains(key)) return {};
  const json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return {};
}

// The special token a TemplateProcessing post-processor puts first, if any (HF's way of adding BOS).
std::string template_leading_token(const json& post) {
  if (!post.is_object()) return {};
  if (post.value("type", std::string()) == "Sequence" && post.contains("processors")) {
    for (const json& p : post["processors"])
      if (std::string t = template_leading_token(p); !t.empty()) return t;
    return {};
  }
  if (post.value("type", std::string()) != "TemplateProcessing" || !post.contains("single")) return {};
  const json& single = post["single"];
  if (!single.is_array() || single.empty() || !single[0].contains("SpecialToken")) return {};
  return single[0]["SpecialToken"].value("id", std::string());
}

// tokenizer_config.json chat_template: a string, or a list of {name, template} (the "default" one is used).
std::string config_chat_template(const json& config) {
  if (!config.contains("chat_template")) return {};
  const json& t = config["chat_template"];
  if (t.is_string()) return t.get<std::string>();
  if (!t.is_array()) return {};
  std::string chosen;
  for (const json& entry : t) {
    if (!entry.is_object() || !entry.contains("template") || !entry["template"].is_string()) continue;
    if (chosen.empty() || entry.value("name", std::string()) == "default")
      chosen = entry["template"].get<std::string>();
  }
  return chosen;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_hf_json(const std::string& tokenizer_json_path,
                                                           const std::string& tokenizer_config_path) {
  CAI_ASSIGN_OR_RETURN(std::string text, read_text_file(tokenizer_json_path));
  std::string config;
  if (!tokenizer_config_path.empty() && std::filesystem::exists(tokenizer_config_path)) {
    CAI_ASSIGN_OR_RETURN(config, read_text_file(tokenizer_config_path));
  }
  auto result = from_hf_json_text(text, config);
  if (!result.ok()) return Status(result.status().code(), tokenizer_json_path + ": " + result.status().message());
  return result;
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_hf_json_text(std::string_view json_text,
                                                                std::string_view config_text) {
  json config = json::object();
  if (!config_text.empty()) {
    config = json::parse(config_text, nullptr, /*allow_exceptions=*/false);
    if (config.is_discarded()) return corrupt("tokenizer_config.json: not valid JSON");
    if (!config.is_object()) config = json::object();
  }
  try {
    CAI_ASSIGN_OR_RETURN(tok::HfJsonDocument doc, tok::read_hf_tokenizer_json(json_text));
    if (!doc.dom.is_object()) return corrupt("tokenizer.json: the top level must be an object");
    return build_from_hf(doc, config);
  } catch (const json::exception& e) {
    return corrupt("tokenizer.json: {}", e.what());
  }
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::build_from_hf(tok::HfJsonDocument& doc, const json& config) {
  const json& j = doc.dom;
  if (!j.contains("model") || !j["model"].is_object()) return corrupt("tokenizer.json: no \"model\" section");
  const json& model = j["model"];
  std::string type = model.value("type", std::string());
  if (type.empty()) type = doc.has_merges ? "BPE" : "Unigram";  // untagged older files
  if (type != "BPE" && type != "Unigram") return unsupported("tokenizer.json: model type '{}' is not supported", type);

  std::unique_ptr<Tokenizer> t(new Tokenizer());
  std::vector<float> scores;
  if (type == "BPE") {
    CAI_TRY(load_bpe_vocab(doc, *t->vocab_));
  } else {
    CAI_ASSIGN_OR_RETURN(scores, load_unigram_vocab(model, *t->vocab_));
  }
  CAI_TRY(load_added_tokens(j.value("added_tokens", json()), *t->vocab_, t->added_));
  if (t->vocab_->size() == 0) return corrupt("tokenizer.json: the vocabulary is empty");

  if (type == "BPE") {
    CAI_ASSIGN_OR_RETURN(t->model_, make_bpe(model, doc, t->vocab_));
  } else {
    int32_t unk_id = -1;
    if (model.contains("unk_id") && model["unk_id"].is_number_integer()) unk_id = model["unk_id"].get<int32_t>();
    if (unk_id >= t->vocab_->size()) return corrupt("tokenizer.json: Unigram unk_id {} is out of range", unk_id);
    t->model_ =
        std::make_unique<tok::UnigramModel>(t->vocab_, std::move(scores), unk_id, model.value("byte_fallback", false));
  }
  CAI_ASSIGN_OR_RETURN(t->normalizer_, tok::normalizer_from_json(j.value("normalizer", json())));
  CAI_ASSIGN_OR_RETURN(t->pre_tokenizer_, tok::pre_tokenizer_from_json(j.value("pre_tokenizer", json())));
  CAI_ASSIGN_OR_RETURN(t->decoder_, tok::decoder_from_json(j.value("decoder", json())));

  const std::string leading = template_leading_token(j.value("post_processor", json()));
  std::string bos = config_token_text(config, "bos_token");
  if (bos.empty()) bos = leading;
  const std::string eos = config_token_text(config, "eos_token");
  t->bos_id_ = bos.empty() ? -1 : t->vocab_->find(bos).value_or(-1);
  t->eos_id_ = eos.empty() ? -1 : t->vocab_->find(eos).value_or(-1);
  if (config.contains("add_bos_token") && config["add_bos_token"].is_boolean())
    t->add_bos_ = config["add_bos_token"].get<bool>();
  else
    t->add_bos_ = !leading.empty() && leading == bos;
  t->chat_template_ = config_chat_template(config);
  t->collect_eog({});
  return t;
}

}  // namespace cai
