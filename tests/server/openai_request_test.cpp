// OpenAI request validation: every field's type and range, unknown/ignored/unsupported parameters, defaults.
#include <gtest/gtest.h>

#include "server/openai/openai_request.h"

namespace cai::server {
namespace {

std::optional<ApiRequest> parse_chat(const std::string& body, ApiError& err) {
  return parse_api_request(ApiKind::kChat, body, err);
}

const char* kMsgs = R"("messages": [{"role": "user", "content": "hi"}])";

// Body with the chat messages plus `extra` fields (e.g. R"("temperature": 3)").
std::string chat_body(const std::string& extra) {
  return "{" + std::string(kMsgs) + (extra.empty() ? "" : ", ") + extra + "}";
}

struct BadCase {
  std::string extra;
  std::string param;
};

TEST(OpenAiRequest, RejectsBadFieldsNamingTheParameter) {
  const std::vector<BadCase> cases = {
      {R"("temperature": "hot")", "temperature"},
      {R"("temperature": 2.5)", "temperature"},
      {R"("temperature": -0.1)", "temperature"},
      {R"("top_p": 0)", "top_p"},
      {R"("top_p": 1.5)", "top_p"},
      {R"("top_k": -2)", "top_k"},
      {R"("top_k": 1.5)", "top_k"},
      {R"("min_p": 2)", "min_p"},
      {R"("presence_penalty": 3)", "presence_penalty"},
      {R"("frequency_penalty": -2.5)", "frequency_penalty"},
      {R"("repetition_penalty": 0)", "repetition_penalty"},
      {R"("seed": "x")", "seed"},
      {R"("seed": 1.5)", "seed"},
      {R"("max_tokens": 0)", "max_tokens"},
      {R"("max_tokens": "10")", "max_tokens"},
      {R"("max_completion_tokens": -1)", "max_completion_tokens"},
      {R"("stop": 5)", "stop"},
      {R"("stop": ["a", 1])", "stop"},
      {R"("stop": [""])", "stop"},
      {R"("stream": "yes")", "stream"},
      {R"("stream_options": {"include_usage": true})", "stream_options"},  // without stream
      {R"("stream": true, "stream_options": {"include_usage": 1})", "stream_options.include_usage"},
      {R"("stream": true, "stream_options": {"x": 1})", "stream_options"},
      {R"("logprobs": 1)", "logprobs"},
      {R"("top_logprobs": 3)", "top_logprobs"},
      {R"("logprobs": true, "top_logprobs": 21)", "top_logprobs"},
      {R"("n": 17)", "n"},
      {R"("n": "1")", "n"},
      {R"("n": 0)", "n"},
      {R"("logit_bias": [1])", "logit_bias"},
      {R"("logit_bias": {"abc": 1})", "logit_bias"},
      {R"("logit_bias": {"-5": 1})", "logit_bias"},
      {R"("logit_bias": {"5": 101})", "logit_bias"},
      {R"("logit_bias": {"5": "x"})", "logit_bias"},
      {R"("logit_bias": {"99999999999": 1})", "logit_bias"},
      {R"("reasoning_effort": "extreme")", "reasoning_effort"},
      {R"("reasoning_effort": 3)", "reasoning_effort"},
      {R"("max_reasoning_tokens": -1)", "max_reasoning_tokens"},
      {R"("model": 7)", "model"},
      {R"("frobnicate": true)", "frobnicate"},
      {R"("tools": [{"type": "function"}])", "tools[0].function"},
      {R"("response_format": {"type": "xml"})", "response_format"},
      {R"("ignore_eos": 1)", "ignore_eos"},
      {R"("prompt": "x")", "prompt"},  // a completions field on the chat route
  };
  for (const BadCase& c : cases) {
    ApiError err;
    EXPECT_FALSE(parse_chat(chat_body(c.extra), err)) << c.extra;
    EXPECT_EQ(err.http_status, 400) << c.extra;
    EXPECT_EQ(err.param, c.param) << c.extra << " → " << err.message;
    EXPECT_FALSE(err.message.empty());
  }
}

TEST(OpenAiRequest, RejectsBadMessages) {
  const std::vector<BadCase> cases = {
      {R"({"messages": []})", "messages"},
      {R"({"messages": "hi"})", "messages"},
      {R"({})", "messages"},
      {R"({"messages": [5]})", "messages[0]"},
      {R"({"messages": [{"content": "x"}]})", "messages[0].role"},
      {R"({"messages": [{"role": "wizard", "content": "x"}]})", "messages[0].role"},
      {R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})", "messages[0].content"},
  };
  for (const BadCase& c : cases) {
    ApiError err;
    EXPECT_FALSE(parse_chat(c.extra, err)) << c.extra;
    EXPECT_EQ(err.param, c.param) << c.extra << " → " << err.message;
  }
}

TEST(OpenAiRequest, MalformedBodies) {
  for (const char* body : {"", "{", "[1, 2]", "\"text\"", "{\"messages\": [}", "nul"}) {
    ApiError err;
    EXPECT_FALSE(parse_chat(body, err)) << body;
    EXPECT_EQ(err.http_status, 400);
    EXPECT_EQ(err.param, "");
    EXPECT_EQ(err.type, "invalid_request_error");
  }
}

// nlohmann's lexer ends the input at a NUL byte: what follows one must not be ignored.
TEST(OpenAiRequest, TrailingBytesAfterTheJsonAreRefused) {
  const std::string valid = R"({"messages": [{"role": "user", "content": "hi"}]})";
  ApiError err;
  ASSERT_TRUE(parse_chat(valid, err));
  for (const std::string& tail : {std::string("\0garbage", 8), std::string(1, '\0'), std::string(" x"), valid}) {
    std::string body = valid;
    body.append(tail);
    EXPECT_FALSE(parse_chat(body, err)) << body;
    EXPECT_EQ(err.http_status, 400);
  }
}

TEST(OpenAiRequest, ReadsEveryField) {
  ApiError err;
  auto req = parse_chat(R"({"model": "m", "messages": [
      {"role": "developer", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "name": "bob"},
      {"role": "assistant", "content": null}],
    "max_tokens": 10, "max_completion_tokens": 12, "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.05,
    "presence_penalty": 0.5, "frequency_penalty": -0.5, "repetition_penalty": 1.1, "seed": 42,
    "stop": ["\n\n", "END"], "stream": true, "stream_options": {"include_usage": true},
    "logprobs": true, "top_logprobs": 2, "n": 1, "user": "u1", "metadata": {"k": "v"},
    "parallel_tool_calls": false, "tools": [], "ignore_eos": true})",
                        err);
  ASSERT_TRUE(req) << err.message;
  EXPECT_EQ(req->model, "m");
  ASSERT_EQ(req->messages.size(), 3u);
  EXPECT_EQ(req->messages[0]["role"], "system");
  EXPECT_EQ(req->messages[1]["content"], "ab");
  EXPECT_EQ(req->messages[1]["name"], "bob");
  EXPECT_EQ(req->messages[2]["content"], "");
  EXPECT_EQ(req->max_tokens, 12);
  EXPECT_FLOAT_EQ(req->sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(req->sampling.top_p, 0.9f);
  EXPECT_EQ(req->sampling.top_k, 40);
  EXPECT_FLOAT_EQ(req->sampling.min_p, 0.05f);
  EXPECT_FLOAT_EQ(req->sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(req->sampling.frequency_penalty, -0.5f);
  EXPECT_FLOAT_EQ(req->sampling.repetition_penalty, 1.1f);
  EXPECT_EQ(req->sampling.seed, 42u);
  EXPECT_TRUE(req->seed_given);
  EXPECT_EQ(req->stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_TRUE(req->stream);
  EXPECT_TRUE(req->include_usage);
  EXPECT_EQ(req->top_logprobs, 2);
  EXPECT_TRUE(req->ignore_eos);
}

TEST(OpenAiRequest, ChoicesLogitBiasAndReasoningBudget) {
  ApiError err;
  auto req =
      parse_chat(chat_body(R"("n": 16, "logit_bias": {"5": -100, "0012": 2.5}, "reasoning_effort": "low")"), err);
  ASSERT_TRUE(req) << err.message;
  EXPECT_EQ(req->n, 16);
  EXPECT_EQ(req->sampling.logit_bias, (std::vector<std::pair<int32_t, float>>{{5, -100.0f}, {12, 2.5f}}));
  EXPECT_EQ(req->max_reasoning_tokens, 512);
  auto both = parse_chat(chat_body(R"("reasoning_effort": "high", "max_reasoning_tokens": 7)"), err);
  ASSERT_TRUE(both) << err.message;
  EXPECT_EQ(both->max_reasoning_tokens, 7);  // the explicit count wins
  for (auto [effort, budget] : {std::pair{"none", 0}, std::pair{"minimal", 256}, std::pair{"low", 512},
                                std::pair{"medium", 2048}, std::pair{"high", 8192}})
    EXPECT_EQ(reasoning_budget_for(effort), budget) << effort;
  auto plain = parse_chat(chat_body(""), err);
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->n, 1);
  EXPECT_EQ(plain->max_reasoning_tokens, -1);
  EXPECT_TRUE(plain->sampling.logit_bias.empty());
}

TEST(OpenAiRequest, Defaults) {
  ApiError err;
  auto req = parse_chat(chat_body(R"("top_k": -1, "stop": "x", "logprobs": true, "max_tokens": 5.0)"), err);
  ASSERT_TRUE(req) << err.message;
  EXPECT_EQ(req->model, "");
  EXPECT_FLOAT_EQ(req->sampling.temperature, 1.0f);
  EXPECT_EQ(req->sampling.top_k, 0);
  EXPECT_FALSE(req->seed_given);
  EXPECT_EQ(req->stop, std::vector<std::string>{"x"});
  EXPECT_EQ(req->top_logprobs, 0);
  EXPECT_EQ(req->max_tokens, 5);
  EXPECT_FALSE(req->stream);
}

TEST(OpenAiRequest, CompletionPrompts) {
  ApiError err;
  auto text = parse_api_request(ApiKind::kCompletion, R"({"prompt": "Once", "logprobs": 3, "echo": false})", err);
  ASSERT_TRUE(text) << err.message;
  EXPECT_EQ(text->prompt_text, "Once");
  EXPECT_FALSE(text->prompt_is_tokens);
  EXPECT_EQ(text->top_logprobs, 3);
  auto one = parse_api_request(ApiKind::kCompletion, R"({"prompt": ["Once"]})", err);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->prompt_text, "Once");
  auto ids = parse_api_request(ApiKind::kCompletion, R"({"prompt": [1, 2, 3]})", err);
  ASSERT_TRUE(ids);
  EXPECT_EQ(ids->prompt_tokens, (std::vector<int32_t>{1, 2, 3}));
  // echo (lm-evaluation-harness's scoring: echo, logprobs, max_tokens 0).
  auto echo =
      parse_api_request(ApiKind::kCompletion, R"({"prompt": "x", "echo": true, "logprobs": 1, "max_tokens": 0})", err);
  ASSERT_TRUE(echo) << err.message;
  EXPECT_TRUE(echo->echo);
  EXPECT_EQ(echo->max_tokens, 0);
  EXPECT_FALSE(
      parse_api_request(ApiKind::kChat, R"({"messages": [{"role": "user", "content": "x"}], "echo": true})", err));
  EXPECT_EQ(err.param, "echo");
  auto nested = parse_api_request(ApiKind::kCompletion, R"({"prompt": [[4, 5]]})", err);
  ASSERT_TRUE(nested);
  EXPECT_EQ(nested->prompt_tokens, (std::vector<int32_t>{4, 5}));

  for (const char* bad :
       {R"({"prompt": ["a", "b"]})", R"({"prompt": [1, -2]})", R"({"prompt": 5})", R"({"prompt": []})", R"({})",
        R"({"prompt": "x", "logprobs": 6})", R"({"prompt": "x", "max_tokens": 0})", R"({"prompt": "x", "best_of": 2})",
        R"({"prompt": "x", "echo": true, "logprobs": 1, "n": 2})", R"({"prompt": "x", "suffix": "y"})",
        R"({"prompt": "x", "messages": []})", R"({"prompt": "x", "top_logprobs": 1})"}) {
    ApiError e;
    EXPECT_FALSE(parse_api_request(ApiKind::kCompletion, bad, e)) << bad;
    EXPECT_EQ(e.http_status, 400);
    EXPECT_FALSE(e.param.empty()) << bad;
  }
}

TEST(OpenAiRequest, ErrorJsonShape) {
  ApiError e = bad_request("bad temperature", "temperature");
  nlohmann::json j = error_json(e);
  EXPECT_EQ(j, nlohmann::json::parse(R"({"error": {"message": "bad temperature", "type": "invalid_request_error",
                                          "param": "temperature", "code": null}})"));
}

}  // namespace
}  // namespace cai::server
