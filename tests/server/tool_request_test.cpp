// Tool calling requests: tools / tool_choice / parallel_tool_calls and tool messages validated (errors name the
// field), and the grammar that forces a call for tool_choice "required" or a named function.
#include <gtest/gtest.h>

#include "server/openai/openai_request.h"
#include "server/tools/tool_grammar.h"

namespace cai::server {
namespace {

const char* kTools = R"("tools": [
  {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
  {"type": "function", "function": {"name": "now"}}])";

std::optional<ApiRequest> parse(const std::string& fields, ApiError& err) {
  return parse_api_request(ApiKind::kChat, R"({"messages": [{"role": "user", "content": "hi"}], )" + fields + "}", err);
}

TEST(ToolRequest, ReadsToolsChoiceAndParallel) {
  ApiError err;
  auto req = parse(std::string(kTools) + R"(, "tool_choice": {"type": "function", "function": {"name": "now"}},
                   "parallel_tool_calls": false)",
                   err);
  ASSERT_TRUE(req) << err.message;
  ASSERT_EQ(req->tools.size(), 2u);
  EXPECT_EQ(req->tools[0]["function"]["name"], "get_weather");
  EXPECT_EQ(req->tool_choice, ToolChoice::kFunction);
  EXPECT_EQ(req->tool_choice_name, "now");
  EXPECT_FALSE(req->parallel_tool_calls);
  for (auto [text, choice] : {std::pair{"\"auto\"", ToolChoice::kAuto},
                              {"\"none\"", ToolChoice::kNone},
                              {"\"required\"", ToolChoice::kRequired}}) {
    auto r = parse(std::string(kTools) + ", \"tool_choice\": " + text, err);
    ASSERT_TRUE(r) << err.message;
    EXPECT_EQ(r->tool_choice, choice);
    EXPECT_TRUE(r->parallel_tool_calls);  // OpenAI's default
  }
}

TEST(ToolRequest, RejectsBadToolsNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("tools": {"type": "function"})", "tools"},
      {R"("tools": [{"type": "retrieval", "function": {"name": "f"}}])", "tools[0].type"},
      {R"("tools": [{"type": "function", "function": {"name": "get weather"}}])", "tools[0].function.name"},
      {R"("tools": [{"type": "function", "function": {"name": ")" + std::string(65, 'x') + R"("}}])",
       "tools[0].function.name"},
      {R"("tools": [{"type": "function", "function": {"name": "f"}}, {"type": "function", "function": {"name": "f"}}])",
       "tools[1].function.name"},
      {R"("tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "string"}}}])",
       "tools[0].function.parameters"},
      {R"("tools": [{"type": "function", "function": {"name": "f", "parameters": [1]}}])",
       "tools[0].function.parameters"},
      {R"("tools": [{"type": "function", "function": {"name": "f", "description": 3}}])",
       "tools[0].function.description"},
      {std::string(kTools) + R"(, "tool_choice": {"type": "function", "function": {"name": "nope"}})", "tool_choice"},
      {std::string(kTools) + R"(, "tool_choice": "sometimes")", "tool_choice"},
      {std::string(kTools) + R"(, "tool_choice": {"type": "function"})", "tool_choice"},
      {R"("tool_choice": "required")", "tool_choice"},  // nothing to call
      {std::string(kTools) + R"(, "parallel_tool_calls": "yes")", "parallel_tool_calls"},
  };
  for (const auto& [fields, param] : cases) {
    ApiError err;
    EXPECT_FALSE(parse(fields, err)) << fields;
    EXPECT_EQ(err.http_status, 400) << fields;
    EXPECT_EQ(err.param, param) << fields << " → " << err.message;
  }
  ApiError err;
  EXPECT_FALSE(parse_api_request(ApiKind::kCompletion, std::string(R"({"prompt": "x", )") + kTools + "}", err));
  EXPECT_EQ(err.param, "tools");  // completions have no tools
}

TEST(ToolRequest, ToolHistoryMessages) {
  ApiError err;
  auto req = parse_api_request(ApiKind::kChat, R"({"messages": [
      {"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "-3C"}]}]})",
                               err);
  ASSERT_TRUE(req) << err.message;
  const auto& call_msg = req->messages[1];
  EXPECT_TRUE(call_msg["content"].is_null());  // empty content beside calls is none, as templates test for
  EXPECT_EQ(call_msg["tool_calls"][0]["function"]["arguments"], "{\"city\": \"Oslo\"}");
  EXPECT_EQ(req->messages[2]["tool_call_id"], "call_1");
  EXPECT_EQ(req->messages[2]["content"], "-3C");

  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"role": "tool", "content": "x"})", "messages[1].tool_call_id"},
      {R"({"role": "assistant", "content": null, "tool_calls": [{"type": "function",
          "function": {"name": "f", "arguments": "{}"}}]})",
       "messages[1].tool_calls[0].id"},
      {R"({"role": "assistant", "tool_calls": [{"id": "c", "type": "function",
          "function": {"name": "f", "arguments": {}}}]})",
       "messages[1].tool_calls[0].function.arguments"},
      {R"({"role": "user", "content": "x", "tool_calls": []})", "messages[1].tool_calls"},
  };
  for (const auto& [msg, param] : bad) {
    EXPECT_FALSE(
        parse_api_request(ApiKind::kChat, R"({"messages": [{"role": "user", "content": "hi"}, )" + msg + "]}", err))
        << msg;
    EXPECT_EQ(err.param, param) << msg << " → " << err.message;
  }
}

ToolOffer offer_of(const std::string& fields) {
  ApiError err;
  auto req = parse(fields, err);
  EXPECT_TRUE(req) << err.message;
  return req ? tool_offer(*req) : ToolOffer{};
}

TEST(ToolGrammar, ForcesCallsInTheModelsSyntax) {
  EXPECT_EQ(forced_tool_grammar(ToolSyntax::kHermes, offer_of(kTools), true).value(), nullptr);  // auto: free
  EXPECT_EQ(forced_tool_grammar(ToolSyntax::kHermes, offer_of(std::string(kTools) + R"(, "tool_choice": "none")"), true)
                .value(),
            nullptr);

  auto required =
      forced_tool_grammar(ToolSyntax::kHermes, offer_of(std::string(kTools) + R"(, "tool_choice": "required")"), true)
          .value();
  ASSERT_NE(required, nullptr);
  const std::string weather =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
  const std::string now = "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";
  EXPECT_TRUE(required->matches(weather));
  EXPECT_TRUE(required->matches(weather + "\n" + now));  // parallel calls
  EXPECT_FALSE(required->matches("It is sunny."));
  EXPECT_FALSE(required->matches("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"));  // city
  EXPECT_FALSE(required->matches("<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"));
  // What the grammar lets through parses back into the call.
  ParsedAnswer parsed = parse_tool_calls(ToolSyntax::kHermes, weather + "\n" + now);
  ASSERT_EQ(parsed.tool_calls.size(), 2u);

  auto named =
      forced_tool_grammar(ToolSyntax::kGeneric,
                          offer_of(std::string(kTools) +
                                   R"(, "tool_choice": {"type": "function", "function": {"name": "get_weather"}})"),
                          /*parallel=*/false)
          .value();
  ASSERT_NE(named, nullptr);
  const std::string call = R"({"name": "get_weather", "arguments": {"city": "Oslo"}})";
  EXPECT_TRUE(named->matches(call));
  EXPECT_FALSE(named->matches(call + "\n" + call));  // one call only
  EXPECT_FALSE(named->matches(R"({"name": "now", "arguments": {}})"));
  ASSERT_EQ(parse_tool_calls(ToolSyntax::kGeneric, call).tool_calls.size(), 1u);

  auto ds =
      forced_tool_grammar(ToolSyntax::kDeepSeek, offer_of(std::string(kTools) + R"(, "tool_choice": "required")"), true)
          .value();
  const std::string ds_call =
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>now\n```json\n{}\n```"
      "<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
  EXPECT_TRUE(ds->matches(ds_call));
  ASSERT_EQ(parse_tool_calls(ToolSyntax::kDeepSeek, ds_call).tool_calls.size(), 1u);
}

// zod 4's .int() bounds, .email() and a discriminated union in a forced tool's parameters are enforced; a keyword
// the grammar cannot express is an error naming the tool and the keyword, never "any JSON object".
TEST(ToolGrammar, ForcedArgumentsFollowTheSchemaOrTheRequestIsRefused) {
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "add_user", "parameters": {
      "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {
        "age": {"type": "integer", "minimum": -9007199254740991, "maximum": 9007199254740991},
        "email": {"type": "string", "format": "email"},
        "kind": {"oneOf": [{"type": "object", "properties": {"t": {"type": "string", "const": "a"}},
                            "required": ["t"], "additionalProperties": false},
                           {"type": "object", "properties": {"t": {"type": "string", "const": "b"}},
                            "required": ["t"], "additionalProperties": false}]}},
      "required": ["age", "email", "kind"], "additionalProperties": false}}}], "tool_choice": "required")";
  auto g = forced_tool_grammar(ToolSyntax::kGeneric, offer_of(tools), false);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(
      (*g)->matches(R"({"name": "add_user", "arguments": {"age": 30, "email": "a@b.io", "kind": {"t": "b"}}})"));
  EXPECT_FALSE((*g)->matches(R"({"name": "add_user", "arguments": {}})"));
  EXPECT_FALSE(
      (*g)->matches(R"({"name": "add_user", "arguments": {"age": 1.5, "email": "a@b.io", "kind": {"t": "b"}}})"));

  const std::string refused = R"("tools": [{"type": "function", "function": {"name": "f", "parameters": {
      "type": "object", "properties": {"n": {"type": "integer", "multipleOf": 3}}}}}], "tool_choice": "required")";
  auto bad = forced_tool_grammar(ToolSyntax::kGeneric, offer_of(refused), false);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message().rfind("tools[0].function.parameters: multipleOf:", 0), 0u) << bad.status().message();
  // Not forced: the schema is not compiled, and nothing is refused.
  EXPECT_EQ(forced_tool_grammar(ToolSyntax::kGeneric, offer_of(refused.substr(0, refused.rfind(','))), false).value(),
            nullptr);
}

}  // namespace
}  // namespace cai::server
