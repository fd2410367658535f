// /v1/messages and /v1/messages/count_tokens over HTTP with a scripted engine: responses, the event stream, errors in
// Anthropic's shape, x-api-key auth, what reaches the engine, count_tokens against the tokenizer, disconnects.
#include "server_fixture.h"

#include <regex>
#include <thread>

#include "model/loaders/gguf.h"
#include "tokenizer/tokenizer.h"

namespace cai::server::test_support {
namespace {

constexpr const char* kMessage =
    R"({"model": "tiny", "max_tokens": 16, "messages": [{"role": "user", "content": "Hello"}]})";

class AnthropicRoutesTest : public ServerTest {
 protected:
  // The error object of an Anthropic error response, checking its shape.
  static json anthropic_error_of(const httplib::Result& r) {
    json j = json::parse(r->body);
    EXPECT_EQ(j["type"], "error") << r->body;
    EXPECT_TRUE(j["error"]["type"].is_string()) << r->body;
    EXPECT_TRUE(j["error"]["message"].is_string()) << r->body;
    return j["error"];
  }
  // Event names of an Anthropic stream (each "event: NAME\ndata: {...}" whose data type is NAME).
  static std::vector<std::string> event_names(const std::string& body, std::string* text = nullptr) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos < body.size()) {
      const size_t end = body.find("\n\n", pos);
      if (end == std::string::npos) break;
      const std::string ev = body.substr(pos, end - pos);
      pos = end + 2;
      const size_t nl = ev.find('\n');
      const json data = json::parse(ev.substr(nl + 7));
      EXPECT_EQ("event: " + data["type"].get<std::string>(), ev.substr(0, nl));
      out.push_back(data["type"]);
      if (text && data["type"] == "content_block_delta" && data["delta"]["type"] == "text_delta")
        *text += data["delta"]["text"].get<std::string>();
    }
    return out;
  }
};

// What Claude Code's first request carries (fields Anthropic added lately, a system message inside `messages`,
// adaptive thinking with an effort, a model id it chose itself) is answered, and every response names its request.
TEST_F(AnthropicRoutesTest, AnswersWhatClaudeCodeSends) {
  ServerOptions o;
  o.model_names = {"tiny", "claude-*"};
  start(o, true, 4096);
  auto r = post("/v1/messages", R"({"model": "claude-sonnet-4-5-20250929", "max_tokens": 32000,
      "system": [{"type": "text", "text": "You are Claude Code."}],
      "messages": [{"role": "user", "content": "Hello"}, {"role": "system", "content": "Be brief."}],
      "thinking": {"type": "adaptive"}, "output_config": {"effort": "low"},
      "context_management": {"edits": [{"type": "clear_thinking_20251015"}]},
      "tools": [{"name": "Bash", "input_schema": {"type": "object"}, "eager_input_streaming": true}],
      "metadata": {"user_id": "u"}, "stream": true})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_TRUE(r->get_header_value("request-id").starts_with("req_"));
  EXPECT_EQ(r->get_header_value("request-id"), r->get_header_value("x-request-id"));
  const std::vector<std::string> names = event_names(r->body);
  ASSERT_GE(names.size(), 2u);
  EXPECT_EQ(names[0], "message_start");
  EXPECT_EQ(names[1], "ping");
  const std::vector<GenerationRequest> reqs = engine_->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].max_reasoning_tokens, 512);    // effort low
  const size_t data = r->body.find("data: ") + 6;  // message_start's payload
  EXPECT_EQ(json::parse(r->body.substr(data, r->body.find('\n', data) - data))["message"]["model"],
            "claude-sonnet-4-5-20250929");
  // Another id the glob does not cover is still refused.
  r = post("/v1/messages", R"({"model": "gpt-4o", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
}

// /v1/models in Anthropic's shape for Anthropic clients (anthropic-version), the exact names only, created stable.
TEST_F(AnthropicRoutesTest, ListsModelsInAnthropicsShape) {
  ServerOptions o;
  o.model_names = {"tiny", "claude-*"};
  start(o);
  auto r = client_->Get("/v1/models", httplib::Headers{{"anthropic-version", "2023-06-01"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json list = json::parse(r->body);
  ASSERT_EQ(list["data"].size(), 1u) << list;
  EXPECT_EQ(list["data"][0]["type"], "model");
  EXPECT_EQ(list["data"][0]["id"], "tiny");
  EXPECT_TRUE(std::regex_match(list["data"][0]["created_at"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << list;
  EXPECT_EQ(list["has_more"], false);
  EXPECT_EQ(list["first_id"], "tiny");
  r = client_->Get("/v1/models/claude-haiku-4-5", httplib::Headers{{"anthropic-version", "2023-06-01"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["id"], "claude-haiku-4-5");
  // The OpenAI shape without the header, with one `created` for every call.
  auto a = client_->Get("/v1/models");
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  auto b = client_->Get("/v1/models");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(json::parse(a->body)["object"], "list");
  EXPECT_EQ(json::parse(a->body)["data"][0]["created"], json::parse(b->body)["data"][0]["created"]);
}

TEST_F(AnthropicRoutesTest, AnswersAMessage) {
  start();
  auto r = post("/v1/messages", kMessage);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json m = json::parse(r->body);
  EXPECT_TRUE(m["id"].get<std::string>().starts_with("msg_"));
  EXPECT_EQ(m["type"], "message");
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_EQ(m["model"], "tiny");
  EXPECT_EQ(m["content"], json::parse(R"([{"type": "text", "text": "Once upon a time"}])"));
  EXPECT_EQ(m["stop_reason"], "end_turn");
  EXPECT_TRUE(m["stop_sequence"].is_null());
  const std::vector<GenerationRequest> reqs = engine_->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(m["usage"]["input_tokens"], reqs[0].prompt.size());
  EXPECT_EQ(m["usage"]["output_tokens"], 4);
  EXPECT_EQ(reqs[0].max_tokens, 16);
  EXPECT_EQ(reqs[0].n, 1);
}

TEST_F(AnthropicRoutesTest, PassesSamplingStopSequencesAndThinkingToTheEngine) {
  start({}, true, 4096);
  auto r = post("/v1/messages", R"({"model": "tiny", "max_tokens": 2000, "temperature": 0.5, "top_k": 3,
      "stop_sequences": ["END"], "thinking": {"type": "enabled", "budget_tokens": 1024},
      "messages": [{"role": "user", "content": "Hello"}]})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const std::vector<GenerationRequest> reqs = engine_->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_FLOAT_EQ(reqs[0].sampling.temperature, 0.5f);
  EXPECT_EQ(reqs[0].sampling.top_k, 3);
  EXPECT_EQ(reqs[0].stop, std::vector<std::string>{"END"});
  EXPECT_EQ(reqs[0].max_reasoning_tokens, 1024);
  EXPECT_EQ(reqs[0].max_tokens, 2000);
}

TEST_F(AnthropicRoutesTest, MaxTokensPastTheContextIsLoweredToTheRoomLeft) {
  start();  // a context of 64 tokens
  auto r = post("/v1/messages", R"({"max_tokens": 32000, "messages": [{"role": "user", "content": "Hello"}]})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const std::vector<GenerationRequest> reqs = engine_->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].max_tokens, 64 - static_cast<int>(reqs[0].prompt.size()));
}

TEST_F(AnthropicRoutesTest, StreamsTheEventSequence) {
  start();
  auto r = post("/v1/messages", R"({"max_tokens": 16, "stream": true,
      "messages": [{"role": "user", "content": "Hello"}]})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  std::string text;
  const std::vector<std::string> names = event_names(r->body, &text);
  std::vector<std::string> expected = {"message_start", "ping", "content_block_start"};
  for (int i = 0; i < 4; ++i) expected.push_back("content_block_delta");
  for (const char* n : {"content_block_stop", "message_delta", "message_stop"}) expected.push_back(n);
  // Keep-alive pings may come between events while the engine is quiet; drop all but the first.
  std::vector<std::string> got;
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] != "ping" || i == 1) got.push_back(names[i]);
  EXPECT_EQ(got, expected) << r->body;
  EXPECT_EQ(text, "Once upon a time");
}

// A forced tool whose schema the grammar cannot express is named as this API names it.
TEST_F(AnthropicRoutesTest, AnInexpressibleForcedToolSchemaIsNamedByItsField) {
  start({}, true, 4096);
  auto r = post("/v1/messages", R"({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
      "tool_choice": {"type": "any"}, "tools": [{"name": "ok", "input_schema": {"type": "object"}},
      {"name": "t", "input_schema": {"type": "object", "properties": {"a": {"not": {"type": "string"}}}}}]})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_TRUE(anthropic_error_of(r)["message"].get<std::string>().starts_with("tools[1].input_schema: not")) << r->body;
}

TEST_F(AnthropicRoutesTest, ErrorsComeInAnthropicsShape) {
  start();
  auto r = post("/v1/messages", R"({"messages": [{"role": "user", "content": "Hello"}]})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  json e = anthropic_error_of(r);
  EXPECT_EQ(e["type"], "invalid_request_error");
  EXPECT_NE(e["message"].get<std::string>().find("max_tokens"), std::string::npos) << e;

  r = post("/v1/messages", R"({"model": "other", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(anthropic_error_of(r)["type"], "not_found_error");

  r = post("/v1/messages", "{not json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(anthropic_error_of(r)["type"], "invalid_request_error");

  r = post("/v1/messages/unknown", "{}");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(anthropic_error_of(r)["type"], "not_found_error");

  // A prompt past the context (64 tokens here), in Anthropic's words, which Claude Code matches to compact.
  r = post("/v1/messages",
           R"({"max_tokens": 10, "messages": [{"role": "user", "content": ")" + std::string(2000, 'x') + R"("}]})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  e = anthropic_error_of(r);
  EXPECT_EQ(e["type"], "invalid_request_error");
  std::smatch m;
  const std::string message = e["message"].get<std::string>();
  ASSERT_TRUE(std::regex_match(message, m, std::regex(R"(prompt is too long: (\d+) tokens > (\d+) maximum)"))) << e;
  EXPECT_EQ(std::stoi(m[2]), 63);  // the context less the token it must leave to generate
  EXPECT_GT(std::stoi(m[1]), 63);

  // The OpenAI routes keep OpenAI's shape.
  r = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "n": 99})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(error_of(r)["param"], "n");
}

TEST_F(AnthropicRoutesTest, BusyAndLoadingServersAnswerRateLimitAndOverloaded) {
  start({}, /*attach=*/false);
  auto r = post("/v1/messages", kMessage);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 529);
  EXPECT_EQ(anthropic_error_of(r)["type"], "overloaded_error");
  attach_engine();
  engine_->script.submit_status = resource_exhausted("waiting queue full");
  r = post("/v1/messages", kMessage);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  EXPECT_EQ(anthropic_error_of(r)["type"], "rate_limit_error");
}

TEST_F(AnthropicRoutesTest, EngineErrorsAreApiErrors) {
  start();
  engine_->script.finish = FinishReason::kError;
  engine_->script.error = "kernel failed";
  auto r = post("/v1/messages", kMessage);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(anthropic_error_of(r)["type"], "api_error");
  r = post("/v1/messages", R"({"max_tokens": 16, "stream": true, "messages": [{"role": "user", "content": "x"}]})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  const std::vector<std::string> names = event_names(r->body);
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.back(), "error");
}

TEST_F(AnthropicRoutesTest, ApiKeyFromXApiKeyOrBearer) {
  ServerOptions o;
  o.api_key = "sekret";
  start(o);
  auto r = post("/v1/messages", kMessage);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(anthropic_error_of(r)["type"], "authentication_error");
  httplib::Headers wrong = {{"x-api-key", "sekreT"}, {"anthropic-version", "2023-06-01"}};
  r = client_->Post("/v1/messages", wrong, kMessage, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  for (const httplib::Headers& good : {httplib::Headers{{"x-api-key", "sekret"}, {"anthropic-version", "2023-06-01"}},
                                       httplib::Headers{{"Authorization", "Bearer sekret"}}}) {
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());  // the 401 closed the connection
    r = client_->Post("/v1/messages", good, kMessage, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
  }
  // The OpenAI routes keep their error shape for a missing key.
  client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  r = post("/v1/chat/completions", kChat);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(error_of(r)["code"], "invalid_api_key");
}

TEST_F(AnthropicRoutesTest, CountTokensIsThePromptsTokenCount) {
  start({}, true, 256);
  const std::string messages = R"("system": "Be brief.", "messages": [{"role": "user", "content": "Hello there"},
      {"role": "assistant", "content": "Hi!"}, {"role": "user", "content": [{"type": "text", "text": "Tell a story."}]}])";
  auto r = post("/v1/messages/count_tokens", "{\"model\": \"tiny\", " + messages + "}");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json counted = json::parse(r->body);
  ASSERT_EQ(counted.size(), 1u) << r->body;
  // The model has no chat template: the prompt is the contents joined by blank lines, encoded with the model's BOS.
  auto gguf = GgufFile::open(test::data_path("models/TinyStories-656K-Q8_0.gguf"));
  ASSERT_TRUE(gguf.ok());
  auto tok = Tokenizer::from_gguf_metadata(gguf.value()->metadata());
  ASSERT_TRUE(tok.ok());
  const std::vector<int32_t> ids =
      tok.value()->encode("Be brief.\n\nHello there\n\nHi!\n\nTell a story.", tok.value()->add_bos_default(), true);
  EXPECT_EQ(counted["input_tokens"], ids.size());
  // The same request generating: the engine gets exactly that many prompt tokens.
  r = post("/v1/messages", "{\"max_tokens\": 4, " + messages + "}");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  ASSERT_EQ(engine_->requests().size(), 1u);
  EXPECT_EQ(engine_->requests()[0].prompt, ids);
  EXPECT_EQ(json::parse(r->body)["usage"]["input_tokens"], ids.size());
}

// A final assistant message is continued: its text ends the prompt the engine gets (this model has no template, so
// the prompt is the contents joined by blank lines, the prefill last).
TEST_F(AnthropicRoutesTest, AFinalAssistantMessageIsContinued) {
  start({}, true, 256);
  auto r = post("/v1/messages", R"({"max_tokens": 4, "messages": [{"role": "user", "content": "Tell a story."},
      {"role": "assistant", "content": "Once upon"}]})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto gguf = GgufFile::open(test::data_path("models/TinyStories-656K-Q8_0.gguf"));
  ASSERT_TRUE(gguf.ok());
  auto tok = Tokenizer::from_gguf_metadata(gguf.value()->metadata());
  ASSERT_TRUE(tok.ok());
  ASSERT_EQ(engine_->requests().size(), 1u);
  EXPECT_EQ(engine_->requests()[0].prompt,
            tok.value()->encode("Tell a story.\n\nOnce upon", tok.value()->add_bos_default(), true));
}

TEST_F(AnthropicRoutesTest, AClientThatHangsUpCancelsItsStream) {
  start();
  engine_->script.hold = true;
  stream_then_disconnect(server_->port(), "/v1/messages",
                         R"({"max_tokens": 8, "stream": true, "messages": [{"role": "user", "content": "Hi"}]})");
  EXPECT_TRUE(engine_->wait_cancelled(std::chrono::seconds(5)));
}

}  // namespace
}  // namespace cai::server::test_support
