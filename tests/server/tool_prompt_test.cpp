// Tool calling in prompts: the real Qwen2.5/3, DeepSeek-V3 and Llama 3.0 templates (and none) rendering offered tools
// and tool-call history, checked against the text each template writes (worked out by hand from its source).
#include <gtest/gtest.h>

#include "fake_engine.h"
#include "server/prompt_builder.h"
#include "real_chat_template.h"
#include "test_paths.h"

namespace cai::server {
namespace {

using nlohmann::ordered_json;

using test_support::real_chat_template;

const char* kTool =
    R"({"type": "function", "function": {"name": "get_weather", "description": "Get the weather", "parameters": )"
    R"({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})";

// A request's history after one call: the assistant's call (content null, as OpenAI clients send it) and its result.
ordered_json history() {
  return ordered_json::parse(R"([
    {"role": "system", "content": "S"},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": null, "tool_calls": [
      {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "18C"}])");
}

ToolOffer offer(ToolChoice choice = ToolChoice::kAuto) {
  ToolOffer o;
  o.tools.push_back(ordered_json::parse(kTool));
  o.choice = choice;
  return o;
}

class ToolPrompt : public ::testing::Test {
 protected:
  PromptBuilder builder(const std::string& source) {
    auto b = PromptBuilder::create(*engine_.model().tokenizer, source);
    EXPECT_TRUE(b.ok()) << b.status().message();
    return std::move(b).value();
  }
  const Tokenizer& tok() { return *engine_.model().tokenizer; }
  test::FakeEngine engine_;
};

TEST_F(ToolPrompt, QwenTemplateGetsToolsAndRendersHistory) {
  PromptBuilder qwen = builder(real_chat_template("qwen2"));
  EXPECT_EQ(qwen.tool_style().syntax, ToolSyntax::kHermes);
  Result<std::string> text = qwen.chat_text(history(), offer());
  ASSERT_TRUE(text.ok()) << text.status().message();
  // The template's "# Tools" system block with the tool as transformers' tojson writes it (", " and ": "), then the
  // call as <tool_call> with the arguments string verbatim, the result as a <tool_response> in a user turn.
  const std::string expected =
      "<|im_start|>system\nS\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
      "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
      std::string(kTool) +
      "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
      "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
      "</tool_call><|im_end|>\n"
      "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
      "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
      "</tool_call><|im_end|>\n"
      "<|im_start|>user\n<tool_response>\n18C\n</tool_response><|im_end|>\n"
      "<|im_start|>assistant\n";
  EXPECT_EQ(*text, expected);
  // tool_choice "none" offers nothing: the plain system turn, the history still rendered.
  Result<std::string> none = qwen.chat_text(history(), ToolOffer{});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->starts_with("<|im_start|>system\nS<|im_end|>\n<|im_start|>user\n")) << *none;
  EXPECT_EQ(none->find("# Tools"), std::string::npos);
  EXPECT_NE(none->find("<tool_response>\n18C\n</tool_response>"), std::string::npos);
}

TEST_F(ToolPrompt, DeepSeekTemplateRendersHistoryServerDescribesTools) {
  PromptBuilder ds = builder(real_chat_template("deepseek-v3"));
  EXPECT_EQ(ds.tool_style().syntax, ToolSyntax::kDeepSeek);
  Result<std::string> text = ds.chat_text(history(), offer(ToolChoice::kRequired));
  ASSERT_TRUE(text.ok()) << text.status().message();
  // The template ignores `tools`: the system prompt (which it puts first) carries the server's description, with
  // DeepSeek's own call syntax as the reply format.
  const std::string head = tok().bos_text() + "S\n\nYou can call these functions:\n";
  EXPECT_TRUE(text->starts_with(head)) << *text;
  EXPECT_NE(text->find(R"("name":"get_weather")"), std::string::npos);
  EXPECT_NE(text->find("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜><function-name>\n```json\n"),
            std::string::npos);
  EXPECT_NE(text->find("You must call at least one function"), std::string::npos);
  // A tool-call message (content none) becomes the call block; the tool result closes the outputs and, as the
  // template does after tool outputs, no further <｜Assistant｜> is added.
  const std::string tail =
      "<｜User｜>Weather in Paris?<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>"
      "get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁outputs▁begin｜>"
      "<｜tool▁output▁begin｜>18C<｜tool▁output▁end｜><｜tool▁outputs▁end｜>";
  EXPECT_TRUE(text->ends_with(tail)) << *text;
}

TEST_F(ToolPrompt, TemplateWithoutToolsGetsGenericDescriptionAndTextHistory) {
  PromptBuilder llama = builder(real_chat_template("llama3"));
  EXPECT_EQ(llama.tool_style().syntax, ToolSyntax::kGeneric);
  ToolOffer o = offer(ToolChoice::kFunction);
  o.function = "get_weather";
  Result<std::string> text = llama.chat_text(history(), o);
  ASSERT_TRUE(text.ok()) << text.status().message();
  const std::string after_system =
      "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWeather in Paris?<|eot_id|>"
      "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}"
      "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nResult of the function call call_1:\n18C<|eot_id|>"
      "<|start_header_id|>assistant<|end_header_id|>\n\n";
  EXPECT_TRUE(text->ends_with(after_system)) << *text;
  EXPECT_TRUE(text->starts_with(tok().bos_text() + "<|start_header_id|>system<|end_header_id|>\n\nS\n\nYou can call "
                                                   "these functions:\n"));
  EXPECT_NE(text->find("{\"name\": <function-name>, \"arguments\": <arguments-json-object>}"), std::string::npos);
  EXPECT_NE(text->find("You must call the function get_weather now."), std::string::npos);
}

TEST_F(ToolPrompt, NoTemplateFallbackDescribesToolsInText) {
  PromptBuilder plain = builder("");
  ordered_json msgs = ordered_json::parse(R"([{"role": "user", "content": "Weather?"}])");
  Result<std::string> text = plain.chat_text(msgs, offer());
  ASSERT_TRUE(text.ok());
  EXPECT_TRUE(text->starts_with("You can call these functions:\n")) << *text;
  EXPECT_TRUE(text->ends_with("\n\nWeather?")) << *text;
  Result<std::string> with_history = plain.chat_text(history(), ToolOffer{});
  ASSERT_TRUE(with_history.ok());
  EXPECT_EQ(*with_history,
            "S\n\nWeather in Paris?\n\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}\n\n"
            "Result of the function call call_1:\n18C");
}

}  // namespace
}  // namespace cai::server
