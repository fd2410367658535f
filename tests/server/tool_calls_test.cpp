// Tool-call parsing: each syntax whole, the same answers streamed in random splits, malformed calls kept as content,
// and the syntax detected from the real chat templates.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <random>

#include "server/tools/tool_calls.h"
#include "real_chat_template.h"
#include "test_paths.h"

namespace cai::server {
namespace {

const std::string kDsCall = "<｜tool▁call▁begin｜>function<｜tool▁sep｜>";
const std::string kDsEnd = "<｜tool▁call▁end｜>";

// The arguments as a JSON value (so that spacing does not matter).
nlohmann::json args(const ToolCall& c) { return nlohmann::json::parse(c.arguments); }

// Feeds `text` to a stream in pieces cut at random places and reassembles what comes out as OpenAI clients do.
ParsedAnswer streamed(ToolSyntax syntax, const std::string& text, std::mt19937& rng) {
  ToolCallStream stream(syntax);
  ParsedAnswer out;
  auto take = [&](ToolCallStream::Delta d) {
    out.content += d.content;
    for (const ToolCallDelta& piece : d.calls) {
      if (!piece.id.empty()) {  // the first delta of a call: id and name, no arguments yet
        EXPECT_EQ(piece.index, static_cast<int>(out.tool_calls.size()));
        EXPECT_EQ(piece.arguments, "");
        out.tool_calls.push_back({piece.id, piece.name, ""});
      } else {
        EXPECT_TRUE(piece.name.empty());
        ASSERT_LT(piece.index, static_cast<int>(out.tool_calls.size()));
        out.tool_calls[static_cast<size_t>(piece.index)].arguments += piece.arguments;
      }
    }
  };
  size_t at = 0;
  while (at < text.size()) {
    const size_t n = std::uniform_int_distribution<size_t>(0, 7)(rng);  // 0: an empty piece
    take(stream.push(std::string_view(text).substr(at, n)));
    at += n;
  }
  take(stream.finish());
  EXPECT_EQ(stream.calls().size(), out.tool_calls.size());
  return out;
}

// The whole parse, checked against 20 random streamings of the same text.
ParsedAnswer parse_both_ways(ToolSyntax syntax, const std::string& text) {
  ParsedAnswer whole = parse_tool_calls(syntax, text);
  std::mt19937 rng(1234);
  for (int round = 0; round < 20; ++round) {
    ParsedAnswer s = streamed(syntax, text, rng);
    EXPECT_EQ(s.content, whole.content) << text;
    EXPECT_EQ(s.tool_calls.size(), whole.tool_calls.size()) << text;
    for (size_t i = 0; i < std::min(s.tool_calls.size(), whole.tool_calls.size()); ++i) {
      EXPECT_EQ(s.tool_calls[i].name, whole.tool_calls[i].name);
      EXPECT_EQ(s.tool_calls[i].arguments, whole.tool_calls[i].arguments);
    }
  }
  for (const ToolCall& c : whole.tool_calls) {
    EXPECT_TRUE(c.id.starts_with("call_")) << c.id;
    EXPECT_EQ(c.id.size(), 29u);
  }
  return whole;
}

TEST(ToolCalls, HermesCallAfterText) {
  ParsedAnswer a = parse_both_ways(
      ToolSyntax::kHermes,
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>");
  EXPECT_EQ(a.content, "Let me check.");
  ASSERT_EQ(a.tool_calls.size(), 1u);
  EXPECT_EQ(a.tool_calls[0].name, "get_weather");
  EXPECT_EQ(args(a.tool_calls[0]), nlohmann::json({{"city", "Paris"}}));
}

TEST(ToolCalls, HermesParallelCallsHaveDistinctIds) {
  ParsedAnswer a = parse_both_ways(ToolSyntax::kHermes,
                                   "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n"
                                   "<tool_call>\n{\"name\": \"b-2\", \"arguments\": {\"x\": [1, 2]}}\n</tool_call>\n");
  EXPECT_EQ(a.content, "");
  ASSERT_EQ(a.tool_calls.size(), 2u);
  EXPECT_EQ(a.tool_calls[0].name, "a");
  EXPECT_EQ(args(a.tool_calls[0]), nlohmann::json::object());
  EXPECT_EQ(a.tool_calls[1].name, "b-2");
  EXPECT_EQ(args(a.tool_calls[1]), nlohmann::json({{"x", {1, 2}}}));
  EXPECT_NE(a.tool_calls[0].id, a.tool_calls[1].id);
}

TEST(ToolCalls, DeepSeekV3Block) {
  ParsedAnswer a = parse_both_ways(ToolSyntax::kDeepSeek,
                                   "<｜tool▁calls▁begin｜>" + kDsCall +
                                       "get_weather\n```json\n{\"city\": \"Paris\", \"days\": 3}\n```" + kDsEnd + "\n" +
                                       kDsCall + "get_time\n```json\n{}\n```" + kDsEnd + "<｜tool▁calls▁end｜>");
  EXPECT_EQ(a.content, "");
  ASSERT_EQ(a.tool_calls.size(), 2u);
  EXPECT_EQ(a.tool_calls[0].name, "get_weather");
  EXPECT_EQ(args(a.tool_calls[0]), nlohmann::json({{"city", "Paris"}, {"days", 3}}));
  EXPECT_EQ(a.tool_calls[1].name, "get_time");
}

TEST(ToolCalls, DeepSeekV31WithoutFence) {
  ParsedAnswer a = parse_both_ways(
      ToolSyntax::kDeepSeek, "Sure. <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>lookup<｜tool▁sep｜>{\"q\": \"}{\"}" +
                                 kDsEnd + "<｜tool▁calls▁end｜>");
  EXPECT_EQ(a.content, "Sure.");
  ASSERT_EQ(a.tool_calls.size(), 1u);
  EXPECT_EQ(a.tool_calls[0].name, "lookup");
  EXPECT_EQ(args(a.tool_calls[0]), nlohmann::json({{"q", "}{"}}));
}

TEST(ToolCalls, Llama3AndGenericJson) {
  ParsedAnswer l =
      parse_both_ways(ToolSyntax::kLlama3, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}");
  ASSERT_EQ(l.tool_calls.size(), 1u);
  EXPECT_EQ(args(l.tool_calls[0]), nlohmann::json({{"city", "Oslo"}}));
  EXPECT_EQ(l.content, "");
  ParsedAnswer g = parse_both_ways(ToolSyntax::kGeneric,
                                   "  {\"name\": \"f\", \"arguments\": {\"s\": \"a \\\"}\\\" b\"}}\n"
                                   "{\"name\": \"g\", \"arguments\": {}}");
  ASSERT_EQ(g.tool_calls.size(), 2u);
  EXPECT_EQ(args(g.tool_calls[0]), nlohmann::json({{"s", "a \"}\" b"}}));
  EXPECT_EQ(g.tool_calls[1].name, "g");
  EXPECT_EQ(g.content, "");
}

TEST(ToolCalls, PlainTextStaysContent) {
  for (ToolSyntax s : {ToolSyntax::kDeepSeek, ToolSyntax::kHermes, ToolSyntax::kLlama3, ToolSyntax::kGeneric}) {
    for (const std::string text : {"Once upon a time <b>x</b> {not json} <tool",
                                   "The call {\"name\": \"f\", "
                                   "\"arguments\": {}} is only quoted here.",
                                   "", " \n", "<｜tool▁calls▁begin｜>no call<｜tool▁calls▁end｜>"}) {
      ParsedAnswer a = parse_both_ways(s, text);
      EXPECT_EQ(a.content, text);
      EXPECT_TRUE(a.tool_calls.empty());
    }
  }
}

TEST(ToolCalls, MalformedCallsComeBackAsContent) {
  const std::vector<std::string> hermes = {
      "<tool_call>\n{\"name\": \"bad name\", \"arguments\": {}}\n</tool_call>",        // name not allowed
      "<tool_call>\n{\"name\": \"f\", \"arguments\": [1]}\n</tool_call>",              // arguments not an object
      "<tool_call>\n{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": }\"}</tool_call>",  // a string, not an object
      "<tool_call>\n{\"arguments\": {}, \"name\": \"f\"",                              // another form, never closed
      "<tool_call>\n{\"name\": \"f\", \"argu",                                         // cut off before the arguments
      "<tool_call>\n{\"name\": \"f\", \"x\": 1, \"arguments\": {}}\n</tool_call>",     // extra member before them
  };
  for (const std::string& text : hermes) {
    ParsedAnswer a = parse_both_ways(ToolSyntax::kHermes, text);
    EXPECT_EQ(a.content, text);
    EXPECT_TRUE(a.tool_calls.empty()) << text;
  }
  const std::string ds_bad = kDsCall + "f\n```python\nprint({})\n```" + kDsEnd;  // no JSON object
  ParsedAnswer d = parse_both_ways(ToolSyntax::kDeepSeek, ds_bad);
  EXPECT_EQ(d.content, ds_bad);
  EXPECT_TRUE(d.tool_calls.empty());
  for (const std::string text : {"{\"name\": \"f\"}", "{\"name\": \"Bob\", \"age\": 3}", "{\"name\": \"f\", \"argu"}) {
    ParsedAnswer g = parse_both_ways(ToolSyntax::kGeneric, text);  // no arguments
    EXPECT_EQ(g.content, text);
    EXPECT_TRUE(g.tool_calls.empty()) << text;
  }
}

// A call whose name comes after its arguments, or whose arguments are a string holding the object, is released whole
// once complete, its arguments re-serialised.
TEST(ToolCalls, OtherFormsOfCallComeWhole) {
  ParsedAnswer a = parse_both_ways(ToolSyntax::kHermes,
                                   "<tool_call>{\"arguments\": {\"a\": 1}, \"name\": \"f\"}</tool_call>"
                                   "<tool_call>{\"name\": \"g\", \"arguments\": \"{\\\"b\\\": [2]}\"}</tool_call>");
  EXPECT_EQ(a.content, "");
  ASSERT_EQ(a.tool_calls.size(), 2u);
  EXPECT_EQ(a.tool_calls[0].name, "f");
  EXPECT_EQ(a.tool_calls[0].arguments, "{\"a\":1}");
  EXPECT_EQ(a.tool_calls[1].name, "g");
  EXPECT_EQ(a.tool_calls[1].arguments, "{\"b\":[2]}");
  ParsedAnswer g = parse_both_ways(ToolSyntax::kGeneric, "{\"parameters\": {}, \"name\": \"h\"}");
  ASSERT_EQ(g.tool_calls.size(), 1u);
  EXPECT_EQ(g.tool_calls[0].arguments, "{}");
}

// Once made, a call stays: text after its arguments that is not the closing text expected is content, and the
// arguments are what the model wrote even when that is not valid JSON.
TEST(ToolCalls, CallsMadeStayWhenWhatFollowsGoesAstray) {
  struct Case {
    ToolSyntax syntax;
    std::string text, arguments, content;
  };
  const std::vector<Case> cases = {
      {ToolSyntax::kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }}\n</tool_call>", "{\"a\": }", ""},
      {ToolSyntax::kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}, \"x\": 1}\n</tool_call>", "{}",
       ", \"x\": 1}\n</tool_call>"},
      {ToolSyntax::kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}} trailing </tool_call>", "{}",
       "trailing </tool_call>"},
      {ToolSyntax::kDeepSeek, kDsCall + "f\n```json\n{\"a\": 1}\n``" + kDsEnd, "{\"a\": 1}", "``" + kDsEnd},
      {ToolSyntax::kLlama3, "{\"name\": \"f\", \"parameters\": {\"a\": 1}, \"b\": 2}", "{\"a\": 1}", ", \"b\": 2}"},
  };
  for (const Case& c : cases) {
    ParsedAnswer a = parse_both_ways(c.syntax, c.text);
    ASSERT_EQ(a.tool_calls.size(), 1u) << c.text;
    EXPECT_EQ(a.tool_calls[0].name, "f");
    EXPECT_EQ(a.tool_calls[0].arguments, c.arguments) << c.text;
    EXPECT_EQ(a.content, c.content) << c.text;
  }
}

// An answer that ends inside a call's arguments (max_tokens) leaves the call with its arguments as far as written;
// one that ends inside the closing text drops it.
TEST(ToolCalls, ArgumentsCutOffByTheEndStayACall) {
  struct Case {
    ToolSyntax syntax;
    std::string text, arguments;
  };
  const std::vector<Case> cases = {
      {ToolSyntax::kHermes, "Checking. <tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1", "{\"a\": 1"},
      {ToolSyntax::kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}", "{\"a\": 1}"},
      {ToolSyntax::kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_", "{\"a\": 1}"},
      {ToolSyntax::kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {", "{"},
      {ToolSyntax::kDeepSeek, "<｜tool▁calls▁begin｜>" + kDsCall + "f\n```json\n{\"a\": [1, \"x\\",
       "{\"a\": [1, \"x\\"},
      {ToolSyntax::kDeepSeek, kDsCall + "f\n```json\n{\"a\": 2}\n`", "{\"a\": 2}"},
      {ToolSyntax::kLlama3, "{\"name\": \"f\", \"parameters\": {\"text\": \"unfinished", "{\"text\": \"unfinished"},
      {ToolSyntax::kGeneric, "{\"name\": \"f\", \"arguments\": {\"s\": \"caf\xC3", "{\"s\": \"caf\xC3"},
  };
  for (const Case& c : cases) {
    ParsedAnswer a = parse_both_ways(c.syntax, c.text);
    ASSERT_EQ(a.tool_calls.size(), 1u) << c.text;
    EXPECT_EQ(a.tool_calls[0].name, "f");
    EXPECT_EQ(a.tool_calls[0].arguments, c.arguments) << c.text;
    EXPECT_EQ(a.content, c.text.starts_with("Checking.") ? "Checking." : "") << c.text;
  }
}

// Each syntax fed one byte at a time: the call is made when its arguments object begins, long before it ends; the
// arguments then come in pieces that are whole UTF-8 characters and add up to the object exactly as written.
TEST(ToolCalls, ArgumentsStreamAsTheModelWritesThem) {
  const std::string object = "{\"city\": \"Paris\", \"note\": \"a \\\"}\\\" b é✓🙂\", \"list\": [1, {\"x\": 2}]}";
  const std::vector<std::pair<ToolSyntax, std::string>> cases = {
      {ToolSyntax::kHermes,
       "Let me see.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + object + "}\n</tool_call>"},
      {ToolSyntax::kHermes, "<tool_call>{ \"name\" :\"get_weather\",\n\"parameters\":" + object + " }</tool_call>"},
      {ToolSyntax::kDeepSeek, "<｜tool▁calls▁begin｜>" + kDsCall + "get_weather\n```json\n" + object + "\n```" +
                                  kDsEnd + "<｜tool▁calls▁end｜>"},
      {ToolSyntax::kDeepSeek, "<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>" + object + kDsEnd},
      {ToolSyntax::kLlama3, "{\"name\": \"get_weather\", \"parameters\": " + object + "}"},
      {ToolSyntax::kGeneric, " {\"name\": \"get_weather\", \"arguments\": " + object + "}\n"},
  };
  for (const auto& [syntax, text] : cases) {
    const size_t object_at = text.find(object);
    ToolCallStream stream(syntax);
    std::string content, arguments;
    size_t header_at = std::string::npos, pieces = 0;
    for (size_t at = 0; at <= text.size(); ++at) {
      const ToolCallStream::Delta d = at < text.size() ? stream.push(text.substr(at, 1)) : stream.finish();
      content += d.content;
      for (const ToolCallDelta& piece : d.calls) {
        ASSERT_EQ(piece.index, 0) << text;
        if (!piece.id.empty()) {
          EXPECT_EQ(piece.name, "get_weather");
          EXPECT_EQ(header_at, std::string::npos);
          header_at = at;
        }
        EXPECT_NO_THROW((void)nlohmann::json(piece.arguments).dump()) << "a UTF-8 sequence split: " << text;
        if (!piece.arguments.empty()) ++pieces;
        arguments += piece.arguments;
      }
    }
    EXPECT_EQ(header_at, object_at) << text;  // made with the object's first byte
    EXPECT_GT(pieces, object.size() / 2) << text;
    EXPECT_EQ(arguments, object) << text;
    ASSERT_EQ(stream.calls().size(), 1u);
    EXPECT_EQ(stream.calls()[0].arguments, object);
    EXPECT_EQ(content, text.starts_with("Let me see.") ? "Let me see." : "") << text;
    const ParsedAnswer whole = parse_both_ways(syntax, text);
    EXPECT_EQ(whole.content, content);
    ASSERT_EQ(whole.tool_calls.size(), 1u);
    EXPECT_EQ(whole.tool_calls[0].name, "get_weather");
    EXPECT_EQ(whole.tool_calls[0].arguments, object);
  }
}

TEST(ToolCalls, ValidCallAfterMalformedOne) {
  ParsedAnswer a = parse_both_ways(
      ToolSyntax::kHermes, "<tool_call>oops</tool_call> <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>");
  EXPECT_EQ(a.content, "<tool_call>oops</tool_call>");
  ASSERT_EQ(a.tool_calls.size(), 1u);
  EXPECT_EQ(a.tool_calls[0].name, "f");
}

// Before a call is made at most 128 KiB are held back (a call released whole counts in full); a call made streams
// arguments of any length.
TEST(ToolCalls, OnlyTextBeforeACallIsLimitedTo128KiB) {
  const std::string value = "\"" + std::string(130 << 10, 'a') + "\"";
  const std::string made = "<tool_call>{\"name\": \"f\", \"arguments\": {\"x\": " + value + "}}</tool_call>";
  const std::string whole = "<tool_call>{\"arguments\": {\"x\": " + value + "}, \"name\": \"f\"}</tool_call>";
  const std::string spaced = "<tool_call>" + std::string(130 << 10, ' ') + "{\"name\": \"f\", \"arguments\": {}}";
  for (const std::string& text : {whole, whole.substr(0, 100 << 10), spaced}) {  // too long, never closed, padded
    EXPECT_EQ(parse_tool_calls(ToolSyntax::kHermes, text).content, text);
    ToolCallStream stream(ToolSyntax::kHermes);
    std::string content;
    for (size_t at = 0; at < text.size(); at += 1000) content += stream.push(text.substr(at, 1000)).content;
    content += stream.finish().content;
    EXPECT_EQ(content, text);
    EXPECT_TRUE(stream.calls().empty());
  }
  ToolCallStream stream(ToolSyntax::kHermes);
  std::string arguments;
  for (size_t at = 0; at < made.size(); at += 1000)
    for (const ToolCallDelta& piece : stream.push(made.substr(at, 1000)).calls) arguments += piece.arguments;
  EXPECT_EQ(arguments, "{\"x\": " + value + "}");
  EXPECT_EQ(stream.finish().content, "");
  const std::string fits = "<tool_call>{\"arguments\": {\"x\": \"" + std::string(100 << 10, 'a') +
                           "\"}, \"name\": \"f\"}"
                           "</tool_call>";
  EXPECT_EQ(parse_tool_calls(ToolSyntax::kHermes, fits).tool_calls.size(), 1u);
}

TEST(ToolCalls, StreamHoldsOnlyWhatMayStartACall) {
  ToolCallStream s(ToolSyntax::kHermes);
  EXPECT_EQ(s.push("Hello <tool").content, "Hello");  // the space is held with the possible tag
  ToolCallStream::Delta d = s.push("box> ok");
  EXPECT_EQ(d.content, " <toolbox> ok");
  d = s.push(" <tool_call>{\"name\": \"f\", \"argu");
  EXPECT_EQ(d.content, "");
  EXPECT_TRUE(d.calls.empty());  // not made before its arguments begin
  d = s.push("ments\": {\"k\": ");
  ASSERT_EQ(d.calls.size(), 2u);
  EXPECT_EQ(d.calls[0].name, "f");
  EXPECT_EQ(d.calls[1].arguments, "{\"k\": ");
  d = s.push("\"v\"}}</tool_");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].arguments, "\"v\"}");
  EXPECT_TRUE(s.push("call>").calls.empty());
  EXPECT_EQ(s.finish().content, "");
  ASSERT_EQ(s.calls().size(), 1u);
  EXPECT_EQ(s.calls()[0].arguments, "{\"k\": \"v\"}");
}

TEST(ToolCalls, NamesAsOpenAIAllows) {
  EXPECT_TRUE(is_valid_tool_name("get_weather-2"));
  EXPECT_TRUE(is_valid_tool_name(std::string(64, 'a')));
  EXPECT_FALSE(is_valid_tool_name(std::string(65, 'a')));
  EXPECT_FALSE(is_valid_tool_name(""));
  EXPECT_FALSE(is_valid_tool_name("a.b"));
  EXPECT_FALSE(is_valid_tool_name("a b"));
}

using test_support::real_chat_template;

TEST(ToolCalls, SyntaxFromRealTemplates) {
  EXPECT_EQ(detect_tool_syntax(real_chat_template("deepseek-v3")), ToolSyntax::kDeepSeek);
  EXPECT_EQ(detect_tool_syntax(real_chat_template("qwen2")), ToolSyntax::kHermes);
  EXPECT_EQ(detect_tool_syntax(real_chat_template("llama3")), ToolSyntax::kGeneric);  // Llama 3.0: no tools
  EXPECT_EQ(detect_tool_syntax(""), ToolSyntax::kGeneric);
  EXPECT_EQ(detect_tool_syntax("<|start_header_id|>{% if tools %}{{ tools | tojson }}{% endif %}"),
            ToolSyntax::kLlama3);
  EXPECT_FALSE(template_uses_tools(real_chat_template("deepseek-v3")));
  EXPECT_TRUE(template_renders_tool_calls(real_chat_template("deepseek-v3")));
  EXPECT_TRUE(template_uses_tools(real_chat_template("qwen2")));
  EXPECT_FALSE(template_uses_tools(real_chat_template("llama3")));
  EXPECT_FALSE(template_renders_tool_calls(real_chat_template("llama3")));
}

}  // namespace
}  // namespace cai::server
