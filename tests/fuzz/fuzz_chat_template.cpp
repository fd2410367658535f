// libFuzzer target: any bytes as a chat template, parsed and rendered with a small fixed context and tight limits.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tokenizer/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 8192) return 0;
  static const nlohmann::ordered_json context = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "S"},
      {"role": "user", "content": "Hi é"},
      {"role": "assistant", "content": "<think>r</think>A", "tool_calls": [
        {"type": "function", "function": {"name": "f", "arguments": {"x": [1, 2.5, null, true]}}}]},
      {"role": "tool", "content": null}],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})");
  cai::ChatRenderOptions options;
  options.now = std::tm{};
  options.max_output_bytes = 1 << 16;
  options.max_steps = 20000;
  auto tpl = cai::ChatTemplate::parse(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!tpl.ok()) return 0;
  auto out = tpl->render_ordered(context, options);
  (void)out;
  return 0;
}
