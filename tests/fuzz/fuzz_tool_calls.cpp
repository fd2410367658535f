// libFuzzer target: any bytes as a model's answer, split into content and tool calls by each syntax, whole and
// streamed in pieces cut where the input says; both must agree, and every call must carry a valid name and
// arguments that begin a JSON object (a call made streams its object as written, which the answer may cut off).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/tools/tool_calls.h"

namespace {

using namespace cai::server;

void check(ToolSyntax syntax, std::string_view text, uint8_t step) {
  const ParsedAnswer whole = parse_tool_calls(syntax, text);
  for (const ToolCall& c : whole.tool_calls)
    if (!is_valid_tool_name(c.name) || !c.arguments.starts_with('{') || !c.id.starts_with("call_")) __builtin_trap();
  ToolCallStream stream(syntax);
  std::string content;
  std::vector<ToolCall> calls;
  auto take = [&](const ToolCallStream::Delta& d) {
    content += d.content;
    for (const ToolCallDelta& piece : d.calls) {
      if (!piece.id.empty())
        calls.push_back({piece.id, piece.name, ""});
      else if (piece.index < 0 || static_cast<size_t>(piece.index) >= calls.size())
        __builtin_trap();
      calls[static_cast<size_t>(piece.index)].arguments += piece.arguments;
    }
  };
  const size_t n = step % 16 + 1;
  for (size_t at = 0; at < text.size(); at += n) take(stream.push(text.substr(at, n)));
  take(stream.finish());
  if (content != whole.content || calls.size() != whole.tool_calls.size()) __builtin_trap();
  for (size_t i = 0; i < calls.size(); ++i)
    if (calls[i].name != whole.tool_calls[i].name || calls[i].arguments != whole.tool_calls[i].arguments)
      __builtin_trap();
  if (whole.tool_calls.empty() && whole.content != text) __builtin_trap();  // no call: the answer is untouched
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 4096) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const uint8_t step = size == 0 ? 0 : data[size / 2];
  for (ToolSyntax s : {ToolSyntax::kDeepSeek, ToolSyntax::kHermes, ToolSyntax::kLlama3, ToolSyntax::kGeneric})
    check(s, text, step);
  return 0;
}
