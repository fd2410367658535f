// Tokenizer building blocks on hand-computed cases: UTF-8 repair, byte-level map, Split behaviours, decoders,
// Unigram/Metaspace, added-token stripping, normalizers.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer/byte_level.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_test_util.h"
#include "tokenizer/unicode.h"

namespace cai::test {
namespace {

using Ids = std::vector<int32_t>;
using Pieces = std::vector<std::string>;

TEST(Utf8, RepairReplacesEachIllFormedSequence) {
  EXPECT_EQ(tok::to_valid_utf8("a\x80"
                               "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(tok::to_valid_utf8("\xE4\xBD"), "\xEF\xBF\xBD");  // cut 3-byte sequence: one U+FFFD
  EXPECT_EQ(tok::to_valid_utf8("\xE4\xBD"
                               "a"),
            "\xEF\xBF\xBD"
            "a");
  EXPECT_EQ(tok::to_valid_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong: two bad bytes
  EXPECT_EQ(tok::to_valid_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_TRUE(tok::is_valid_utf8("h\xC3\xA9llo \xF0\x9F\x98\x80"));
  EXPECT_FALSE(tok::is_valid_utf8("\xF0\x9F\x98"));
}

TEST(Utf8, PartialCallsEqualOneFinalCall) {
  const std::string bytes =
      "x\xF0\x9F\x98\x80\xE4\xBD\xA0\xC3\x80\xE4\xBD"
      "y\xFF\xF0\x9F";
  const std::string whole = tok::to_valid_utf8(bytes);
  for (size_t cut = 0; cut <= bytes.size(); ++cut) {
    std::string out, pending = bytes.substr(0, cut);
    pending.erase(0, tok::append_valid_utf8(pending, out, false));
    EXPECT_TRUE(tok::is_valid_utf8(out));
    pending += bytes.substr(cut);
    tok::append_valid_utf8(pending, out, true);
    EXPECT_EQ(out, whole) << "cut at " << cut;
  }
}

TEST(ByteLevel, MapMatchesGpt2) {
  EXPECT_EQ(tok::byte_to_mapped(' '), "\xC4\xA0");   // Ġ U+0120
  EXPECT_EQ(tok::byte_to_mapped('\n'), "\xC4\x8A");  // Ċ U+010A
  EXPECT_EQ(tok::byte_to_mapped(0xAD), "\xC5\x83");  // U+0143, the last extra code point
  EXPECT_EQ(tok::byte_to_mapped(0x00), "\xC4\x80");  // U+0100
  EXPECT_EQ(tok::byte_to_mapped('a'), "a");
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  std::string back;
  ASSERT_TRUE(tok::byte_level_decode(tok::byte_level_encode(all), back));
  EXPECT_EQ(back, all);
  EXPECT_FALSE(tok::byte_level_decode("\xE4\xBD\xA0", back));  // 你 is not a mapped code point
}

Pieces split_with(const char* behavior, bool invert, const std::string& text) {
  const nlohmann::json j = {
      {"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}, {"invert", invert}};
  auto pre = tok::pre_tokenizer_from_json(j);
  EXPECT_TRUE(pre.ok()) << pre.status().to_string();
  Pieces pieces{text};
  (*pre)->split(pieces, true);
  return pieces;
}

TEST(PreTokenizer, SplitBehaviorsFollowHf) {
  const std::string text = "the-final--countdown";
  EXPECT_EQ(split_with("Removed", false, text), (Pieces{"the", "final", "countdown"}));
  EXPECT_EQ(split_with("Isolated", false, text), (Pieces{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split_with("MergedWithPrevious", false, text), (Pieces{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(split_with("MergedWithNext", false, text), (Pieces{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(split_with("Contiguous", false, text), (Pieces{"the", "-", "final", "--", "countdown"}));
  EXPECT_EQ(split_with("Removed", true, text), (Pieces{"-", "-", "-"}));
}

TEST(PreTokenizer, SequenceOfRegexSplitsThenByteLevel) {
  const nlohmann::json j = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"Regex", "\\p{N}{1,3}"}}}, {"behavior", "Isolated"}, {"invert", false}},
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  auto pre = tok::pre_tokenizer_from_json(j);
  ASSERT_TRUE(pre.ok());
  Pieces pieces{"ab 12345\n"};
  (*pre)->split(pieces, true);
  EXPECT_EQ(pieces, (Pieces{"ab\xC4\xA0", "123", "45", "\xC4\x8A"}));
}

// A SentencePiece-style Unigram tokenizer: Metaspace pre-tokenizer and decoder, Viterbi over scores.
constexpr const char kUnigramJson[] = R"({
  "added_tokens": [{"id": 0, "content": "<unk>", "special": true}],
  "normalizer": {"type": "Lowercase"},
  "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
  "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
  "model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["▁", -2.0], ["a", -1.0], ["b", -2.0],
            ["ab", -1.5], ["c", -3.0], ["▁ab", -2.5], ["▁c", -4.0]]}
})";

TEST(Unigram, ViterbiPicksTheBestSegmentation) {
  auto loaded = Tokenizer::from_hf_json_text(kUnigramJson);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  const Tokenizer& tok = **loaded;
  // "▁abc": ▁ab + c = -5.5 beats ▁ + ab + c = -6.5 and ▁ + a + b + c = -8.
  EXPECT_EQ(tok.encode("abc", false), (Ids{6, 5}));
  // Lowercased, then "▁ab" "▁c": -2.5 + -4 = -6.5 beats ▁ab ▁ c = -7.5.
  EXPECT_EQ(tok.encode("AB C", false), (Ids{6, 7}));
  // Unknown characters become one fused <unk>.
  EXPECT_EQ(tok.encode("abxyz", false), (Ids{6, 0}));
  EXPECT_EQ(tok.decode(Ids{6, 7}), "ab c");  // the first ▁ is stripped
}

// A tiny BPE with an lstrip/rstrip added token and a Llama-style decoder sequence.
constexpr const char kBpeJson[] = R"({
  "added_tokens": [{"id": 5, "content": "<x>", "special": false, "lstrip": true, "rstrip": true,
                    "normalized": false}],
  "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                 {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
  "pre_tokenizer": null,
  "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
              {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
  "model": {"type": "BPE", "byte_fallback": true, "unk_token": "<unk>",
            "vocab": {"<unk>": 0, "a": 1, "b": 2, "ab": 3, "▁": 4, "<0xC3>": 6, "<0xA9>": 7, "▁ab": 8},
            "merges": ["a b", "▁ ab"]}
})";

TEST(Bpe, MergesByteFallbackAndStrippedAddedToken) {
  auto loaded = Tokenizer::from_hf_json_text(kBpeJson);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  const Tokenizer& tok = **loaded;
  // "ab  <x>  b": the spaces around <x> are absorbed; each side is normalized on its own (▁ prepended).
  EXPECT_EQ(tok.encode("ab  <x>  b", false), (Ids{8, 5, 4, 2}));
  // é is not in the vocab: its two bytes become <0xC3> <0xA9>; the decoder puts them back together.
  const Ids ids = tok.encode("é", false);
  EXPECT_EQ(ids, (Ids{4, 6, 7}));
  EXPECT_EQ(tok.decode(ids), "é");
  EXPECT_EQ(tok.decode(Ids{8, 8}), "ab ab");
}

TEST(Normalizer, StripNfkcReplaceSequence) {
  const nlohmann::json j = {{"type", "Sequence"},
                            {"normalizers",
                             {{{"type", "Strip"}, {"left", true}, {"right", true}},
                              {{"type", "NFKC"}},
                              {{"type", "Replace"}, {"pattern", {{"Regex", " +"}}}, {"content", "_"}}}}};
  auto norm = tok::normalizer_from_json(j);
  ASSERT_TRUE(norm.ok()) << norm.status().to_string();
  std::string text = " \t\xEF\xBC\xA8\xEF\xBD\x89\xC2\xA0there  you \n";  // fullwidth "Ｈｉ", NBSP
  (*norm)->apply(text);
  EXPECT_EQ(text, "Hi_there_you");
}

TEST(Normalizer, Qwen2AppliesNfc) {
  const Tokenizer& tok = hf_tokenizer("qwen2");
  EXPECT_EQ(tok.encode("caf\x65\xCC\x81", false), tok.encode("caf\xC3\xA9", false));  // e + U+0301 → é
}

TEST(StreamingDecoder, HoldsBackSplitCharactersAndMatchesDecode) {
  struct Setup {
    const Tokenizer* tok;
    bool add_bos;
  };
  const Setup setups[] = {{&gguf_tokenizer("models/stories260K.gguf"), true},
                          {&hf_tokenizer("deepseek-v3"), false},
                          {&hf_tokenizer("llama3"), false}};
  const std::string text = " Hi 🦙🐱 你好, 𝄞 ok\n";
  for (const Setup& s : setups) {
    const Ids ids = s.tok->encode(text, s.add_bos);
    Tokenizer::StreamingDecoder stream(*s.tok);
    std::string joined;
    size_t n_held = 0;
    for (int32_t id : ids) {
      const std::string piece = stream.push(id);
      EXPECT_TRUE(tok::is_valid_utf8(piece));
      n_held += piece.empty();
      joined += piece;
    }
    joined += stream.flush();
    EXPECT_EQ(joined, s.tok->decode(ids));
    EXPECT_GT(n_held, 0u) << "the emoji should span several tokens";
  }
}

TEST(StreamingDecoder, FlushRepairsAnUnfinishedSequence) {
  const Tokenizer& tok = gguf_tokenizer("models/stories260K.gguf");
  const auto lead = tok.find_token("<0xF0>");
  ASSERT_TRUE(lead.has_value());
  Tokenizer::StreamingDecoder stream(tok);
  EXPECT_EQ(stream.push(*lead), "");
  EXPECT_EQ(stream.flush(), "\xEF\xBF\xBD");
  EXPECT_EQ(tok.decode(Ids{*lead}), "\xEF\xBF\xBD");
}

TEST(StreamingDecoder, ContinuationKeepsTheLeadingSpace) {
  const Tokenizer& tok = gguf_tokenizer("models/stories260K.gguf");
  Tokenizer::StreamingDecoder fresh(tok), continued(tok, false, /*continues_text=*/true);
  EXPECT_EQ(fresh.push(403), "Once");
  EXPECT_EQ(continued.push(403), " Once");
}

TEST(Metadata, SpecialTokensAndTemplates) {
  const Tokenizer& ds = hf_tokenizer("deepseek-v3");
  EXPECT_EQ(ds.bos_id(), 0);
  EXPECT_EQ(ds.eos_id(), 1);
  EXPECT_TRUE(ds.add_bos_default());
  EXPECT_TRUE(ds.is_eog(1));
  EXPECT_EQ(ds.eos_text(), "<｜end▁of▁sentence｜>");
  EXPECT_FALSE(ds.chat_template().empty());
  EXPECT_EQ(ds.n_vocab(), 128815);  // 128000 BPE tokens + added tokens up to id 128814

  const Tokenizer& qwen = hf_tokenizer("qwen2");
  EXPECT_EQ(qwen.bos_id(), -1);
  EXPECT_FALSE(qwen.add_bos_default());
  EXPECT_EQ(qwen.encode("hi", true), qwen.encode("hi", false));  // no BOS to add
  const auto im_end = qwen.find_token("<|im_end|>");
  ASSERT_TRUE(im_end.has_value());
  EXPECT_EQ(*im_end, 151645);
  EXPECT_EQ(qwen.eos_id(), 151645);
  EXPECT_TRUE(qwen.is_eog(151643));   // <|endoftext|>
  EXPECT_FALSE(qwen.is_eog(151644));  // <|im_start|>
  EXPECT_FALSE(qwen.chat_template().empty());

  const Tokenizer& llama = hf_tokenizer("llama3");
  EXPECT_EQ(llama.bos_id(), 128000);
  EXPECT_TRUE(llama.is_eog(*llama.find_token("<|eot_id|>")));
  EXPECT_EQ(llama.decode(llama.encode("<|begin_of_text|>Hi<|eot_id|>", false), /*skip_special=*/true), "Hi");
}

TEST(BadInput, TokenizerJsonErrorsAreStatuses) {
  const std::string good = read_file(data_path("tokenizer/qwen2/tokenizer.json"));
  const std::string cases[] = {
      good.substr(0, good.size() / 2),  // truncated
      "",
      "not json at all",
      "[1, 2, 3]",
      "{}",
      R"({"model": 5})",
      R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})",
      R"({"model": {"type": "BPE", "vocab": {"a": -4}, "merges": []}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 99999999999}, "merges": []}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [7]}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["ab"]}})",
      R"({"model": {"type": "BPE", "vocab": {}, "merges": []}})",
      R"({"model": {"type": "Unigram", "vocab": [["a"]]}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "Split",
          "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated"}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "normalizer": {"type": "Precompiled"}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "decoder": {"type": "CTC"}})",
  };
  for (const std::string& text : cases) {
    auto result = Tokenizer::from_hf_json_text(text);
    EXPECT_FALSE(result.ok()) << text.substr(0, 120);
  }
  auto missing = Tokenizer::from_hf_json(data_path("tokenizer/nope/tokenizer.json"), "");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto bad_config = Tokenizer::from_hf_json_text(kBpeJson, "{\"bos_token\": ");
  ASSERT_FALSE(bad_config.ok());
  EXPECT_NE(bad_config.status().message().find("tokenizer_config.json"), std::string::npos);
  auto no_model = Tokenizer::from_hf_json_text("{}");
  EXPECT_NE(no_model.status().message().find("model"), std::string::npos);
}

TEST(BadInput, GgufMetadataErrorsAreStatuses) {
  using nlohmann::json;
  EXPECT_EQ(Tokenizer::from_gguf_metadata(json::object()).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Tokenizer::from_gguf_metadata({{"tokenizer.ggml.model", "bert"}}).status().code(),
            StatusCode::kUnsupported);
  EXPECT_FALSE(Tokenizer::from_gguf_metadata({{"tokenizer.ggml.model", "llama"}, {"tokenizer.ggml.tokens", 3}}).ok());
  EXPECT_FALSE(Tokenizer::from_gguf_metadata(
                   {{"tokenizer.ggml.model", "gpt2"}, {"tokenizer.ggml.tokens", {"a", "b"}}})  // no merges
                   .ok());
  EXPECT_FALSE(
      Tokenizer::from_gguf_metadata(
          {{"tokenizer.ggml.model", "llama"}, {"tokenizer.ggml.tokens", {"a", "b"}}, {"tokenizer.ggml.scores", {0.0}}})
          .ok());
  // An unknown pre-tokenizer name falls back to "default" with a warning.
  auto fallback = Tokenizer::from_gguf_metadata({{"tokenizer.ggml.model", "gpt2"},
                                                 {"tokenizer.ggml.pre", "no-such-pre"},
                                                 {"tokenizer.ggml.tokens", {"a", "b", "ab"}},
                                                 {"tokenizer.ggml.merges", {"a b"}}});
  ASSERT_TRUE(fallback.ok()) << fallback.status().to_string();
  EXPECT_EQ((*fallback)->encode("ab", false), (Ids{2}));
}

TEST(BadInput, InvalidUtf8TextIsRepairedNotRejected) {
  const Tokenizer& tok = hf_tokenizer("deepseek-v3");
  const Ids ids = tok.encode(
      "a\xFF"
      "b\xE4",
      false);
  EXPECT_EQ(tok.decode(ids),
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD");
  EXPECT_TRUE(tok.decode(Ids{-1, 1 << 30}).empty());  // unknown ids decode to nothing
}

}  // namespace
}  // namespace cai::test
