// Anthropic request translation and validation: blocks, system, tool_use / tool_result → OpenAI-form messages, tools,
// tool_choice and thinking mapped onto ApiRequest, and every refused field named.
#include <gtest/gtest.h>

#include "server/anthropic/anthropic_request.h"

namespace cai::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

std::optional<ApiRequest> parse(const json& body, ApiError& err, AnthropicRoute route = AnthropicRoute::kMessages) {
  return parse_anthropic_request(route, body.dump(), err);
}

json base() {
  return {{"model", "m"}, {"max_tokens", 64}, {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}};
}

TEST(AnthropicRequest, TranslatesBlocksIntoOpenAiMessages) {
  json body = base();
  body["system"] = json::array({{{"type", "text"}, {"text", "Be brief."}}, {{"type", "text"}, {"text", "Be kind."}}});
  body["messages"] = json::array({
      {{"role", "user"},
       {"content",
        json::array({{{"type", "text"}, {"text", "Weather in Paris?"}},
                     {{"type", "text"}, {"text", "And Rome?"}, {"cache_control", {{"type", "ephemeral"}}}}})}},
      {{"role", "assistant"},
       {"content",
        json::array({{{"type", "thinking"}, {"thinking", "I should call the tool."}, {"signature", "s"}},
                     {{"type", "text"}, {"text", "Checking."}},
                     {{"type", "tool_use"}, {"id", "toolu_1"}, {"name", "weather"}, {"input", {{"city", "Paris"}}}},
                     {{"type", "tool_use"}, {"id", "toolu_2"}, {"name", "weather"}, {"input", {{"city", "Rome"}}}}})}},
      {{"role", "user"},
       {"content", json::array({{{"type", "tool_result"}, {"tool_use_id", "toolu_1"}, {"content", "18 C"}},
                                {{"type", "tool_result"},
                                 {"tool_use_id", "toolu_2"},
                                 {"is_error", true},
                                 {"content", json::array({{{"type", "text"}, {"text", "timeout"}}})}},
                                {{"type", "text"}, {"text", "Summarize."}}})}},
  });
  ApiError err;
  std::optional<ApiRequest> req = parse(body, err);
  ASSERT_TRUE(req) << err.message;
  // Written out by hand from the rules: system blocks joined by a blank line, user text blocks likewise, thinking
  // dropped, tool_use → tool_calls with the input as a JSON string, each tool_result → a "tool" message in order
  // (a failed one's text led by "Error: "), then the text that followed them as a user message.
  const ordered_json expected = ordered_json::parse(R"([
    {"role": "system", "content": "Be brief.\n\nBe kind."},
    {"role": "user", "content": "Weather in Paris?\n\nAnd Rome?"},
    {"role": "assistant", "content": "Checking.", "tool_calls": [
      {"id": "toolu_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}},
      {"id": "toolu_2", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Rome\"}"}}]},
    {"role": "tool", "tool_call_id": "toolu_1", "content": "18 C"},
    {"role": "tool", "tool_call_id": "toolu_2", "content": "Error: timeout"},
    {"role": "user", "content": "Summarize."}
  ])");
  EXPECT_EQ(req->messages, expected) << req->messages.dump(1);
  EXPECT_EQ(req->kind, ApiKind::kChat);
  EXPECT_EQ(req->n, 1);
}

TEST(AnthropicRequest, AnAssistantTurnOfOnlyToolUseHasNullContent) {
  json body = base();
  body["messages"] = json::array(
      {{{"role", "user"}, {"content", "go"}},
       {{"role", "assistant"},
        {"content",
         json::array({{{"type", "tool_use"}, {"id", "toolu_7"}, {"name", "t"}, {"input", json::object()}}})}},
       {{"role", "user"}, {"content", json::array({{{"type", "tool_result"}, {"tool_use_id", "toolu_7"}}})}}});
  ApiError err;
  std::optional<ApiRequest> req = parse(body, err);
  ASSERT_TRUE(req) << err.message;
  EXPECT_EQ(req->messages[1], ordered_json::parse(R"({"role": "assistant", "content": null, "tool_calls": [
      {"id": "toolu_7", "type": "function", "function": {"name": "t", "arguments": "{}"}}]})"));
  EXPECT_EQ(req->messages[2], ordered_json::parse(R"({"role": "tool", "tool_call_id": "toolu_7", "content": ""})"));
}

// Claude Code's Read tool on an image file answers with an image block: a note for a text-only model, not a refusal
// that would stop the agent. An image the user sends is refused.
TEST(AnthropicRequest, AnImageInAToolResultBecomesANote) {
  json body = base();
  body["messages"] = json::parse(R"([{"role": "user", "content": "Look at a.png"},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [
          {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}},
          {"type": "text", "text": "a.png, 1 KB"}]}]}])");
  ApiError err;
  std::optional<ApiRequest> req = parse(body, err);
  ASSERT_TRUE(req) << err.message;
  EXPECT_EQ(req->messages[2]["content"], "[image omitted: this model reads text only]\n\na.png, 1 KB");
  body["messages"] = json::parse(R"([{"role": "user", "content": [{"type": "image", "source": {}}]}])");
  EXPECT_FALSE(parse(body, err));
  EXPECT_EQ(err.param, "messages[0].content[0].type");
}

TEST(AnthropicRequest, ReadsScalarsStopSequencesAndStream) {
  json body = base();
  body["system"] = "You are terse.";
  body["temperature"] = 0.25;
  body["top_p"] = 0.5;
  body["top_k"] = 7;
  body["stop_sequences"] = {"END", "\n\nHuman:"};
  body["stream"] = true;
  body["metadata"] = {{"user_id", "u1"}};
  ApiError err;
  std::optional<ApiRequest> req = parse(body, err);
  ASSERT_TRUE(req) << err.message;
  EXPECT_EQ(req->model, "m");
  EXPECT_EQ(req->max_tokens, 64);
  EXPECT_FLOAT_EQ(req->sampling.temperature, 0.25f);
  EXPECT_FLOAT_EQ(req->sampling.top_p, 0.5f);
  EXPECT_EQ(req->sampling.top_k, 7);
  EXPECT_EQ(req->stop, (std::vector<std::string>{"END", "\n\nHuman:"}));
  EXPECT_TRUE(req->stream);
  EXPECT_EQ(req->messages[0], ordered_json({{"role", "system"}, {"content", "You are terse."}}));
  EXPECT_EQ(req->max_reasoning_tokens, -1);  // no thinking field: no budget
  EXPECT_TRUE(req->tools.empty());
}

TEST(AnthropicRequest, MapsThinkingOntoTheReasoningBudget) {
  ApiError err;
  json body = base();
  body["max_tokens"] = 4096;
  body["thinking"] = {{"type", "enabled"}, {"budget_tokens", 2048}};
  std::optional<ApiRequest> req = parse(body, err);
  ASSERT_TRUE(req) << err.message;
  EXPECT_EQ(req->max_reasoning_tokens, 2048);
  body["thinking"] = {{"type", "disabled"}};
  req = parse(body, err);
  ASSERT_TRUE(req) << err.message;
  EXPECT_EQ(req->max_reasoning_tokens, 0);  // the think block is closed as soon as it opens
}

TEST(AnthropicRequest, MapsToolsAndToolChoiceOntoOpenAiForms) {
  json body = base();
  body["tools"] =
      json::array({{{"name", "weather"},
                    {"description", "Current weather"},
                    {"input_schema",
                     {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}}}},
                   {{"type", "custom"}, {"name", "time"}, {"input_schema", {{"type", "object"}}}}});
  ApiError err;
  std::optional<ApiRequest> req = parse(body, err);
  ASSERT_TRUE(req) << err.message;
  ASSERT_EQ(req->tools.size(), 2u);
  EXPECT_EQ(req->tools[0], ordered_json::parse(R"({"type": "function", "function": {"name": "weather",
      "description": "Current weather", "parameters": {"properties": {"city": {"type": "string"}},
      "required": ["city"], "type": "object"}}})"));
  EXPECT_EQ(req->tools[1]["function"], ordered_json::parse(R"({"name": "time", "parameters": {"type": "object"}})"));
  EXPECT_EQ(req->tool_choice, ToolChoice::kAuto);
  EXPECT_TRUE(req->parallel_tool_calls);

  const std::vector<std::pair<json, ToolChoice>> choices = {
      {{{"type", "auto"}}, ToolChoice::kAuto},
      {{{"type", "any"}}, ToolChoice::kRequired},
      {{{"type", "none"}}, ToolChoice::kNone},
      {{{"type", "tool"}, {"name", "time"}}, ToolChoice::kFunction},
  };
  for (const auto& [choice, expected] : choices) {
    body["tool_choice"] = choice;
    req = parse(body, err);
    ASSERT_TRUE(req) << choice.dump() << ": " << err.message;
    EXPECT_EQ(req->tool_choice, expected) << choice.dump();
    EXPECT_EQ(req->tool_choice_name, expected == ToolChoice::kFunction ? "time" : "") << choice.dump();
  }
  body["tool_choice"] = {{"type", "any"}, {"disable_parallel_tool_use", true}};
  req = parse(body, err);
  ASSERT_TRUE(req) << err.message;
  EXPECT_FALSE(req->parallel_tool_calls);
}

TEST(AnthropicRequest, KeepsTheClientsKeyOrderInSchemasAndInputs) {
  const std::string body = R"({"max_tokens": 8, "tools": [{"name": "t", "input_schema": {"type": "object",
      "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}}}}],
      "messages": [{"role": "user", "content": "go"},
                   {"role": "assistant", "content": [{"type": "tool_use", "id": "x", "name": "t",
                                                      "input": {"zeta": "z", "alpha": 1}}]},
                   {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "ok"}]}]})";
  ApiError err;
  std::optional<ApiRequest> req = parse_anthropic_request(AnthropicRoute::kMessages, body, err);
  ASSERT_TRUE(req) << err.message;
  EXPECT_EQ(req->tools[0]["function"]["parameters"]["properties"].dump(),
            R"({"zeta":{"type":"string"},"alpha":{"type":"integer"}})");
  EXPECT_EQ(req->messages[1]["tool_calls"][0]["function"]["arguments"], R"({"zeta":"z","alpha":1})");
}

TEST(AnthropicRequest, CountTokensNeedsNoMaxTokens) {
  json body = base();
  body.erase("max_tokens");
  ApiError err;
  EXPECT_TRUE(parse(body, err, AnthropicRoute::kCountTokens)) << err.message;
  EXPECT_FALSE(parse(body, err, AnthropicRoute::kMessages));
  EXPECT_EQ(err.param, "max_tokens");
}

struct BadCase {
  std::string name;
  json patch;  // merged into the base body (null removes a field)
  std::string param;
};

TEST(AnthropicRequest, RefusesBadFieldsNamingThem) {
  auto user = [](json content) { return json::array({{{"role", "user"}, {"content", std::move(content)}}}); };
  const json tool = {{"name", "t"}, {"input_schema", {{"type", "object"}}}};
  const json prior_call = {
      {"role", "assistant"},
      {"content", json::array({{{"type", "tool_use"}, {"id", "toolu_1"}, {"name", "t"}, {"input", json::object()}}})}};
  const std::vector<BadCase> cases = {
      {"no max_tokens", {{"max_tokens", nullptr}}, "max_tokens"},
      {"max_tokens 0", {{"max_tokens", 0}}, "max_tokens"},
      {"max_tokens text", {{"max_tokens", "9"}}, "max_tokens"},
      {"model number", {{"model", 7}}, "model"},
      {"temperature over 1", {{"temperature", 1.5}}, "temperature"},
      {"top_p 0", {{"top_p", 0}}, "top_p"},
      {"top_k negative", {{"top_k", -1}}, "top_k"},
      {"stop_sequences string", {{"stop_sequences", "x"}}, "stop_sequences"},
      {"stop_sequences empty entry", {{"stop_sequences", {""}}}, "stop_sequences"},
      {"stream text", {{"stream", "yes"}}, "stream"},
      {"metadata number", {{"metadata", 5}}, "metadata"},
      {"no messages", {{"messages", nullptr}}, "messages"},
      {"empty messages", {{"messages", json::array()}}, "messages"},
      {"image block",
       {{"messages", user(json::array({{{"type", "image"}, {"source", json::object()}}}))}},
       "messages[0].content[0].type"},
      {"text block without text",
       {{"messages", user(json::array({{{"type", "text"}}}))}},
       "messages[0].content[0].text"},
      {"tool_use in a user message",
       {{"messages",
         user(json::array({{{"type", "tool_use"}, {"id", "a"}, {"name", "t"}, {"input", json::object()}}}))}},
       "messages[0].content[0].type"},
      {"tool_result for no tool_use",
       {{"messages", user(json::array({{{"type", "tool_result"}, {"tool_use_id", "toolu_9"}, {"content", "x"}}}))}},
       "messages[0].content[0].tool_use_id"},
      {"tool_result is_error text",
       {{"messages",
         json::array({{{"role", "user"}, {"content", "go"}},
                      prior_call,
                      {{"role", "user"},
                       {"content",
                        json::array({{{"type", "tool_result"}, {"tool_use_id", "toolu_1"}, {"is_error", "yes"}}})}}})}},
       "messages[2].content[0].is_error"},
      {"tool_use input not an object",
       {{"messages",
         json::array({{{"role", "user"}, {"content", "go"}},
                      {{"role", "assistant"},
                       {"content", json::array({{{"type", "tool_use"}, {"id", "a"}, {"name", "t"}, {"input", "x"}}})}},
                      {{"role", "user"}, {"content", "ok"}}})}},
       "messages[1].content[0].input"},
      {"prefill with a tool call",
       {{"messages", json::array({{{"role", "user"}, {"content", "a"}}, prior_call})}},
       "messages"},
      {"system number", {{"system", 3}}, "system"},
      {"system image block", {{"system", json::array({{{"type", "image"}}})}}, "system[0]"},
      {"tools object", {{"tools", json::object()}}, "tools"},
      {"tool name with a space",
       {{"tools", json::array({{{"name", "a b"}, {"input_schema", {{"type", "object"}}}}})}},
       "tools[0].name"},
      {"tool without input_schema", {{"tools", json::array({{{"name", "t"}}})}}, "tools[0].input_schema"},
      {"tool schema not an object type",
       {{"tools", json::array({{{"name", "t"}, {"input_schema", {{"type", "string"}}}}})}},
       "tools[0].input_schema"},
      {"server tool",
       {{"tools", json::array({{{"type", "web_search_20250305"}, {"name", "web_search"}}})}},
       "tools[0].type"},
      {"tool names twice", {{"tools", json::array({tool, tool})}}, "tools[1].name"},
      {"tool_choice string", {{"tool_choice", "auto"}, {"tools", json::array({tool})}}, "tool_choice"},
      {"tool_choice any without tools", {{"tool_choice", {{"type", "any"}}}}, "tool_choice"},
      {"tool_choice unknown tool",
       {{"tool_choice", {{"type", "tool"}, {"name", "u"}}}, {"tools", json::array({tool})}},
       "tool_choice.name"},
      {"tool_choice bad type",
       {{"tool_choice", {{"type", "some"}}}, {"tools", json::array({tool})}},
       "tool_choice.type"},
      {"thinking budget too small",
       {{"thinking", {{"type", "enabled"}, {"budget_tokens", 100}}}},
       "thinking.budget_tokens"},
      {"thinking budget over max_tokens",
       {{"max_tokens", 2000}, {"thinking", {{"type", "enabled"}, {"budget_tokens", 2000}}}},
       "thinking.budget_tokens"},
      {"thinking without budget", {{"thinking", {{"type", "enabled"}}}}, "thinking.budget_tokens"},
      {"thinking bad type", {{"thinking", {{"type", "sometimes"}}}}, "thinking.type"},
      {"tool role", {{"messages", json::array({{{"role", "tool"}, {"content", "x"}}})}}, "messages[0].role"},
      {"system message image",
       {{"messages", json::array({{{"role", "system"}, {"content", json::array({{{"type", "image"}}})}},
                                  {{"role", "user"}, {"content", "x"}}})}},
       "messages[0].content[0]"},
      {"thinking with a forced tool",
       {{"thinking", {{"type", "adaptive"}}}, {"tool_choice", {{"type", "any"}}}, {"tools", json::array({tool})}},
       "tool_choice"},
      {"mcp servers", {{"mcp_servers", json::array({{{"type", "url"}, {"url", "http://x"}}})}}, "mcp_servers"},
      {"output_config text", {{"output_config", "high"}}, "output_config"},
      {"effort unknown", {{"output_config", {{"effort", "extreme"}}}}, "output_config.effort"},
      {"format without schema", {{"output_config", {{"format", {{"type", "json_schema"}}}}}}, "output_config.format"},
      {"format schema with an unknown keyword",
       {{"output_config", {{"format", {{"type", "json_schema"}, {"schema", {{"type", "object"}, {"if", true}}}}}}}},
       "output_config.format"},
  };
  for (const BadCase& c : cases) {
    json body = base();
    for (auto it = c.patch.begin(); it != c.patch.end(); ++it) {
      if (it->is_null())
        body.erase(it.key());
      else
        body[it.key()] = *it;
    }
    ApiError err;
    EXPECT_FALSE(parse(body, err)) << c.name;
    EXPECT_EQ(err.http_status, 400) << c.name;
    EXPECT_EQ(err.param, c.param) << c.name << ": " << err.message;
    EXPECT_FALSE(err.message.empty()) << c.name;
  }
}

// What Claude Code 2.x and current SDKs send: fields this route accepts (context_management, container,
// inference_geo, an empty mcp_servers), adaptive thinking with an effort, system messages inside `messages`, the newer
// tool fields, and fields it has never heard of — all accepted, each with its documented meaning.
TEST(AnthropicRequest, AcceptsWhatCurrentClientsSend) {
  json body = base();
  body["system"] = "You are Claude Code.";
  body["messages"] =
      json::array({{{"role", "user"}, {"content", "Fix the bug."}},
                   {{"role", "system"}, {"content", "The user changed plans."}},
                   {{"role", "assistant"}, {"content", "Looking."}},
                   {{"role", "user"}, {"content", "Go on."}},
                   {{"role", "system"}, {"content", json::array({{{"type", "text"}, {"text", "Late."}}})}}});
  body["thinking"] = {{"type", "adaptive"}, {"display", "summarized"}};
  body["output_config"] = {{"effort", "medium"}};
  body["context_management"] = {{"edits", json::array({{{"type", "clear_tool_uses_20250919"}}})}};
  body["container"] = "c_1";
  body["inference_geo"] = "us";
  body["mcp_servers"] = json::array();
  body["a_field_from_the_future"] = {{"x", 1}};
  body["tools"] = json::array({{{"name", "Bash"},
                                {"input_schema", {{"type", "object"}}},
                                {"strict", true},
                                {"eager_input_streaming", true},
                                {"input_examples", json::array({json::object()})},
                                {"defer_loading", false},
                                {"another_new_field", 1}}});
  ApiError err;
  std::optional<ApiRequest> req = parse(body, err);
  ASSERT_TRUE(req) << err.message << " (" << err.param << ")";
  const ordered_json expected = ordered_json::parse(R"([
    {"role": "system", "content": "You are Claude Code.\n\nThe user changed plans.\n\nLate."},
    {"role": "user", "content": "Fix the bug."},
    {"role": "assistant", "content": "Looking."},
    {"role": "user", "content": "Go on."}
  ])");
  EXPECT_EQ(req->messages, expected) << req->messages.dump(1);
  EXPECT_EQ(req->max_reasoning_tokens, 2048);  // effort medium, as reasoning_effort medium
  ASSERT_EQ(req->tools.size(), 1u);
  EXPECT_EQ(req->tools[0]["function"]["name"], "Bash");
  EXPECT_EQ(req->response_format, nullptr);
}

// A final assistant message is the start of the answer (prefill): it leaves the messages and the answer continues it.
TEST(AnthropicRequest, FinalAssistantMessageIsAPrefill) {
  json body = base();
  body["messages"] =
      json::array({{{"role", "user"}, {"content", "List three colours as JSON."}},
                   {{"role", "assistant"}, {"content", json::array({{{"type", "text"}, {"text", "["}}})}}});
  ApiError err;
  std::optional<ApiRequest> req = parse(body, err);
  ASSERT_TRUE(req) << err.message;
  EXPECT_EQ(req->assistant_prefill, "[");
  ASSERT_EQ(req->messages.size(), 1u);
  EXPECT_EQ(req->messages[0]["role"], "user");
}

TEST(AnthropicRequest, EffortAndThinkingSetTheReasoningBudget) {
  struct Case {
    json thinking, output_config;
    int budget;
  };
  const std::vector<Case> cases = {
      {nullptr, {{"effort", "low"}}, 512},
      {nullptr, {{"effort", "high"}}, 8192},
      {nullptr, {{"effort", "max"}}, -1},
      {{{"type", "adaptive"}}, nullptr, -1},
      {{{"type", "enabled"}, {"budget_tokens", 1500}}, {{"effort", "low"}}, 1500},  // the explicit budget wins
      {{{"type", "disabled"}}, {{"effort", "high"}}, 0},
  };
  for (const Case& c : cases) {
    json body = base();
    body["max_tokens"] = 4096;
    if (!c.thinking.is_null()) body["thinking"] = c.thinking;
    if (!c.output_config.is_null()) body["output_config"] = c.output_config;
    ApiError err;
    std::optional<ApiRequest> req = parse(body, err);
    ASSERT_TRUE(req) << body.dump() << ": " << err.message;
    EXPECT_EQ(req->max_reasoning_tokens, c.budget) << body.dump();
  }
}

// output_config.format (Anthropic's structured outputs) constrains the answer as response_format does.
TEST(AnthropicRequest, OutputFormatIsStructuredOutput) {
  json body = base();
  body["output_config"] = {{"format",
                            {{"type", "json_schema"},
                             {"schema",
                              {{"type", "object"},
                               {"properties", {{"answer", {{"type", "string"}}}}},
                               {"required", {"answer"}},
                               {"additionalProperties", false}}}}}};
  ApiError err;
  std::optional<ApiRequest> req = parse(body, err);
  ASSERT_TRUE(req) << err.message;
  ASSERT_NE(req->response_format, nullptr);
}

TEST(AnthropicRequest, RefusesBodiesThatAreNotJsonObjects) {
  for (const std::string& body : std::vector<std::string>{"", "[1]", "{\"model\": ", std::string("{\"a\":1}\0x", 10)}) {
    ApiError err;
    EXPECT_FALSE(parse_anthropic_request(AnthropicRoute::kMessages, body, err)) << body;
    EXPECT_EQ(err.http_status, 400);
    EXPECT_FALSE(err.message.empty());
  }
}

}  // namespace
}  // namespace cai::server
