// Tokenizer::from_gguf_metadata: builds a Tokenizer from GGUF tokenizer.ggml.* metadata (llama.cpp rules,
// docs/design/formats.md#tokenizer-metadata).
#include <nlohmann/json.hpp>

#include "core/log.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/spm_model.h"
#include "tokenizer/tokenizer.h"

namespace cai {
namespace {

using nlohmann::json;
using tok::TokenKind;

// Pre-tokenizer regexes of tokenizer.ggml.pre (docs/design/formats.md#pre-tokenizer-regexes D/G/L/Q/K/C/V; D2 and G1
// are kGpt2Regex, K6 = D3, C1 = K1, C4 = K5).
constexpr const char kPunctRun[] = R"([\p{P}\$\+<=>\^~\|]+)";
constexpr const char kNumberRun[] = R"(\p{N}+)";
constexpr const char kThreeDigits[] = R"([0-9][0-9][0-9])";
constexpr const char kLlama3[] =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char kQwen2[] =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char kNewline[] = R"([\r\n])";
constexpr const char kLatinGreekEtc[] =
    R"(\s?[A-Za-z\x{00B5}\x{00C0}-\x{00D6}\x{00D8}-\x{00F6}\x{00F8}-\x{01BA}\x{01BC}-\x{01BF}\x{01C4}-\x{0293}\x{0295}-\x{02AF}\x{0370}-\x{0373}\x{0376}\x{0377}\x{037B}-\x{037D}\x{037F}\x{0386}\x{0388}-\x{038A}\x{038C}\x{038E}-\x{03A1}\x{03A3}-\x{03F5}\x{03F7}-\x{0481}\x{048A}-\x{052F}\x{0531}-\x{0556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)";
constexpr const char kAsciiFullwidthPunct[] =
    R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)";
constexpr const char kTrailingSpace[] = R"(\s+$)";
constexpr const char kCjkHangul[] = R"([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";
constexpr const char kSpaceLetters[] = R"(\s?\p{L}+)";
constexpr const char kSpacePunct[] = R"(\s?\p{P}+)";
constexpr const char kOneNumber[] = R"(\p{N})";
constexpr const char kOneToThreeNumbers[] = R"(\p{N}{1,3})";
constexpr const char kCjkKana[] = R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)";
constexpr const char kDeepseekV3[] =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct PreRegexes {
  const char* name;
  std::vector<const char*> regexes;
  bool llama3_family;  // ignore_merges, and BOS by default
};

const std::vector<PreRegexes>& pre_table() {
  static const std::vector<PreRegexes> table = {
      {"default", {kPunctRun, tok::kGpt2Regex, kNumberRun, kThreeDigits}, false},
      {"gpt-2", {tok::kGpt2Regex}, false},
      {"llama-bpe", {kLlama3}, true},
      {"llama3", {kLlama3}, true},
      {"llama-v3", {kLlama3}, true},
      {"qwen2", {kQwen2}, false},
      {"deepseek-r1-qwen", {kQwen2}, false},
      {"deepseek-llm", {kNewline, kLatinGreekEtc, kAsciiFullwidthPunct, kTrailingSpace, kCjkHangul, kNumberRun}, false},
      {"deepseek-coder", {kNewline, kSpaceLetters, kSpacePunct, kCjkHangul, kOneNumber}, false},
      {"deepseek-v3", {kOneToThreeNumbers, kCjkKana, kDeepseekV3}, false},
  };
  return table;
}

const PreRegexes& find_pre(const json& md) {
  const auto& table = pre_table();
  const auto it = md.find("tokenizer.ggml.pre");
  if (it == md.end() || !it->is_string()) {
    CAI_LOG_WARN("GGUF has no tokenizer.ggml.pre; using the 'default' pre-tokenizer");
    return table[0];
  }
  for (const PreRegexes& p : table)
    if (*it == p.name) return p;
  CAI_LOG_WARN("GGUF tokenizer.ggml.pre '{}' is not known; using the 'default' pre-tokenizer", it->get<std::string>());
  return table[0];
}

Result<std::unique_ptr<tok::PreTokenizer>> gguf_pre_tokenizer(const PreRegexes& pre) {
  std::vector<std::unique_ptr<tok::PreTokenizer>> parts;
  for (const char* regex : pre.regexes) {
    CAI_ASSIGN_OR_RETURN(tok::Pattern pattern, tok::Pattern::regex(regex));
    parts.push_back(tok::make_split_pre_tokenizer(std::move(pattern), tok::SplitBehavior::kIsolated, false));
  }
  parts.push_back(tok::make_byte_level_pre_tokenizer(false, false));
  return tok::make_sequence_pre_tokenizer(std::move(parts));
}

// A token id key: -1 when absent, 0xFFFFFFFF ("none") or out of range; `fallback` when the key is absent.
int32_t token_id_key(const json& md, const char* key, int32_t n_vocab, int32_t fallback) {
  const auto it = md.find(key);
  if (it == md.end()) return fallback < n_vocab ? fallback : -1;
  if (!it->is_number_integer()) return -1;
  const int64_t id = it->get<int64_t>();
  if (id < 0 || id >= n_vocab) {
    if (id != 0xFFFFFFFFll) CAI_LOG_WARN("GGUF {} = {} is outside the vocabulary; ignored", key, id);
    return -1;
  }
  return static_cast<int32_t>(id);
}

Status load_vocab(const json& md, tok::Vocab& vocab, tok::AddedTokenMatcher& added) {
  const auto tokens = md.find("tokenizer.ggml.tokens");
  if (tokens == md.end() || !tokens->is_array() || tokens->empty())
    return not_found("GGUF metadata has no tokenizer.ggml.tokens");
  const auto types = md.find("tokenizer.ggml.token_type");
  const bool has_types = types != md.end();
  if (has_types && (!types->is_array() || types->size() != tokens->size()))
    return corrupt("GGUF tokenizer.ggml.token_type does not match tokenizer.ggml.tokens");
  vocab.reserve(tokens->size());
  for (size_t i = 0; i < tokens->size(); ++i) {
    const json& text = (*tokens)[i];
    if (!text.is_string()) return corrupt("GGUF tokenizer.ggml.tokens[{}] is not a string", i);
    auto kind = TokenKind::kNormal;
    if (has_types) {
      const json& type = (*types)[i];
      const int64_t v = type.is_number_integer() ? type.get<int64_t>() : 0;
      if (v >= 1 && v <= 6) kind = static_cast<TokenKind>(v);
    }
    const auto id = vocab.add(text.get<std::string>(), kind);
    // Control and unknown tokens match in text only with special parsing; user-defined ones always, raw.
    if (kind == TokenKind::kControl || kind == TokenKind::kUnknown || kind == TokenKind::kUserDefined)
      added.add({.content = vocab.text(id), .id = id, .special = kind != TokenKind::kUserDefined});
  }
  return Status::ok_status();
}

Result<std::vector<float>> load_scores(const json& md, size_t n_vocab) {
  std::vector<float> scores(n_vocab, 0.0f);
  const auto it = md.find("tokenizer.ggml.scores");
  if (it == md.end()) return scores;
  if (!it->is_array() || it->size() != n_vocab)
    return corrupt("GGUF tokenizer.ggml.scores does not match tokenizer.ggml.tokens");
  for (size_t i = 0; i < n_vocab; ++i) {
    if (!(*it)[i].is_number()) return corrupt("GGUF tokenizer.ggml.scores[{}] is not a number", i);
    scores[i] = (*it)[i].get<float>();
  }
  return scores;
}

Result<std::unique_ptr<tok::BpeModel>> load_merges(const json& md, std::shared_ptr<const tok::Vocab> vocab,
                                                   bool ignore_merges) {
  const auto it = md.find("tokenizer.ggml.merges");
  if (it == md.end() || !it->is_array()) return not_found("GGUF gpt2 tokenizer has no tokenizer.ggml.merges");
  tok::BpeOptions options;
  options.ignore_merges = ignore_merges;
  auto bpe = std::make_unique<tok::BpeModel>(vocab, options);
  size_t n_skipped = 0;
  for (const json& m : *it) {
    if (!m.is_string()) return corrupt("GGUF tokenizer.ggml.merges holds a non-string");
    const std::string_view s = m.get_ref<const std::string&>();
    const size_t space = s.find(' ', 1);
    if (space == std::string_view::npos) return corrupt("GGUF merge '{}' has no space", s);
    n_skipped += !bpe->add_merge(s.substr(0, space), s.substr(space + 1));
  }
  if (n_skipped > 0) CAI_LOG_WARN("GGUF: {} merges name tokens missing from the vocab; skipped", n_skipped);
  return bpe;
}

bool bool_key(const json& md, const char* key, bool fallback) {
  const auto it = md.find(key);
  return it != md.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf_metadata(const json& md) {
  if (!md.is_object()) return invalid_argument("GGUF metadata must be a JSON object");
  const auto model_it = md.find("tokenizer.ggml.model");
  if (model_it == md.end() || !model_it->is_string()) return not_found("GGUF metadata has no tokenizer.ggml.model");
  const std::string model = model_it->get<std::string>();
  if (model != "llama" && model != "gpt2")
    return unsupported("GGUF tokenizer.ggml.model '{}' is not supported (llama, gpt2)", model);

  std::unique_ptr<Tokenizer> t(new Tokenizer());
  CAI_TRY(load_vocab(md, *t->vocab_, t->added_));
  const int32_t n = t->vocab_->size();
  const bool spm = model == "llama";
  t->bos_id_ = token_id_key(md, "tokenizer.ggml.bos_token_id", n, spm ? 1 : 11);
  t->eos_id_ = token_id_key(md, "tokenizer.ggml.eos_token_id", n, spm ? 2 : 11);
  if (spm) {
    const bool space_prefix = bool_key(md, "tokenizer.ggml.add_space_prefix", true);
    std::vector<std::unique_ptr<tok::Normalizer>> norms;
    if (space_prefix) norms.push_back(tok::make_prepend_normalizer(" "));
    norms.push_back(tok::make_literal_replace_normalizer(" ", "\xE2\x96\x81"));
    t->normalizer_ = tok::make_sequence_normalizer(std::move(norms));
    CAI_ASSIGN_OR_RETURN(std::vector<float> scores, load_scores(md, static_cast<size_t>(n)));
    t->model_ = std::make_unique<tok::SpmModel>(t->vocab_, std::move(scores),
                                                token_id_key(md, "tokenizer.ggml.unknown_token_id", n, 0));
    t->decoder_ = tok::Decoder::sentencepiece(space_prefix);
    t->add_bos_ = bool_key(md, "tokenizer.ggml.add_bos_token", true);
  } else {
    const PreRegexes& pre = find_pre(md);
    CAI_ASSIGN_OR_RETURN(t->pre_tokenizer_, gguf_pre_tokenizer(pre));
    CAI_ASSIGN_OR_RETURN(t->model_, load_merges(md, t->vocab_, pre.llama3_family));
    t->decoder_ = tok::Decoder::byte_level();
    t->add_bos_ = bool_key(md, "tokenizer.ggml.add_bos_token", pre.llama3_family);
  }
  if (const auto it = md.find("tokenizer.chat_template"); it != md.end() && it->is_string())
    t->chat_template_ = it->get<std::string>();
  t->collect_eog(
      {token_id_key(md, "tokenizer.ggml.eot_token_id", n, -1), token_id_key(md, "tokenizer.ggml.eom_token_id", n, -1)});
  return t;
}

}  // namespace cai
