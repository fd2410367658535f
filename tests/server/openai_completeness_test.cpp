// The OpenAI parameters beyond the basics, over a FakeEngine: n choices (whole and streamed), model aliases,
// logit_bias checks, the reasoning budget's plumbing and chat's bounded default max_tokens.
#include <gtest/gtest.h>

#include <map>

#include "server_fixture.h"

namespace cai::server {
namespace {

using namespace test_support;

TEST_F(ServerTest, ChoicesWhole) {
  start();
  auto r = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "Hi"}], "n": 3, "seed": 5})");
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  ASSERT_EQ(j["choices"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(j["choices"][i]["index"], i);
    EXPECT_EQ(j["choices"][i]["message"]["content"], "Once upon a time");
    EXPECT_EQ(j["choices"][i]["finish_reason"], "stop");
  }
  const int n_prompt = static_cast<int>(engine_->requests()[0].prompt.size());
  EXPECT_EQ(j["usage"]["prompt_tokens"], n_prompt);  // once, not per choice
  EXPECT_EQ(j["usage"]["completion_tokens"], 3 * 4);
  EXPECT_EQ(engine_->requests()[0].n, 3);
  EXPECT_EQ(engine_->requests()[0].sampling.seed, 5u);

  auto c = post("/v1/completions", R"({"prompt": "Once", "n": 2, "logprobs": 0})");
  ASSERT_EQ(c->status, 200) << c->body;
  json cj = json::parse(c->body);
  ASSERT_EQ(cj["choices"].size(), 2u);
  EXPECT_EQ(cj["choices"][1]["index"], 1);
  EXPECT_EQ(cj["choices"][1]["text"], "Once upon a time");
  EXPECT_EQ(cj["choices"][1]["logprobs"]["text_offset"], json({0, 4, 9, 11}));  // offsets per choice
  EXPECT_EQ(cj["usage"]["completion_tokens"], 8);
}

TEST_F(ServerTest, ChoicesStreamed) {
  start();
  for (const char* path : {"/v1/chat/completions", "/v1/completions"}) {
    const bool chat = std::string(path).find("chat") != std::string::npos;
    const std::string body = chat ? R"({"messages": [{"role": "user", "content": "Hi"}], "n": 3, "stream": true,
                                        "stream_options": {"include_usage": true}})"
                                  : R"({"prompt": "Once", "n": 3, "stream": true,
                                        "stream_options": {"include_usage": true}})";
    auto r = post(path, body);
    ASSERT_EQ(r->status, 200);
    std::vector<std::string> data = sse_payloads(r->body);
    ASSERT_GE(data.size(), 3u);
    EXPECT_EQ(data.back(), "[DONE]");
    json usage = json::parse(data[data.size() - 2]);
    EXPECT_TRUE(usage["choices"].empty());
    EXPECT_EQ(usage["usage"]["completion_tokens"], 12);
    std::map<int, std::string> text;
    std::map<int, std::string> finish;
    for (size_t k = 0; k + 2 < data.size(); ++k) {
      json choice = json::parse(data[k])["choices"][0];
      const int i = choice["index"];
      EXPECT_FALSE(finish.count(i)) << "a chunk for choice " << i << " after its finish";
      if (chat && choice["delta"].contains("content")) text[i] += choice["delta"]["content"].get<std::string>();
      if (!chat) text[i] += choice["text"].get<std::string>();
      if (!choice["finish_reason"].is_null()) finish[i] = choice["finish_reason"];
    }
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(text[i], "Once upon a time") << path << " choice " << i;
      EXPECT_EQ(finish[i], "stop") << path << " choice " << i;
    }
  }
}

TEST_F(ServerTest, ModelAliases) {
  ServerOptions o;
  o.model_names = {"deepseek-r1", "r1", "gpt-4o"};
  start(o);
  json list = json::parse(client_->Get("/v1/models")->body)["data"];
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0]["id"], "deepseek-r1");
  EXPECT_EQ(list[2]["id"], "gpt-4o");
  EXPECT_EQ(client_->Get("/v1/models/r1")->status, 200);
  auto named = post("/v1/chat/completions", R"({"model": "r1", "messages": [{"role": "user", "content": "x"}]})");
  ASSERT_EQ(named->status, 200);
  EXPECT_EQ(json::parse(named->body)["model"], "r1");  // the id the client asked for
  auto unnamed = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}]})");
  EXPECT_EQ(json::parse(unnamed->body)["model"], "deepseek-r1");
  auto other = post("/v1/chat/completions", R"({"model": "llama", "messages": [{"role": "user", "content": "x"}]})");
  EXPECT_EQ(other->status, 404);
  EXPECT_EQ(error_of(other)["code"], "model_not_found");
  EXPECT_EQ(error_of(other)["message"],
            "the model 'llama' does not exist; this server serves 'deepseek-r1', 'r1', 'gpt-4o'");
  EXPECT_EQ(client_->Get("/v1/models/llama")->status, 404);
}

TEST_F(ServerTest, LogitBiasReachesTheEngineAndUnknownTokensAre400) {
  start();
  auto r = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}],
                                            "logit_bias": {"5": -100, "17": 3}})");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(engine_->requests()[0].sampling.logit_bias, (std::vector<std::pair<int32_t, float>>{{5, -100}, {17, 3}}));
  const int n_vocab = engine_->model().tokenizer->n_vocab();
  auto bad = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": {")" +
                                              std::to_string(n_vocab) + R"(": 1}})");
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(error_of(bad)["param"], "logit_bias");
  EXPECT_NE(error_of(bad)["message"].get<std::string>().find("'" + std::to_string(n_vocab) + "'"), std::string::npos);
  EXPECT_EQ(engine_->requests().size(), 1u);
}

TEST_F(ServerTest, ReasoningBudgetReachesTheEngine) {
  ServerOptions o;
  o.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}{{ '<think>\\n' }}";
  start(o);
  ASSERT_EQ(post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}],
                                             "reasoning_effort": "medium"})")
                ->status,
            200);
  ASSERT_EQ(post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}],
                                             "max_reasoning_tokens": 9})")
                ->status,
            200);
  ASSERT_EQ(post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}]})")->status, 200);
  const std::vector<GenerationRequest> g = engine_->requests();
  EXPECT_EQ(g[0].max_reasoning_tokens, 2048);
  EXPECT_TRUE(g[0].prompt_opens_think);
  EXPECT_EQ(g[1].max_reasoning_tokens, 9);
  EXPECT_EQ(g[2].max_reasoning_tokens, -1);
}

TEST_F(ServerTest, ChatDefaultMaxTokensIsBounded) {
  ServerOptions o;
  o.default_max_tokens = 10;
  start(o, true, /*ctx_size=*/64);
  ASSERT_EQ(post("/v1/chat/completions", kChat)->status, 200);
  ASSERT_EQ(
      post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 30})")->status,
      200);
  EXPECT_EQ(engine_->requests()[0].max_tokens, 10);
  EXPECT_EQ(engine_->requests()[1].max_tokens, 30);  // the client's own value is kept
  server_->stop();
  o.default_max_tokens = 0;  // unbounded: all the context the prompt leaves
  start(o, true, 64);
  ASSERT_EQ(post("/v1/chat/completions", kChat)->status, 200);
  EXPECT_EQ(engine_->requests()[0].max_tokens, 64 - static_cast<int>(engine_->requests()[0].prompt.size()));
}

// --max-output-tokens lowers every request's max_tokens (before the room check: 500 asked in a 64-token context is
// not refused), on both APIs; --logit-bias reaches every request, under the request's own bias for the same token.
TEST_F(ServerTest, ServerWideOutputCapAndLogitBias) {
  ServerOptions o;
  o.max_output_tokens = 6;
  o.logit_bias = {{1, 14.0f}, {5, -3.0f}};
  start(o, true, 64);
  ASSERT_EQ(post("/v1/chat/completions",
                 R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 500, "logit_bias": {"5": 2}})")
                ->status,
            200);
  ASSERT_EQ(post("/v1/completions", R"({"prompt": "x", "max_tokens": 3})")->status, 200);
  ASSERT_EQ(post("/v1/messages", R"({"max_tokens": 32000, "messages": [{"role": "user", "content": "x"}]})")->status,
            200);
  const std::vector<GenerationRequest> g = engine_->requests();
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0].max_tokens, 6);
  EXPECT_EQ(g[1].max_tokens, 3);
  EXPECT_EQ(g[2].max_tokens, 6);
  using Bias = std::vector<std::pair<int32_t, float>>;
  EXPECT_EQ(g[0].sampling.logit_bias, (Bias{{5, 2.0f}, {1, 14.0f}}));
  EXPECT_EQ(g[1].sampling.logit_bias, (Bias{{1, 14.0f}, {5, -3.0f}}));
  server_->stop();
  o.logit_bias = {{4096, 1.0f}};  // past the 2048-token vocabulary of the test model
  server_ = std::make_unique<HttpServer>(o);
  ASSERT_TRUE(server_->start().ok());
  const Status st = server_->attach(std::make_unique<FakeEngine>(64));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  EXPECT_NE(st.message().find("--logit-bias"), std::string::npos);
}

}  // namespace
}  // namespace cai::server
