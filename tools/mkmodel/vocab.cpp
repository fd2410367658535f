// Synthetic byte-level BPE vocabulary: 256 byte tokens, merges learnt from a short built-in text, fillers, specials.
#include "vocab.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "tokenizer/byte_level.h"

namespace cai::mkmodel {
namespace {

constexpr int64_t kNumSpecials = 3;

// ChatML, the format of the Qwen2 chat models.
constexpr std::string_view kChatTemplate =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + "
    "'<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

// Training text for the merges: plain English, so that common words become tokens as in a real vocabulary.
constexpr std::string_view kCorpus =
    "The little robot woke up early in the morning and looked out of the window. The sun was bright and the "
    "garden was full of flowers. She wanted to play with her friend, the old cat that lived next door, but "
    "the cat was still asleep under the big tree. So the robot walked to the river to watch the boats. There "
    "were many boats on the water that day, some with red sails and some with white sails. A man on one of "
    "the boats waved at her and she waved back. Then it started to rain, and the robot went home to read a "
    "book about the stars. In the evening the cat came to visit, and they sat together by the fire and "
    "talked about the river, the boats and the rain until it was time to sleep. Every day is a new story, "
    "said the robot, and tomorrow we will find another one. 1 2 3 4 5 6 7 8 9 10 100 2024!? (yes) \"no\" ok.";

std::string byte_symbol(char c) { return std::string(tok::byte_to_mapped(static_cast<uint8_t>(c))); }

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Words of the corpus as symbol sequences: a letter run with its leading space (" the" → "Ġ","t","h","e"), or
// a single other byte. Counted, since BPE training weighs pairs by frequency.
std::map<std::vector<std::string>, int64_t> corpus_words() {
  std::map<std::vector<std::string>, int64_t> words;
  size_t i = 0;
  while (i < kCorpus.size()) {
    std::vector<std::string> w;
    const bool spaced_word = kCorpus[i] == ' ' && i + 1 < kCorpus.size() && is_letter(kCorpus[i + 1]);
    if (spaced_word || is_letter(kCorpus[i])) {
      if (spaced_word) w.push_back(byte_symbol(kCorpus[i++]));
      while (i < kCorpus.size() && is_letter(kCorpus[i])) w.push_back(byte_symbol(kCorpus[i++]));
    } else {
      w.push_back(byte_symbol(kCorpus[i++]));
    }
    ++words[w];
  }
  return words;
}

// One BPE training step: merge the most frequent adjacent pair (ties: smallest pair) everywhere.
// Returns false when no word has two symbols left.
bool merge_best_pair(std::map<std::vector<std::string>, int64_t>& words, std::pair<std::string, std::string>& best) {
  std::map<std::pair<std::string, std::string>, int64_t> pairs;
  for (const auto& [w, count] : words) {
    for (size_t i = 0; i + 1 < w.size(); ++i) pairs[{w[i], w[i + 1]}] += count;
  }
  int64_t best_count = 0;
  for (const auto& [p, count] : pairs) {
    if (count > best_count) {
      best_count = count;
      best = p;
    }
  }
  if (best_count == 0) return false;
  std::map<std::vector<std::string>, int64_t> merged;
  for (const auto& [w, count] : words) {
    std::vector<std::string> out;
    for (size_t i = 0; i < w.size(); ++i) {
      if (i + 1 < w.size() && w[i] == best.first && w[i + 1] == best.second) {
        out.push_back(w[i] + w[i + 1]);
        ++i;
      } else {
        out.push_back(w[i]);
      }
    }
    merged[out] += count;
  }
  words = std::move(merged);
  return true;
}

}  // namespace

Result<SyntheticVocab> make_vocab(int64_t n_vocab) {
  if (n_vocab < 256 + kNumSpecials) {
    return invalid_argument("vocab {} is too small: a byte-level vocabulary needs at least {}", n_vocab,
                            256 + kNumSpecials);
  }
  if (n_vocab > (int64_t{1} << 31) - 1) return invalid_argument("vocab {} is too large", n_vocab);
  SyntheticVocab v;
  std::set<std::string> known;
  auto add_token = [&](std::string text, int32_t type) {
    known.insert(text);
    v.tokens.push_back(std::move(text));
    v.types.push_back(type);
  };
  // Byte tokens in order of their mapped code points, as GPT-2 lists them (the mapped forms are 1- or 2-byte
  // UTF-8, so shorter-then-bytewise order is code point order).
  std::vector<std::string> bytes;
  for (int b = 0; b < 256; ++b) bytes.emplace_back(tok::byte_to_mapped(static_cast<uint8_t>(b)));
  std::sort(bytes.begin(), bytes.end(), [](const std::string& x, const std::string& y) {
    return x.size() != y.size() ? x.size() < y.size() : x < y;
  });
  for (std::string& b : bytes) add_token(std::move(b), kTokenNormal);

  const auto n_regular = static_cast<size_t>(n_vocab - kNumSpecials);
  auto words = corpus_words();
  std::pair<std::string, std::string> best;
  while (v.tokens.size() < n_regular && merge_best_pair(words, best)) {
    v.merges.push_back(best.first + " " + best.second);
    if (!known.count(best.first + best.second)) add_token(best.first + best.second, kTokenNormal);
  }
  // Fillers are normal tokens (never produced by the merges) so that what a random model generates decodes to text.
  while (v.tokens.size() < n_regular) add_token(fmt::format("<tok_{}>", v.tokens.size()), kTokenNormal);
  v.bos_id = v.eos_id = static_cast<int32_t>(v.tokens.size());
  add_token("<|endoftext|>", kTokenControl);
  v.im_start_id = static_cast<int32_t>(v.tokens.size());
  add_token("<|im_start|>", kTokenControl);
  v.im_end_id = static_cast<int32_t>(v.tokens.size());
  add_token("<|im_end|>", kTokenControl);
  return v;
}

void add_gguf_tokenizer(const SyntheticVocab& v, const std::string& pre, bool add_bos, GgufWriter& w) {
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", pre);
  w.set_strings("tokenizer.ggml.tokens", v.tokens);
  w.set_i32s("tokenizer.ggml.token_type", v.types);
  w.set_strings("tokenizer.ggml.merges", v.merges);
  w.set_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(v.bos_id));
  w.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(v.eos_id));
  w.set_u32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(v.eos_id));
  w.set_u32("tokenizer.ggml.eot_token_id", static_cast<uint32_t>(v.im_end_id));
  w.set_bool("tokenizer.ggml.add_bos_token", add_bos);
  w.set_bool("tokenizer.ggml.add_eos_token", false);
  w.set_string("tokenizer.chat_template", kChatTemplate);
}

nlohmann::ordered_json hf_tokenizer_json(const SyntheticVocab& v, const std::string& pre) {
  using Json = nlohmann::ordered_json;
  const Json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  Json added = Json::array();
  Json vocab = Json::object();
  // Appended to the object's entry vector directly: the tokens are distinct, and ordered_json's own insert looks for
  // the key first, which makes a 150k-token vocabulary quadratic.
  auto& entries = static_cast<Json::object_t::Container&>(vocab.get_ref<Json::object_t&>());
  entries.reserve(v.tokens.size());
  for (size_t id = 0; id < v.tokens.size(); ++id) {
    if (v.types[id] != kTokenControl) {
      entries.emplace_back(v.tokens[id], id);
      continue;
    }
    added.push_back({{"id", id},
                     {"content", v.tokens[id]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  const bool llama3 = pre == "llama-bpe";
  const Json split = {{"type", "Split"},
                      {"pattern", {{"Regex", llama3 ? kLlama3Regex : kQwen2Regex}}},
                      {"behavior", "Isolated"},
                      {"invert", false}};
  return Json{
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", llama3 ? Json(nullptr) : Json{{"type", "NFC"}}},
      {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", Json::array({split, byte_level})}}},
      {"post_processor", byte_level},
      {"decoder", byte_level},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", llama3},
        {"vocab", vocab},
        {"merges", v.merges}}},
  };
}

nlohmann::ordered_json hf_tokenizer_config(const SyntheticVocab& v, bool add_bos) {
  using Json = nlohmann::ordered_json;
  Json decoder = Json::object();
  for (size_t id = 0; id < v.tokens.size(); ++id) {
    if (v.types[id] != kTokenControl) continue;
    decoder[std::to_string(id)] = {{"content", v.tokens[id]}, {"lstrip", false},      {"normalized", false},
                                   {"rstrip", false},         {"single_word", false}, {"special", true}};
  }
  const std::string& bos = v.tokens[static_cast<size_t>(v.bos_id)];
  const std::string& eos = v.tokens[static_cast<size_t>(v.eos_id)];
  return Json{
      {"add_bos_token", add_bos},
      {"add_eos_token", false},
      {"added_tokens_decoder", decoder},
      {"bos_token", bos},
      {"eos_token", eos},
      {"pad_token", eos},
      {"chat_template", kChatTemplate},
      {"clean_up_tokenization_spaces", false},
      {"model_max_length", 131072},
      {"tokenizer_class", "PreTrainedTokenizerFast"},
  };
}

}  // namespace cai::mkmodel
