// libFuzzer target: arbitrary bytes (any encoding) through the real tokenizers of tests/data, chosen by the first
// byte. Ids must lie inside the vocabulary, streaming decode must equal decode, and where a tokenizer is lossless
// decode(encode(x)) must give back x (after the U+FFFD repair of ill-formed UTF-8 and the tokenizer's normalizer).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/log.h"
#include "model/loaders/gguf.h"
#include "test_paths.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace {

enum class RoundTrip {
  kExact,  // byte-level BPE without normalizer: every byte string comes back
  kNfc,    // byte-level BPE behind an NFC normalizer: the NFC form comes back
  kSpm,    // SentencePiece-style (dummy prefix, ▁ for space, byte fallback): exact unless the text holds ▁ itself,
           // special tokens were parsed, or a piece fell back to <unk>
};

struct Loaded {
  const char* name;
  std::unique_ptr<cai::Tokenizer> tokenizer;
  RoundTrip round_trip;
};

std::vector<Loaded>& tokenizers() {
  static std::vector<Loaded> all;
  return all;
}

std::unique_ptr<cai::tok::Normalizer>& nfc() {
  static std::unique_ptr<cai::tok::Normalizer> n;
  return n;
}

template <class T>
T must(cai::Result<T> r, const std::string& what) {
  if (!r.ok()) {
    std::fprintf(stderr, "fuzz_tokenizer_encode: cannot load %s: %s\n", what.c_str(), r.status().to_string().c_str());
    std::abort();
  }
  return std::move(*r);
}

void load_hf(const char* name, const std::string& dir, RoundTrip rt) {
  const std::string path = cai::test::data_path(dir);
  tokenizers().push_back(
      {name, must(cai::Tokenizer::from_hf_json(path + "/tokenizer.json", path + "/tokenizer_config.json"), path), rt});
}

void load_gguf(const char* name, const std::string& rel, RoundTrip rt) {
  const std::string path = cai::test::data_path(rel);
  auto file = must(cai::GgufFile::open(path), path);
  tokenizers().push_back({name, must(cai::Tokenizer::from_gguf_metadata(file->metadata()), path), rt});
}

std::string expected_text(const Loaded& t, std::string_view input) {
  std::string text = cai::tok::to_valid_utf8(input);
  if (t.round_trip == RoundTrip::kNfc) nfc()->apply(text);
  return text;
}

bool checks_round_trip(const Loaded& t, std::string_view text, bool parse_special, const std::vector<int32_t>& ids) {
  if (t.round_trip != RoundTrip::kSpm) return true;
  if (parse_special || text.find("\xE2\x96\x81") != std::string_view::npos) return false;
  for (int32_t id : ids)
    if (t.tokenizer->is_special(id)) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  cai::init_logging("error");
  nfc() = must(cai::tok::normalizer_from_json(nlohmann::json{{"type", "NFC"}}), "the NFC normalizer");
  load_hf("llama3", "tokenizer/llama3", RoundTrip::kExact);
  load_hf("qwen2", "tokenizer/qwen2", RoundTrip::kNfc);
  load_hf("deepseek-v3", "tokenizer/deepseek-v3", RoundTrip::kExact);
  load_hf("tinystories-656k", "models/TinyStories-656K-hf", RoundTrip::kSpm);
  load_gguf("gpt-2", "tokenizer/gguf-vocab/ggml-vocab-gpt-2.gguf", RoundTrip::kExact);
  load_gguf("deepseek-llm", "tokenizer/gguf-vocab/ggml-vocab-deepseek-llm.gguf", RoundTrip::kExact);
  load_gguf("deepseek-coder", "tokenizer/gguf-vocab/ggml-vocab-deepseek-coder.gguf", RoundTrip::kExact);
  load_gguf("llama-spm", "tokenizer/gguf-vocab/ggml-vocab-llama-spm.gguf", RoundTrip::kSpm);
  load_gguf("stories260k", "models/stories260K.gguf", RoundTrip::kSpm);
  return 0;
}

// First byte: bits 0-6 pick the tokenizer (modulo their count), bit 7 turns on special-token parsing.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Loaded& t = tokenizers()[(data[0] & 0x7F) % tokenizers().size()];
  const bool parse_special = data[0] & 0x80;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const cai::Tokenizer& tok = *t.tokenizer;

  const std::vector<int32_t> ids = tok.encode(text, /*add_bos=*/false, parse_special);
  for (int32_t id : ids)
    if (id < 0 || id >= tok.n_vocab()) std::abort();
  const std::string decoded = tok.decode(ids);
  cai::Tokenizer::StreamingDecoder stream(tok);
  std::string streamed;
  for (int32_t id : ids) streamed += stream.push(id);
  streamed += stream.flush();
  if (streamed != decoded) std::abort();
  if (checks_round_trip(t, text, parse_special, ids) && decoded != expected_text(t, text)) {
    std::fprintf(stderr, "%s: decode(encode(x)) != x: got \"%s\"\n", t.name, decoded.c_str());
    std::abort();
  }
  return 0;
}
