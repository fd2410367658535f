// The Responses API request: input items, tools and settings translated into the chat request they run as, the
// conversation kept for previous_response_id, and the refusals with the field they name.
#include <gtest/gtest.h>

#include "server/openai/responses_request.h"

namespace cai::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

class ResponsesRequestTest : public ::testing::Test {
 protected:
  std::optional<ResponsesRequest> parse(const std::string& body) {
    return parse_responses_request(body, store_, error_);
  }
  // The request's error, which must exist.
  ApiError refused(const std::string& body) {
    EXPECT_FALSE(parse(body)) << body;
    return error_;
  }

  ResponseStore store_{16, 1 << 20};
  ApiError error_;
};

TEST_F(ResponsesRequestTest, AStringInputIsOneUserMessageAfterTheInstructions) {
  auto r = parse(R"({"model": "m", "input": "Hello", "instructions": "Be brief.", "max_output_tokens": 20,
                     "temperature": 0.5})");
  ASSERT_TRUE(r) << error_.message;
  EXPECT_EQ(r->api.messages, ordered_json::parse(R"([{"role": "system", "content": "Be brief."},
                                                     {"role": "user", "content": "Hello"}])"));
  EXPECT_EQ(r->conversation, ordered_json::parse(R"([{"role": "user", "content": "Hello"}])"));
  EXPECT_EQ(r->api.max_tokens, 20);
  EXPECT_FLOAT_EQ(r->api.sampling.temperature, 0.5f);
  EXPECT_EQ(r->settings["instructions"], "Be brief.");
  EXPECT_EQ(r->settings["max_output_tokens"], 20);
  EXPECT_TRUE(r->store);
}

// What Codex sends: developer messages (joined into the system prompt in order), input_text parts, a reasoning item it
// got back earlier (dropped), an assistant message with output_text, a function call and its output.
TEST_F(ResponsesRequestTest, InputItemsBecomeChatMessages) {
  auto r = parse(R"({"instructions": "Base.", "input": [
      {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Rules."}]},
      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List files"}]},
      {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": null},
      {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Sure.", "annotations": []}]},
      {"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": "{\"cmd\":\"ls\"}"},
      {"type": "function_call_output", "call_id": "call_1", "output": [{"type": "input_text", "text": "a.png"},
          {"type": "input_image", "image_url": "data:image/png;base64,AA=="}]},
      {"role": "system", "content": "Late rule."},
      {"role": "user", "content": [{"type": "input_text", "text": "Now?"}]}]})");
  ASSERT_TRUE(r) << error_.message;
  EXPECT_EQ(r->api.messages, ordered_json::parse(R"([
      {"role": "system", "content": "Base.\n\nRules.\n\nLate rule."},
      {"role": "user", "content": "List files"},
      {"role": "assistant", "content": "Sure.", "tool_calls": [{"id": "call_1", "type": "function",
          "function": {"name": "exec_command", "arguments": "{\"cmd\":\"ls\"}"}}]},
      {"role": "tool", "content": "a.png\n\n[image omitted: this model reads text only]", "tool_call_id": "call_1"},
      {"role": "user", "content": "Now?"}])"));
}

TEST_F(ResponsesRequestTest, FunctionCustomAndNamespaceToolsAreOfferedAsFunctions) {
  auto r = parse(R"({"input": "x", "tools": [
      {"type": "function", "name": "exec_command", "parameters": {"type": "object",
          "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}, "strict": false},
      {"type": "custom", "name": "apply_patch", "description": "Patch files", "format": {"type": "grammar"}},
      {"type": "namespace", "name": "agents", "description": "Sub-agents",
          "tools": [{"type": "function", "name": "spawn", "parameters": {"type": "object", "properties": {}}}]},
      {"type": "web_search", "external_web_access": false}]})");
  ASSERT_TRUE(r) << error_.message;
  ASSERT_EQ(r->api.tools.size(), 3u) << r->api.tools.dump();  // web_search runs on OpenAI's servers: left out
  EXPECT_EQ(r->api.tools[0]["function"]["name"], "exec_command");
  EXPECT_EQ(r->api.tools[1]["function"]["name"], "apply_patch");
  EXPECT_EQ(r->api.tools[1]["function"]["parameters"]["required"], ordered_json::parse(R"(["input"])"));
  EXPECT_EQ(r->api.tools[2]["function"]["name"], "agents__spawn");
  EXPECT_TRUE(r->tools.at("apply_patch").custom);
  EXPECT_EQ(r->tools.at("agents__spawn").name, "spawn");
  EXPECT_EQ(r->tools.at("agents__spawn").ns, "agents");
  EXPECT_EQ(r->api.tool_choice, ToolChoice::kAuto);
}

TEST_F(ResponsesRequestTest, ToolChoiceForcesANamedToolOrASubset) {
  auto r = parse(R"({"input": "x", "tools": [{"type": "function", "name": "a"}, {"type": "function", "name": "b"}],
                     "tool_choice": {"type": "function", "name": "b"}})");
  ASSERT_TRUE(r) << error_.message;
  EXPECT_EQ(r->api.tool_choice, ToolChoice::kFunction);
  EXPECT_EQ(r->api.tool_choice_name, "b");
  r = parse(R"({"input": "x", "tools": [{"type": "function", "name": "a"}, {"type": "function", "name": "b"}],
                "tool_choice": {"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "a"}]}})");
  ASSERT_TRUE(r) << error_.message;
  EXPECT_EQ(r->api.tool_choice, ToolChoice::kRequired);
  ASSERT_EQ(r->api.tools.size(), 1u);
  EXPECT_EQ(r->api.tools[0]["function"]["name"], "a");
  EXPECT_EQ(refused(R"({"input": "x", "tools": [{"type": "function", "name": "a"}],
                        "tool_choice": {"type": "file_search"}})")
                .param,
            "tool_choice.type");
}

TEST_F(ResponsesRequestTest, TextFormatAndReasoningEffort) {
  auto r = parse(R"({"input": "x", "reasoning": {"effort": "low", "summary": "auto"},
                     "text": {"format": {"type": "json_schema", "name": "p", "strict": true,
                              "schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}}})");
  ASSERT_TRUE(r) << error_.message;
  EXPECT_TRUE(r->api.response_format);
  EXPECT_EQ(r->api.max_reasoning_tokens, 512);
  r = parse(R"({"input": "x", "reasoning": {"effort": "xhigh"}})");
  ASSERT_TRUE(r) << error_.message;
  EXPECT_EQ(r->api.max_reasoning_tokens, -1);
  EXPECT_EQ(refused(R"({"input": "x", "text": {"format": {"type": "yaml"}}})").param, "text.format.type");
}

// Fields a newer client sends are ignored; fields asking for what this server does not do are refused, naming them in
// the request's own terms.
TEST_F(ResponsesRequestTest, UnknownFieldsAreIgnoredAndUnsupportedOnesRefused) {
  EXPECT_TRUE(parse(R"({"input": "x", "client_metadata": {"a": "b"}, "prompt_cache_key": "k",
                        "include": ["reasoning.encrypted_content"], "store": false, "some_future_field": 1})"))
      << error_.message;
  EXPECT_EQ(refused(R"({"input": "x", "background": true})").param, "background");
  EXPECT_EQ(refused(R"({"input": "x", "conversation": "conv_1"})").param, "conversation");
  EXPECT_EQ(refused(R"({"input": "x", "max_output_tokens": 0})").param, "max_output_tokens");
  EXPECT_EQ(refused(R"({"input": "x", "temperature": 9})").param, "temperature");
  EXPECT_EQ(refused(R"({"model": "m"})").param, "input");
  EXPECT_EQ(refused(R"({"input": [{"type": "item_reference", "id": "msg_1"}]})").param, "input[0].type");
  EXPECT_EQ(refused(R"({"input": [{"type": "function_call_output", "call_id": "nope", "output": "x"}]})").param,
            "input[0].call_id");
  EXPECT_EQ(refused(R"({"input": "x", "tools": [{"type": "function", "name": "bad name"}]})").param, "tools[0]");
  // A text-only model cannot read an image the user sends: refused, so that the user knows.
  EXPECT_EQ(refused(R"({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]})").param,
            "input[0].content[0].type");
  EXPECT_EQ(refused("[1]").message, "the request body must be a JSON object");
}

TEST_F(ResponsesRequestTest, PreviousResponseIdContinuesTheStoredConversation) {
  store_.put("resp_1", {json{{"id", "resp_1"}}, ordered_json::parse(R"([
      {"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_9", "type": "function",
          "function": {"name": "weather", "arguments": "{}"}}]}])")});
  auto r = parse(R"({"previous_response_id": "resp_1", "instructions": "New.",
                     "input": [{"type": "function_call_output", "call_id": "call_9", "output": "sunny"}]})");
  ASSERT_TRUE(r) << error_.message;
  ASSERT_EQ(r->api.messages.size(), 4u) << r->api.messages.dump();
  EXPECT_EQ(r->api.messages[0], ordered_json::parse(R"({"role": "system", "content": "New."})"));
  EXPECT_EQ(r->api.messages[3],
            ordered_json::parse(R"({"role": "tool", "content": "sunny", "tool_call_id": "call_9"})"));
  EXPECT_EQ(r->conversation.size(), 3u);
  EXPECT_EQ(r->settings["previous_response_id"], "resp_1");
  const ApiError e = refused(R"({"previous_response_id": "resp_404", "input": "x"})");
  EXPECT_EQ(e.param, "previous_response_id");
  EXPECT_EQ(e.code, "previous_response_not_found");
}

TEST(ResponseStore, KeepsTheMostRecentlyUsedWithinItsBounds) {
  ResponseStore store(2, 1 << 20);
  for (const char* id : {"a", "b"}) store.put(id, {json{{"id", id}}, ordered_json::array()});
  EXPECT_TRUE(store.get("a"));  // "a" is now the most recent
  store.put("c", {json{{"id", "c"}}, ordered_json::array()});
  EXPECT_TRUE(store.get("a"));
  EXPECT_FALSE(store.get("b"));
  EXPECT_TRUE(store.erase("c"));
  EXPECT_FALSE(store.erase("c"));
  ResponseStore small(8, 10);  // bytes: only the newest stays
  small.put("x", {json{{"id", "x"}}, ordered_json::array()});
  small.put("y", {json{{"id", "y"}}, ordered_json::array()});
  EXPECT_FALSE(small.get("x"));
  EXPECT_TRUE(small.get("y"));
}

}  // namespace
}  // namespace cai::server
