// Chat templates of the supported model families rendered against outputs derived by hand from each template.
#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_paths.h"

namespace cai::test {
namespace {

using nlohmann::ordered_json;

const char* const kDsBos = "<｜begin▁of▁sentence｜>";

ChatTemplate load_official(const std::string& family) {
  auto config = nlohmann::json::parse(read_file(data_path("tokenizer/" + family + "/tokenizer_config.json")));
  Result<ChatTemplate> tpl = ChatTemplate::parse(config.at("chat_template").get<std::string>());
  EXPECT_TRUE(tpl.ok()) << tpl.status().to_string();
  return std::move(tpl).value();
}

std::string render(const ChatTemplate& tpl, const ordered_json& context) {
  Result<std::string> out = tpl.render_ordered(context);
  EXPECT_TRUE(out.ok()) << out.status().to_string();
  return out.ok() ? *out : std::string();
}

ordered_json four_turns() {
  return ordered_json::parse(R"([
    {"role": "system", "content": "S"}, {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Again"}])");
}

ordered_json context(const ordered_json& messages, bool add_generation_prompt, const std::string& bos) {
  return ordered_json{{"messages", messages},
                      {"add_generation_prompt", add_generation_prompt},
                      {"bos_token", bos},
                      {"eos_token", "<EOS>"}};
}

// The DeepSeek-R1 template as shipped in DeepSeek-R1-Distill-*/tokenizer_config.json (the string after JSON decoding).
const char* const kR1Template =
    R"({% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}{% set ns = namespace(is_first=false, is_tool=false, is_output_first=true, system_prompt='') %}{%- for message in messages %}{%- if message['role'] == 'system' %}{% set ns.system_prompt = message['content'] %}{%- endif %}{%- endfor %}{{bos_token}}{{ns.system_prompt}}{%- for message in messages %}{%- if message['role'] == 'user' %}{%- set ns.is_tool = false -%}{{'<｜User｜>' + message['content']}}{%- endif %}{%- if message['role'] == 'assistant' and message['content'] is none %}{%- set ns.is_tool = false -%}{%- for tool in message['tool_calls']%}{%- if not ns.is_first %}{{'<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\n' + '```json' + '\n' + tool['function']['arguments'] + '\n' + '```' + '<｜tool▁call▁end｜>'}}{%- set ns.is_first = true -%}{%- else %}{{'\n' + '<｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\n' + '```json' + '\n' + tool['function']['arguments'] + '\n' + '```' + '<｜tool▁call▁end｜>'}}{{'<｜tool▁calls▁end｜><｜end▁of▁sentence｜>'}}{%- endif %}{%- endfor %}{%- endif %}{%- if message['role'] == 'assistant' and message['content'] is not none %}{%- if ns.is_tool %}{{'<｜tool▁outputs▁end｜>' + message['content'] + '<｜end▁of▁sentence｜>'}}{%- set ns.is_tool = false -%}{%- else %}{% set content = message['content'] %}{% if '</think>' in content %}{% set content = content.split('</think>')[-1] %}{% endif %}{{'<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>'}}{%- endif %}{%- endif %}{%- if message['role'] == 'tool' %}{%- set ns.is_tool = true -%}{%- if ns.is_output_first %}{{'<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>' + message['content'] + '<｜tool▁output▁end｜>'}}{%- set ns.is_output_first = false %}{%- else %}{{'\n<｜tool▁output▁begin｜>' + message['content'] + '<｜tool▁output▁end｜>'}}{%- endif %}{%- endif %}{%- endfor -%}{% if ns.is_tool %}{{'<｜tool▁outputs▁end｜>'}}{% endif %}{% if add_generation_prompt and not ns.is_tool %}{{'<｜Assistant｜><think>\n'}}{% endif %})";

TEST(ChatTemplateDeepSeekV3, SystemAndUserWithGenerationPrompt) {
  ChatTemplate tpl = load_official("deepseek-v3");
  auto messages = ordered_json::parse(R"([{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}])");
  // V3 opens the assistant turn without <think>.
  EXPECT_EQ(render(tpl, context(messages, true, kDsBos)), "<｜begin▁of▁sentence｜>S<｜User｜>Hi<｜Assistant｜>");
}

TEST(ChatTemplateDeepSeekV3, FourTurnsWithAndWithoutGenerationPrompt) {
  ChatTemplate tpl = load_official("deepseek-v3");
  const std::string turns =
      "<｜begin▁of▁sentence｜>S<｜User｜>Hi<｜Assistant｜>Hello<｜end▁of▁sentence｜><｜User｜>Again";
  EXPECT_EQ(render(tpl, context(four_turns(), true, kDsBos)), turns + "<｜Assistant｜>");
  EXPECT_EQ(render(tpl, context(four_turns(), false, kDsBos)), turns);
}

TEST(ChatTemplateDeepSeekV3, SystemPromptsJoinWithBlankLine) {
  ChatTemplate tpl = load_official("deepseek-v3");
  auto messages = ordered_json::parse(
      R"([{"role": "system", "content": "A"}, {"role": "user", "content": "x"}, {"role": "system", "content": "B"}])");
  EXPECT_EQ(render(tpl, context(messages, false, kDsBos)), "<｜begin▁of▁sentence｜>A\n\nB<｜User｜>x");
}

TEST(ChatTemplateDeepSeekV3, ToolCallAndToolOutput) {
  ChatTemplate tpl = load_official("deepseek-v3");
  auto messages = ordered_json::parse(R"([
    {"role": "user", "content": "weather?"},
    {"role": "assistant", "content": null, "tool_calls": [
      {"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "content": "sunny"},
    {"role": "assistant", "content": "It is sunny."}])");
  EXPECT_EQ(render(tpl, context(messages, true, kDsBos)),
            "<｜begin▁of▁sentence｜><｜User｜>weather?"
            "<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
            "```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜>"
            "<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>sunny<｜tool▁output▁end｜>"
            "<｜tool▁outputs▁end｜>It is sunny.<｜end▁of▁sentence｜><｜Assistant｜>");
}

TEST(ChatTemplateDeepSeekR1, StripsEarlierReasoningAndOpensThink) {
  Result<ChatTemplate> tpl = ChatTemplate::parse(kR1Template);
  ASSERT_TRUE(tpl.ok()) << tpl.status().to_string();
  auto messages = ordered_json::parse(R"([
    {"role": "user", "content": "Q1"},
    {"role": "assistant", "content": "<think>\nreason\n</think>\n\nA1"},
    {"role": "user", "content": "Q2"}])");
  EXPECT_EQ(render(*tpl, context(messages, true, kDsBos)),
            "<｜begin▁of▁sentence｜><｜User｜>Q1<｜Assistant｜>\n\nA1<｜end▁of▁sentence｜><｜User｜>Q2<｜Assistant｜><"
            "think>\n");
  EXPECT_EQ(render(*tpl, context(messages, false, kDsBos)),
            "<｜begin▁of▁sentence｜><｜User｜>Q1<｜Assistant｜>\n\nA1<｜end▁of▁sentence｜><｜User｜>Q2");
}

TEST(ChatTemplateDeepSeekR1, ContextWithoutGenerationPromptKeyDefaultsToFalse) {
  Result<ChatTemplate> tpl = ChatTemplate::parse(kR1Template);
  ASSERT_TRUE(tpl.ok());
  auto ctx =
      ordered_json{{"messages", ordered_json::parse(R"([{"role": "user", "content": "Q"}])")}, {"bos_token", kDsBos}};
  EXPECT_EQ(render(*tpl, ctx), "<｜begin▁of▁sentence｜><｜User｜>Q");
}

TEST(ChatTemplateQwen, FourTurnsWithGenerationPrompt) {
  ChatTemplate tpl = load_official("qwen2");
  EXPECT_EQ(render(tpl, context(four_turns(), true, "")),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello<|im_end|>\n<|im_start|>user\nAgain<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateQwen, LastAssistantTurnKeepsReasoningBlock) {
  ChatTemplate tpl = load_official("qwen2");
  auto messages = ordered_json::parse(R"([
    {"role": "user", "content": "Q1"},
    {"role": "assistant", "content": "<think>\nreason\n</think>\n\nA1"}])");
  EXPECT_EQ(render(tpl, context(messages, false, "")),
            "<|im_start|>user\nQ1<|im_end|>\n<|im_start|>assistant\n<think>\nreason\n</think>\n\nA1<|im_end|>\n");
  // enable_thinking=false closes an empty think block after the generation prompt.
  auto ctx = context(ordered_json::parse(R"([{"role": "user", "content": "Q"}])"), true, "");
  ctx["enable_thinking"] = false;
  EXPECT_EQ(render(tpl, ctx), "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ChatTemplateQwen, ToolsAndToolCallsKeepRequestKeyOrder) {
  ChatTemplate tpl = load_official("qwen2");
  auto ctx = context(ordered_json::parse(R"([
    {"role": "user", "content": "weather?"},
    {"role": "assistant", "content": "", "tool_calls": [
      {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "content": "sunny"}])"),
                     true, "");
  ctx["tools"] = ordered_json::parse(R"([{"type": "function", "function": {"name": "get_weather",
    "description": "Get weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
    "required": ["city"]}}}])");
  EXPECT_EQ(render(tpl, ctx),
            "<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
            "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
            "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Get weather\", "
            "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, "
            "\"required\": [\"city\"]}}}\n</tools>\n\n"
            "For each function call, return a json object with function name and arguments within "
            "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
            "<args-json-object>}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\nweather?<|im_end|>\n"
            "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
            "</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\nsunny\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplateLlama3, TrimsContentAndAlwaysOpensAssistant) {
  ChatTemplate tpl = load_official("llama3");
  auto messages = ordered_json::parse(R"([
    {"role": "system", "content": "S"}, {"role": "user", "content": "  Hi \n"},
    {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Again"}])");
  const std::string expected =
      "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|>"
      "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
      "<|start_header_id|>assistant<|end_header_id|>\n\nHello<|eot_id|>"
      "<|start_header_id|>user<|end_header_id|>\n\nAgain<|eot_id|>"
      "<|start_header_id|>assistant<|end_header_id|>\n\n";
  // This template ignores add_generation_prompt.
  EXPECT_EQ(render(tpl, context(messages, true, "<|begin_of_text|>")), expected);
  EXPECT_EQ(render(tpl, context(messages, false, "<|begin_of_text|>")), expected);
}

TEST(ChatTemplateGguf, ChatMl) {
  Result<ChatTemplate> tpl = ChatTemplate::parse(
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
      "'\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}");
  ASSERT_TRUE(tpl.ok()) << tpl.status().to_string();
  auto messages = ordered_json::parse(R"([{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}])");
  EXPECT_EQ(render(*tpl, context(messages, true, "")),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateApi, SortedJsonContextAndCopiesShareTheTemplate) {
  Result<ChatTemplate> tpl = ChatTemplate::parse("{{ d | tojson }}{{ bos_token }}");
  ASSERT_TRUE(tpl.ok());
  ChatTemplate copy = *tpl;
  nlohmann::json ctx = {{"d", {{"b", 1}, {"a", 2}}}, {"bos_token", "<s>"}};
  Result<std::string> out = copy.render(ctx);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out, "{\"a\": 2, \"b\": 1}<s>");  // nlohmann::json keeps keys sorted
  EXPECT_FALSE(copy.render(nlohmann::json::array()).ok());
}

}  // namespace
}  // namespace cai::test
