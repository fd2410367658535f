// Anthropic output: the exact stream event sequence for scripted engine events (thinking, text, tool_use, stop
// reasons, errors), and the non-streaming message built from the same events.
#include <gtest/gtest.h>

#include "server/anthropic/anthropic_response.h"
#include "server/error_shape.h"
#include "named_sse.h"

namespace cai::server {
namespace {

using test_support::parse_named_events;
using test_support::scripted_events;
using test_support::SseEvent;
using test_support::usage_after;

using nlohmann::json;

std::vector<std::string> names(const std::vector<SseEvent>& events) {
  std::vector<std::string> out;
  for (const SseEvent& e : events) {
    std::string n = e.name;
    if (n == "content_block_delta") n += ":" + e.data["delta"]["type"].get<std::string>();
    if (n == "content_block_start") n += ":" + e.data["content_block"]["type"].get<std::string>();
    out.push_back(n);
  }
  return out;
}

std::string run_stream(AnthropicWriter& w, const std::vector<StreamEvent>& events) {
  std::string out;
  for (const StreamEvent& ev : events) out += w.stream(ev, usage_after(ev));
  EXPECT_TRUE(w.done());
  return out;
}

json run_full(AnthropicWriter& w, const std::vector<StreamEvent>& events) {
  for (const StreamEvent& ev : events) w.collect(ev);
  ApiError err;
  EXPECT_FALSE(w.failed(&err)) << err.message;
  return w.result(usage_after(events.back()));
}

ResponseMeta meta() { return {"msg_test", 0, "cai-test"}; }

TEST(AnthropicWriter, StreamsThinkingThenTextInAnthropicsEventOrder) {
  // The prompt opened <think>: the output is reasoning until </think>, then the answer.
  const auto events = scripted_events({"Let me", " think.", "</think>", "Hello", " world"});
  AnthropicWriter w(meta(), /*opens_think=*/true, std::nullopt);
  const std::vector<SseEvent> got = parse_named_events(run_stream(w, events));
  const std::vector<std::string> expected = {"message_start",
                                             "ping",
                                             "content_block_start:thinking",
                                             "content_block_delta:thinking_delta",
                                             "content_block_delta:thinking_delta",
                                             "content_block_delta:signature_delta",
                                             "content_block_stop",
                                             "content_block_start:text",
                                             "content_block_delta:text_delta",
                                             "content_block_delta:text_delta",
                                             "content_block_stop",
                                             "message_delta",
                                             "message_stop"};
  EXPECT_EQ(names(got), expected);
  std::string thinking, text;
  for (const SseEvent& e : got) {
    if (e.name != "content_block_delta") continue;
    const int index = e.data["index"];
    if (e.data["delta"]["type"] == "thinking_delta") {
      thinking += e.data["delta"]["thinking"].get<std::string>();
      EXPECT_EQ(index, 0);
    }
    if (e.data["delta"]["type"] == "text_delta") {
      text += e.data["delta"]["text"].get<std::string>();
      EXPECT_EQ(index, 1);
    }
    if (e.data["delta"]["type"] == "signature_delta")
      EXPECT_EQ(e.data["delta"]["signature"], thinking_signature("Let me think."));
  }
  EXPECT_EQ(thinking, "Let me think.");
  EXPECT_EQ(text, "Hello world");
  const json& start = got[0].data["message"];
  EXPECT_EQ(start["id"], "msg_test");
  EXPECT_EQ(start["role"], "assistant");
  EXPECT_EQ(start["content"], json::array());
  EXPECT_TRUE(start["stop_reason"].is_null());
  const json& delta = got[got.size() - 2].data;
  EXPECT_EQ(delta["delta"]["stop_reason"], "end_turn");
  EXPECT_TRUE(delta["delta"]["stop_sequence"].is_null());
  EXPECT_EQ(delta["usage"]["output_tokens"], 5);
  EXPECT_EQ(delta["usage"]["input_tokens"], 6);  // 10 prompt tokens, 4 of them from the prefix cache
  EXPECT_EQ(delta["usage"]["cache_read_input_tokens"], 4);

  // The same events collected give the same blocks.
  AnthropicWriter full(meta(), true, std::nullopt);
  const json message = run_full(full, events);
  EXPECT_EQ(message["type"], "message");
  EXPECT_EQ(message["content"],
            json::parse(R"([{"type": "thinking", "thinking": "Let me think.", "signature": ")" +
                        thinking_signature("Let me think.") + R"("}, {"type": "text", "text": "Hello world"}])"));
  EXPECT_EQ(message["stop_reason"], "end_turn");
  EXPECT_EQ(message["usage"], json::parse(R"({"input_tokens": 6, "output_tokens": 5, "cache_creation_input_tokens": 0,
                                              "cache_read_input_tokens": 4})"));
}

TEST(AnthropicWriter, ReportsStopSequenceAndMaxTokens) {
  auto events = scripted_events({"Once", " upon"});
  events.back().stop_sequence = "END";
  AnthropicWriter w(meta(), false, std::nullopt);
  const json message = run_full(w, events);
  EXPECT_EQ(message["stop_reason"], "stop_sequence");
  EXPECT_EQ(message["stop_sequence"], "END");
  EXPECT_EQ(message["content"], json::parse(R"([{"type": "text", "text": "Once upon"}])"));

  AnthropicWriter streamed(meta(), false, std::nullopt);
  const std::vector<SseEvent> got = parse_named_events(run_stream(streamed, events));
  EXPECT_EQ(got[got.size() - 2].data["delta"]["stop_sequence"], "END");

  AnthropicWriter cut(meta(), false, std::nullopt);
  EXPECT_EQ(run_full(cut, scripted_events({"a", "b"}, FinishReason::kLength))["stop_reason"], "max_tokens");
}

TEST(AnthropicWriter, EmptyAnswerHasNoBlocks) {
  AnthropicWriter w(meta(), false, std::nullopt);
  const std::vector<SseEvent> got = parse_named_events(run_stream(w, scripted_events({""})));
  EXPECT_EQ(names(got), (std::vector<std::string>{"message_start", "ping", "message_delta", "message_stop"}));
}

TEST(AnthropicWriter, AnEngineErrorEndsTheStreamWithAnErrorEvent) {
  auto events = scripted_events({"Once", " upon"}, FinishReason::kError);
  events.back().error = "device lost";
  AnthropicWriter w(meta(), false, std::nullopt);
  const std::vector<SseEvent> got = parse_named_events(run_stream(w, events));
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.back().name, "error");
  EXPECT_EQ(got.back().data["error"]["type"], "api_error");
  EXPECT_NE(got.back().data["error"]["message"].get<std::string>().find("device lost"), std::string::npos);
  for (const SseEvent& e : got) EXPECT_NE(e.name, "message_stop");

  auto oom = scripted_events({"x"}, FinishReason::kError);
  oom.back().error_code = StatusCode::kOutOfMemory;
  AnthropicWriter full(meta(), false, std::nullopt);
  for (const StreamEvent& ev : oom) full.collect(ev);
  ApiError err;
  ASSERT_TRUE(full.failed(&err));
  EXPECT_EQ(error_status(err, ErrorShape::kAnthropic), 529);
  EXPECT_EQ(error_body(err, ErrorShape::kAnthropic)["error"]["type"], "overloaded_error");
}

TEST(AnthropicWriter, ToolCallsBecomeToolUseBlocks) {
  // Qwen2.5's syntax (see tool_calls.h): text, then a call in <tool_call> tags, split mid-JSON across events.
  const auto events = scripted_events({"Let me check.", "<tool_call>\n{\"name\": \"weather\", \"argu",
                                       "ments\": {\"city\": \"Paris\"}}\n</tool_call>"});
  AnthropicWriter w(meta(), false, ToolSyntax::kHermes);
  const std::vector<SseEvent> got = parse_named_events(run_stream(w, events));
  std::vector<std::string> kinds = names(got);
  ASSERT_GE(kinds.size(), 8u);
  EXPECT_EQ(kinds[2], "content_block_start:text");
  std::string text, partial;
  json tool_start;
  for (const SseEvent& e : got) {
    if (e.name == "content_block_start" && e.data["content_block"]["type"] == "tool_use") tool_start = e.data;
    if (e.name != "content_block_delta") continue;
    if (e.data["delta"]["type"] == "text_delta") text += e.data["delta"]["text"].get<std::string>();
    if (e.data["delta"]["type"] == "input_json_delta") partial += e.data["delta"]["partial_json"].get<std::string>();
  }
  EXPECT_EQ(text, "Let me check.");
  ASSERT_FALSE(tool_start.is_null()) << "no tool_use block";
  EXPECT_EQ(tool_start["index"], 1);
  EXPECT_EQ(tool_start["content_block"]["name"], "weather");
  EXPECT_TRUE(tool_start["content_block"]["id"].get<std::string>().starts_with("toolu_"));
  EXPECT_EQ(json::parse(partial), json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(got[got.size() - 2].data["delta"]["stop_reason"], "tool_use");

  AnthropicWriter full(meta(), false, ToolSyntax::kHermes);
  const json message = run_full(full, events);
  ASSERT_EQ(message["content"].size(), 2u) << message.dump();
  EXPECT_EQ(message["content"][0], json::parse(R"({"type": "text", "text": "Let me check."})"));
  EXPECT_EQ(message["content"][1]["type"], "tool_use");
  EXPECT_EQ(message["content"][1]["name"], "weather");
  EXPECT_EQ(message["content"][1]["input"], json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(message["stop_reason"], "tool_use");
}

// A keep-alive before any event (the prompt still computing) opens the stream with message_start, as Anthropic's
// streams always begin; later ones are pings, and the first event then starts no second message.
TEST(AnthropicWriter, KeepAliveIsAPingAfterMessageStart) {
  AnthropicWriter w(meta(), false, std::nullopt);
  Usage usage;
  usage.prompt_tokens = 7;
  const auto first = parse_named_events(w.keep_alive(usage));
  ASSERT_EQ(names(first), (std::vector<std::string>{"message_start", "ping"}));
  EXPECT_EQ(first[0].data["message"]["usage"]["input_tokens"], 7);
  EXPECT_EQ(names(parse_named_events(w.keep_alive(usage))), std::vector<std::string>{"ping"});
  StreamEvent ev;
  ev.text = "Hi";
  const std::vector<std::string> after = names(parse_named_events(w.stream(ev, usage)));
  EXPECT_EQ(std::count(after.begin(), after.end(), "message_start"), 0) << after.front();
  EXPECT_EQ(after.front(), "content_block_start:text");
}

TEST(ThinkingSignature, DependsOnTheText) {
  EXPECT_EQ(thinking_signature("abc"), thinking_signature("abc"));
  EXPECT_NE(thinking_signature("abc"), thinking_signature("abd"));
  EXPECT_EQ(thinking_signature("").size(), 16u);
}

TEST(ErrorShape, AnthropicTypesPerStatus) {
  EXPECT_EQ(error_shape_for("/v1/messages"), ErrorShape::kAnthropic);
  EXPECT_EQ(error_shape_for("/v1/messages/count_tokens"), ErrorShape::kAnthropic);
  EXPECT_EQ(error_shape_for("/v1/chat/completions"), ErrorShape::kOpenAI);
  EXPECT_EQ(error_shape_for("/v1/messagesx"), ErrorShape::kOpenAI);
  const std::vector<std::pair<int, std::string>> cases = {{400, "invalid_request_error"},
                                                          {401, "authentication_error"},
                                                          {403, "permission_error"},
                                                          {404, "not_found_error"},
                                                          {413, "request_too_large"},
                                                          {429, "rate_limit_error"},
                                                          {500, "api_error"},
                                                          {503, "overloaded_error"}};
  for (const auto& [status, type] : cases) {
    ApiError e;
    e.http_status = status;
    e.message = "m";
    EXPECT_EQ(error_body(e, ErrorShape::kAnthropic),
              json::parse(R"({"type": "error", "error": {"type": ")" + type + R"(", "message": "m"}})"));
    EXPECT_EQ(error_status(e, ErrorShape::kAnthropic), status == 503 ? 529 : status);
    EXPECT_EQ(error_status(e, ErrorShape::kOpenAI), status);
  }
}

}  // namespace
}  // namespace cai::server
