// Reference token ids: HF cases.jsonl (DeepSeek-V3, Qwen2, Llama 3) and llama.cpp gguf-vocab .inp/.out pairs.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>

#include "test_paths.h"
#include "tokenizer/tokenizer_test_util.h"
#include "tokenizer/unicode.h"

namespace cai::test {
namespace {

std::string printable(const std::string& s) { return ::testing::PrintToString(s); }

class HfCases : public ::testing::TestWithParam<const char*> {};

TEST_P(HfCases, EveryCaseEncodesToTheReferenceIdsAndDecodesBack) {
  const Tokenizer& tok = hf_tokenizer(GetParam());
  const auto cases = read_jsonl_cases(data_path(std::string("tokenizer/") + GetParam() + "/cases.jsonl"));
  ASSERT_EQ(cases.size(), 55u);
  size_t n_ok = 0;
  for (const TokenCase& c : cases) {
    const auto ids = tok.encode(c.text, /*add_bos=*/false);
    EXPECT_EQ(ids, c.ids) << "text " << printable(c.text);
    // Byte-level BPE is lossless; Qwen2 normalizes to NFC first, and every case text is already NFC.
    EXPECT_EQ(tok.decode(ids), c.text);
    n_ok += ids == c.ids;
  }
  EXPECT_EQ(n_ok, cases.size());
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, HfCases, ::testing::Values("deepseek-v3", "qwen2", "llama3"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

TEST(HfCases, Qwen2MatchesTheLlamaCppVocabPair) {
  const Tokenizer& tok = hf_tokenizer("qwen2");
  const auto cases = read_vocab_cases(data_path("tokenizer/gguf-vocab/ggml-vocab-qwen2.gguf.inp"),
                                      data_path("tokenizer/gguf-vocab/ggml-vocab-qwen2.gguf.out"));
  ASSERT_EQ(cases.size(), 46u);
  for (const TokenCase& c : cases) {
    const auto ids = tok.encode(c.text, false);
    EXPECT_EQ(ids, c.ids) << "text " << printable(c.text);
    EXPECT_EQ(tok.decode(ids), c.text);
  }
}

struct VocabCase {
  const char* name;
  bool lossless;  // decode(encode(x)) == x for every case
};

class GgufVocab : public ::testing::TestWithParam<VocabCase> {};

TEST_P(GgufVocab, EveryCaseEncodesToTheReferenceIds) {
  const std::string base = std::string("tokenizer/gguf-vocab/ggml-vocab-") + GetParam().name + ".gguf";
  const Tokenizer& tok = gguf_tokenizer(base);
  const auto cases = read_vocab_cases(data_path(base + ".inp"), data_path(base + ".out"));
  ASSERT_EQ(cases.size(), 46u);
  for (const TokenCase& c : cases) {
    const auto ids = tok.encode(c.text, /*add_bos=*/false);
    EXPECT_EQ(ids, c.ids) << "text " << printable(c.text);
    if (GetParam().lossless) {
      EXPECT_EQ(tok.decode(ids), c.text);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabs, GgufVocab,
                         ::testing::Values(VocabCase{"gpt-2", true}, VocabCase{"deepseek-llm", true},
                                           VocabCase{"deepseek-coder", true}, VocabCase{"llama-spm", true},
                                           VocabCase{"phi-3", true}),
                         [](const auto& info) {
                           std::string name = info.param.name;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

// A long mixed text (English prose, markdown, ids, CJK, emoji) round-trips; prints the encode speed.
TEST(LongText, RoundTripsAndReportsSpeed) {
  std::string base = read_file(data_path("models/README.md")) + read_file(data_path("tokenizer/README.md"));
  for (const TokenCase& c : read_jsonl_cases(data_path("tokenizer/deepseek-v3/cases.jsonl"))) base += c.text;
  std::string text;
  for (int i = 0; i < 20; ++i) text += base;
  for (const char* name : {"deepseek-v3", "qwen2", "llama3"}) {
    const Tokenizer& tok = hf_tokenizer(name);
    const auto start = std::chrono::steady_clock::now();
    const auto ids = tok.encode(text, false);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << name << ": " << text.size() << " bytes -> " << ids.size() << " tokens, "
              << static_cast<int64_t>(static_cast<double>(ids.size()) / seconds) << " tokens/s\n";
    EXPECT_GT(ids.size(), text.size() / 8);
    EXPECT_EQ(tok.decode(ids), text) << name;
  }
}

}  // namespace
}  // namespace cai::test
