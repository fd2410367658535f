// Server parts: histogram text format, SSE framing, bearer auth, YAML config entries, byte sizes, prompt building.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "fake_engine.h"
#include "server/http/auth.h"
#include "server/config_file.h"
#include "server/metrics.h"
#include "server/prompt_builder.h"
#include "server/http/sse.h"

namespace cai::server {
namespace {

TEST(Histogram, PrometheusText) {
  Histogram h({0.1, 1.0});
  h.observe(0.05);
  h.observe(0.1);  // le is inclusive
  h.observe(0.5, 2);
  h.observe(3.0);
  std::string out;
  h.render(out, "x_seconds", "Help text.");
  EXPECT_EQ(out,
            "# HELP x_seconds Help text.\n# TYPE x_seconds histogram\n"
            "x_seconds_bucket{le=\"0.1\"} 2\nx_seconds_bucket{le=\"1\"} 4\nx_seconds_bucket{le=\"+Inf\"} 5\n"
            "x_seconds_sum 4.15\nx_seconds_count 5\n");
}

TEST(ServerMetrics, LoadingHasNoEngineSeries) {
  ServerMetrics m;
  m.count_request("/health", 503);
  ConnectionCounters connections;
  connections.open = 3;
  connections.refused_full = 2;
  const std::string text = m.render(std::nullopt, connections, 512);
  EXPECT_NE(text.find("cai_http_connections_open 3\n"), std::string::npos);
  EXPECT_NE(text.find("cai_http_connections_max 512\n"), std::string::npos);
  EXPECT_NE(text.find("cai_http_connections_refused_total 2\n"), std::string::npos);
  EXPECT_NE(text.find("cai_model_loaded 0\n"), std::string::npos);
  EXPECT_NE(text.find("cai_http_requests_total{endpoint=\"/health\",status=\"503\"} 1\n"), std::string::npos);
  EXPECT_EQ(text.find("cai_kv_blocks_used"), std::string::npos);
}

TEST(Sse, Framing) {
  EXPECT_EQ(sse_data({{"a", 1}}), "data: {\"a\":1}\n\n");
  EXPECT_EQ(std::string(kSseDone), "data: [DONE]\n\n");
  // A newline inside a string is escaped, so one event is one line.
  EXPECT_EQ(sse_data({{"t", "x\ny"}}), "data: {\"t\":\"x\\ny\"}\n\n");
  // Ill-formed UTF-8 (a token cut mid-character) is replaced, not thrown.
  EXPECT_EQ(json_text(std::string("\xE4\xB8")), "\"\xEF\xBF\xBD\"");
}

TEST(Auth, Bearer) {
  EXPECT_TRUE(bearer_matches("Bearer k3y", "k3y"));
  EXPECT_TRUE(bearer_matches("bearer k3y", "k3y"));
  EXPECT_FALSE(bearer_matches("Bearer k3", "k3y"));
  EXPECT_FALSE(bearer_matches("Bearer k3yy", "k3y"));
  EXPECT_FALSE(bearer_matches("Basic k3y", "k3y"));
  EXPECT_FALSE(bearer_matches("", "k3y"));
  EXPECT_FALSE(bearer_matches("k3y", "k3y"));
  EXPECT_TRUE(path_needs_auth("/v1/chat/completions"));
  EXPECT_FALSE(path_needs_auth("/health"));
  EXPECT_FALSE(path_needs_auth("/metrics"));
  EXPECT_FALSE(path_needs_auth("/"));
}

TEST(ConfigFile, FlatMapping) {
  auto entries = parse_config_yaml("port: 9000\nkv_memory: 512MiB\napi-key: \"abc\"\nstop: [a, b]\nempty:\n");
  ASSERT_TRUE(entries.ok()) << entries.status().to_string();
  ASSERT_EQ(entries->size(), 4u);
  EXPECT_EQ((*entries)[0].name, "port");
  EXPECT_EQ((*entries)[0].values, std::vector<std::string>{"9000"});
  EXPECT_EQ((*entries)[1].name, "kv-memory");
  EXPECT_EQ((*entries)[2].values, std::vector<std::string>{"abc"});
  EXPECT_EQ((*entries)[3].values, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(parse_config_yaml("").ok());
  for (const char* bad : {"- a\n- b\n", "port: {x: 1}\n", "port: [a, {b: c}]\n", "port: [unclosed\n"}) {
    auto r = parse_config_yaml(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(ConfigFile, ByteSizes) {
  EXPECT_EQ(parse_byte_size("268435456").value(), 268435456u);
  EXPECT_EQ(parse_byte_size("512MiB").value(), size_t(512) << 20);
  EXPECT_EQ(parse_byte_size("512m").value(), size_t(512) << 20);
  EXPECT_EQ(parse_byte_size("2GiB").value(), size_t(2) << 30);
  EXPECT_EQ(parse_byte_size("64k").value(), size_t(64) << 10);
  for (const char* bad : {"", "MiB", "12 parsecs", "-5", "99999999999999999999", "17179869184GiB"})
    EXPECT_FALSE(parse_byte_size(bad).ok()) << bad;
}

TEST(PromptBuilder, FallbackAndTemplate) {
  test::FakeEngine engine;
  const Tokenizer& tok = *engine.model().tokenizer;
  nlohmann::ordered_json msgs = nlohmann::ordered_json::parse(
      R"([{"role": "system", "content": "S"}, {"role": "user", "content": ""}, {"role": "user", "content": "U"}])");
  auto plain = PromptBuilder::create(tok, "");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->has_template());
  EXPECT_EQ(plain->chat_text(msgs).value(), "S\n\nU");
  auto p = plain->chat(msgs);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->tokens, tok.encode("S\n\nU", tok.add_bos_default()));
  EXPECT_FALSE(p->opens_think);

  // The template writes BOS itself: no second BOS is added.
  auto tpl = PromptBuilder::create(tok,
                                   "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}"
                                   "{% endfor %}{% if add_generation_prompt %}<think>\n{% endif %}");
  ASSERT_TRUE(tpl.ok()) << tpl.status().to_string();
  auto t = tpl->chat(msgs);
  ASSERT_TRUE(t.ok());
  const std::string text = tok.bos_text() + "[system]S[user][user]U<think>\n";
  EXPECT_EQ(t->tokens, tok.encode(text, false));
  EXPECT_TRUE(t->opens_think);

  auto raising = PromptBuilder::create(tok, "{{ raise_exception('roles must alternate') }}");
  ASSERT_TRUE(raising.ok());
  auto err = raising->chat(msgs);
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.status().message().find("roles must alternate"), std::string::npos);
  EXPECT_FALSE(PromptBuilder::create(tok, "{% for %}").ok());
}

TEST(PromptBuilder, LongestTokenBytesBoundsEveryToken) {
  test::FakeEngine engine;
  const Tokenizer& tok = *engine.model().tokenizer;
  auto plain = PromptBuilder::create(tok, "");
  ASSERT_TRUE(plain.ok());
  size_t longest = 0;
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    EXPECT_LE(tok.token_text(id).size(), plain->longest_token_bytes()) << id;
    longest = std::max(longest, tok.token_text(id).size());
  }
  EXPECT_EQ(plain->longest_token_bytes(), longest);
  // So no text has fewer tokens than its bytes / longest_token_bytes().
  const std::string text = "Once upon a time there was a little girl named Lily.";
  EXPECT_GE(tok.encode(text, false).size() * longest, text.size());
}

// The sliced count is a lower bound of the real one on byte-level BPE (with and without a pre-tokenizer regex) and
// SentencePiece vocabularies, close to it, and stops early once past its limit.
TEST(PromptBuilder, SlicedTokenCountIsALowerBound) {
  std::ifstream in(test::data_path("text/stories.txt"));
  const std::string story((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(story.size(), 1000u);
  std::string text;
  while (text.size() < 900'000) text += story + "\n\n";
  text.resize(900'000);  // four slices of at most 256 KiB: three cuts
  constexpr size_t kCuts = 3;
  for (const char* vocab : {"models/TinyStories-656K-Q8_0.gguf", "tokenizer/gguf-vocab/ggml-vocab-llama-spm.gguf",
                            "tokenizer/gguf-vocab/ggml-vocab-deepseek-llm.gguf"}) {
    SCOPED_TRACE(vocab);
    auto gguf = GgufFile::open(test::data_path(vocab));
    ASSERT_TRUE(gguf.ok()) << gguf.status().to_string();
    auto tok = Tokenizer::from_gguf_metadata(gguf.value()->metadata());
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    auto builder = PromptBuilder::create(**tok, "");
    ASSERT_TRUE(builder.ok());
    const size_t exact = (*tok)->encode(text, false).size();
    const size_t at_least = builder->tokens_at_least(text, exact + 1000);
    EXPECT_LE(at_least, exact);
    const size_t sliced = at_least + kCuts * PromptBuilder::kCutSlack;       // what the slices counted
    EXPECT_LE(sliced > exact ? sliced - exact : exact - sliced, 2 * kCuts);  // a cut changes a token or two
    const size_t early = builder->tokens_at_least(text, 100);
    EXPECT_GT(early, 100u);
    EXPECT_LT(early, exact / 2);  // it stopped after the first slice
  }
}

}  // namespace
}  // namespace cai::server
