// Responses API output: the typed event sequence for scripted engine events (reasoning, text, function and custom tool
// calls, length and errors), the response object built from the same events, and what the store keeps.
#include <gtest/gtest.h>

#include "named_sse.h"
#include "server/openai/responses_writer.h"

namespace cai::server {
namespace {

using nlohmann::json;
using test_support::parse_named_events;
using test_support::scripted_events;
using test_support::SseEvent;
using test_support::usage_after;

ResponsesRequest request(const std::string& body, ResponseStore& store) {
  ApiError error;
  std::optional<ResponsesRequest> r = parse_responses_request(body, store, error);
  EXPECT_TRUE(r) << error.message;
  return r ? *r : ResponsesRequest{};
}

ResponseMeta meta() { return {"resp_test", 1700000000, "cai-test"}; }

std::vector<SseEvent> run_stream(ResponsesWriter& w, const std::vector<StreamEvent>& events) {
  std::string out;
  for (const StreamEvent& ev : events) out += w.stream(ev, usage_after(ev));
  EXPECT_TRUE(w.done());
  return parse_named_events(out);
}

json run_full(ResponsesWriter& w, const std::vector<StreamEvent>& events) {
  for (const StreamEvent& ev : events) w.collect(ev);
  ApiError err;
  EXPECT_FALSE(w.failed(&err)) << err.message;
  return w.result(usage_after(events.back()));
}

std::vector<std::string> names(const std::vector<SseEvent>& events) {
  std::vector<std::string> out;
  for (const SseEvent& e : events) out.push_back(e.name);
  return out;
}

TEST(ResponsesWriter, StreamsReasoningThenTextInTheApisEventOrder) {
  ResponseStore store(8, 1 << 20);
  const auto events = scripted_events({"Let me", " think.", "</think>", "Hello", " world"});
  ResponsesWriter w(request(R"({"input": "Hi"})", store), meta(), /*opens_think=*/true, std::nullopt, nullptr);
  const std::vector<SseEvent> got = run_stream(w, events);
  const std::vector<std::string> expected = {"response.created",
                                             "response.in_progress",
                                             "response.output_item.added",
                                             "response.content_part.added",
                                             "response.reasoning_text.delta",
                                             "response.reasoning_text.delta",
                                             "response.reasoning_text.done",
                                             "response.content_part.done",
                                             "response.output_item.done",
                                             "response.output_item.added",
                                             "response.content_part.added",
                                             "response.output_text.delta",
                                             "response.output_text.delta",
                                             "response.output_text.done",
                                             "response.content_part.done",
                                             "response.output_item.done",
                                             "response.completed"};
  EXPECT_EQ(names(got), expected);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].data["sequence_number"], i) << got[i].name;
  EXPECT_EQ(got[0].data["response"]["status"], "in_progress");
  EXPECT_EQ(got[13].data["text"], "Hello world");
  EXPECT_EQ(got[13].data["output_index"], 1);
  const json& done = got.back().data["response"];
  EXPECT_EQ(done["status"], "completed");
  ASSERT_EQ(done["output"].size(), 2u);
  EXPECT_EQ(done["output"][0]["content"][0], json::parse(R"({"type": "reasoning_text", "text": "Let me think."})"));
  EXPECT_EQ(done["output"][1]["content"][0]["text"], "Hello world");
  EXPECT_EQ(done["usage"]["input_tokens"], 10);
  EXPECT_EQ(done["usage"]["input_tokens_details"]["cached_tokens"], 4);
  EXPECT_EQ(done["usage"]["output_tokens"], 5);
  EXPECT_EQ(done["usage"]["output_tokens_details"]["reasoning_tokens"], 2);

  ResponsesWriter full(request(R"({"input": "Hi"})", store), meta(), true, std::nullopt, nullptr);
  json r = run_full(full, events);
  json streamed = done["output"];
  for (json* items : {&r["output"], &streamed})  // item ids are fresh per writer
    for (json& item : *items) item.erase("id");
  EXPECT_EQ(r["output"], streamed);
  EXPECT_EQ(r["status"], "completed");
}

// Qwen2.5's syntax (tool_calls.h): text, a function call split mid-JSON, then a custom (freeform) tool's call.
TEST(ResponsesWriter, ToolCallsBecomeFunctionAndCustomToolCallItems) {
  ResponseStore store(8, 1 << 20);
  const ResponsesRequest req = request(R"({"input": "Go", "tools": [
      {"type": "function", "name": "weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
      {"type": "custom", "name": "apply_patch"},
      {"type": "namespace", "name": "ns", "tools": [{"type": "function", "name": "spawn"}]}]})",
                                       store);
  const auto events = scripted_events({"Checking.", "<tool_call>\n{\"name\": \"weather\", \"argu",
                                       "ments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": "
                                       "\"apply_patch\", \"arguments\": {\"input\": \"*** Begin Patch\"}}\n</tool_call>"
                                       "\n<tool_call>\n{\"name\": \"ns__spawn\", \"arguments\": {}}\n</tool_call>"});
  ResponsesWriter w(req, meta(), false, ToolSyntax::kHermes, std::make_shared<ResponseStore>(8, 1 << 20));
  const std::vector<SseEvent> got = run_stream(w, events);
  std::string arguments;
  for (const SseEvent& e : got)
    if (e.name == "response.function_call_arguments.delta" && e.data["output_index"] == 1)
      arguments += e.data["delta"].get<std::string>();
  EXPECT_EQ(json::parse(arguments), json::parse(R"({"city": "Paris"})"));
  const json& output = got.back().data["response"]["output"];
  ASSERT_EQ(output.size(), 4u) << output.dump();
  EXPECT_EQ(output[0]["content"][0]["text"], "Checking.");
  EXPECT_EQ(output[1]["type"], "function_call");
  EXPECT_EQ(output[1]["name"], "weather");
  EXPECT_TRUE(output[1]["call_id"].get<std::string>().starts_with("call_"));
  EXPECT_EQ(json::parse(output[1]["arguments"].get<std::string>()), json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(output[2]["type"], "custom_tool_call");
  EXPECT_EQ(output[2]["input"], "*** Begin Patch");
  EXPECT_EQ(output[3]["name"], "spawn");
  EXPECT_EQ(output[3]["namespace"], "ns");
  const std::vector<std::string> kinds = names(got);
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "response.custom_tool_call_input.done"), kinds.end());
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "response.function_call_arguments.done"), kinds.end());
}

// The store keeps the conversation with the answer as the chat message a later request continues from.
TEST(ResponsesWriter, AFinishedResponseIsStoredUnlessTheRequestSaysNot) {
  auto store = std::make_shared<ResponseStore>(8, 1 << 20);
  ResponsesWriter w(request(R"({"input": "Hi"})", *store), meta(), false, std::nullopt, store);
  const json r = run_full(w, scripted_events({"Hello"}));
  std::optional<StoredResponse> kept = store->get("resp_test");
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->response, r);
  EXPECT_EQ(kept->conversation, nlohmann::ordered_json::parse(R"([{"role": "user", "content": "Hi"},
                                                                   {"role": "assistant", "content": "Hello"}])"));
  auto other = std::make_shared<ResponseStore>(8, 1 << 20);
  ResponsesWriter unstored(request(R"({"input": "Hi", "store": false})", *other), meta(), false, std::nullopt, other);
  run_full(unstored, scripted_events({"Hello"}));
  EXPECT_FALSE(other->get("resp_test"));
}

TEST(ResponsesWriter, LengthIsIncompleteAndAnErrorFailsTheResponse) {
  ResponseStore store(8, 1 << 20);
  ResponsesWriter w(request(R"({"input": "Hi", "max_output_tokens": 2})", store), meta(), false, std::nullopt, nullptr);
  const std::vector<SseEvent> got = run_stream(w, scripted_events({"a", "b"}, FinishReason::kLength));
  EXPECT_EQ(got.back().name, "response.incomplete");
  EXPECT_EQ(got.back().data["response"]["incomplete_details"]["reason"], "max_output_tokens");

  std::vector<StreamEvent> failing = scripted_events({"a", ""}, FinishReason::kError);
  failing.back().error = "device lost";
  ResponsesWriter f(request(R"({"input": "Hi"})", store), meta(), false, std::nullopt, nullptr);
  const std::vector<SseEvent> failed = run_stream(f, failing);
  EXPECT_EQ(failed.back().name, "response.failed");
  EXPECT_EQ(failed.back().data["response"]["status"], "failed");
  EXPECT_NE(failed.back().data["response"]["error"]["message"].get<std::string>().find("device lost"),
            std::string::npos);
  ResponsesWriter full(request(R"({"input": "Hi"})", store), meta(), false, std::nullopt, nullptr);
  for (const StreamEvent& ev : failing) full.collect(ev);
  ApiError error;
  ASSERT_TRUE(full.failed(&error));
  EXPECT_EQ(error.http_status, 500);
}

// A keep-alive before the first event (the prompt still computing) opens the stream with response.created.
TEST(ResponsesWriter, KeepAliveOpensTheStream) {
  ResponseStore store(8, 1 << 20);
  ResponsesWriter w(request(R"({"input": "Hi"})", store), meta(), false, std::nullopt, nullptr);
  const std::vector<SseEvent> first = parse_named_events(w.keep_alive({}));
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].name, "response.created");
  EXPECT_EQ(w.keep_alive({}), kSseKeepAlive);
  const std::vector<SseEvent> rest = parse_named_events(w.stream(scripted_events({"x"})[0], {}));
  ASSERT_FALSE(rest.empty());
  EXPECT_EQ(rest[0].name, "response.output_item.added");
  EXPECT_EQ(rest[0].data["sequence_number"], 2);
}

}  // namespace
}  // namespace cai::server
