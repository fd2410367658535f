// Reference token ids: HF cases.jsonl (DeepSeek-V3, Qwen2, Llama 3) and llama.cpp gguf-vocab .inp/.out pairs.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace cai::test
