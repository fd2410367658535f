// Tokenizers of the tiny trained models: stories260K and TinyStories-656K (GGUF and HF tokenizer.json).
#include <gtest/gtest.h>

#include <algorithm>

#include "test_paths.h"
#include "tokenizer/tokenizer_test_util.h"

namespace cai::test {
namespace {

using Ids = std::vector<int32_t>;

TEST(TinyModels, Stories260kOnceUponATime) {
  const Tokenizer& tok = gguf_tokenizer("models/stories260K.gguf");
  EXPECT_EQ(tok.n_vocab(), 512);
  EXPECT_EQ(tok.bos_id(), 1);
  EXPECT_EQ(tok.eos_id(), 2);
  EXPECT_TRUE(tok.add_bos_default());  // no add_bos_token key: SentencePiece adds BOS
  const Ids ids = tok.encode("Once upon a time", tok.add_bos_default());
  EXPECT_EQ(ids, (Ids{1, 403, 407, 261, 378}));
  EXPECT_EQ(tok.decode(ids), "<s> Once upon a time");  // as HF and llama.cpp: only the first token is stripped
  EXPECT_EQ(tok.decode(ids, /*skip_special=*/true), "Once upon a time");
  EXPECT_EQ(tok.token_text(403), " Once");
  EXPECT_TRUE(tok.is_eog(2));
  EXPECT_FALSE(tok.is_eog(1));
}

TEST(TinyModels, Stories260kByteFallbackIsLossless) {
  const Tokenizer& tok = gguf_tokenizer("models/stories260K.gguf");
  const std::string text = "Lily saw a 🐱 and said 你好\n";
  EXPECT_EQ(tok.decode(tok.encode(text, true), true), text);
}

TEST(TinyModels, TinyStories656kGguf) {
  for (const char* file : {"models/TinyStories-656K-Q8_0.gguf", "models/TinyStories-656K.f16.gguf"}) {
    const Tokenizer& tok = gguf_tokenizer(file);
    EXPECT_EQ(tok.n_vocab(), 2048) << file;
    EXPECT_EQ(tok.bos_text(), "<|start_story|>");
    EXPECT_EQ(tok.eos_text(), "<|end_story|>");
    EXPECT_TRUE(tok.is_eog(2));
    EXPECT_EQ(tok.encode("Once upon a time", true), (Ids{1, 80, 147, 201, 282, 57})) << file;
    EXPECT_EQ(tok.encode("Hello", true), (Ids{1, 80, 1288, 67})) << file;
    // Special-token text in the prompt is parsed by default, kept as text when asked.
    const Ids special = tok.encode("<|start_story|>Hello", false);
    ASSERT_FALSE(special.empty());
    EXPECT_EQ(special[0], 1);
    EXPECT_NE(tok.encode("<|start_story|>Hello", false, /*parse_special=*/false)[0], 1);
    // No byte tokens in this vocabulary: an emoji becomes <unk> (id 0), so this text does not round-trip.
    const Ids emoji = tok.encode("a 🐱", false);
    EXPECT_NE(std::find(emoji.begin(), emoji.end(), 0), emoji.end());
  }
}

TEST(TinyModels, TinyStories656kHfMatchesGguf) {
  const std::string dir = data_path("models/TinyStories-656K-hf/");
  auto loaded = Tokenizer::from_hf_json(dir + "tokenizer.json", dir + "tokenizer_config.json");
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  const Tokenizer& hf = **loaded;
  const Tokenizer& gguf = gguf_tokenizer("models/TinyStories-656K-Q8_0.gguf");
  EXPECT_EQ(hf.bos_id(), 1);
  EXPECT_EQ(hf.eos_id(), 2);
  EXPECT_TRUE(hf.add_bos_default());
  for (const char* text : {"Once upon a time", "Hello"}) {
    const Ids ids = hf.encode(text, true);
    EXPECT_EQ(ids, gguf.encode(text, true)) << text;
    EXPECT_EQ(hf.decode(ids, true), text);
    EXPECT_EQ(hf.decode(ids, true), gguf.decode(ids, true));
  }
}

}  // namespace
}  // namespace cai::test
