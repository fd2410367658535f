// Tool calls: which syntax a model writes its calls in (from its chat template), and the model's answer text parsed
// back into content plus calls, whole or as a stream of deltas whose arguments arrive as the model writes them. Text
// that is not a call stays content.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/tools/json_object_scanner.h"

namespace cai::server {

// One call the model made. `arguments` is the text of a JSON object (OpenAI's function.arguments), as the model wrote
// it (see ToolCallStream for when it may be cut off).
struct ToolCall {
  std::string id;  // "call_" + random characters, unique within the response
  std::string name;
  std::string arguments;
};

// An answer (the text after any reasoning) split into what the user reads and the calls.
struct ParsedAnswer {
  std::string content;
  std::vector<ToolCall> tool_calls;
};

// A piece of one call, as OpenAI streams it: the first delta of a call carries id and name, later ones only more
// argument text.
struct ToolCallDelta {
  int index = 0;  // which call of this answer (0, 1, ...)
  std::string id;
  std::string name;
  std::string arguments;
};

// How a model family writes tool calls.
enum class ToolSyntax {
  kDeepSeek,  // DeepSeek-V3/R1: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n...```
  kHermes,    // Qwen2.5: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>
  kLlama3,    // Llama 3.x: {"name": ..., "parameters": {...}}
  kGeneric,   // any other template: the server describes the tools itself and the model answers with JSON
};

// The syntax the model whose chat template is `chat_template` (may be empty) writes.
ToolSyntax detect_tool_syntax(std::string_view chat_template);
// Whether the template reads the `tools` variable (else the server describes the tools in a system message), and
// whether it renders assistant `tool_calls` itself (else the server writes them into the message content).
bool template_uses_tools(std::string_view chat_template);
bool template_renders_tool_calls(std::string_view chat_template);

// A tool (function) name as OpenAI allows it: [a-zA-Z0-9_-]{1,64}.
bool is_valid_tool_name(std::string_view name);
// "call_" + 24 random letters and digits.
std::string new_tool_call_id();

// The whole answer at once: the stream below fed in one piece, so both always give the same calls and content.
ParsedAnswer parse_tool_calls(ToolSyntax syntax, std::string_view answer);

// The same, fed as the engine streams text. Content that may still turn out to be the start of a call is held back
// until it is decided. A call is made as soon as the text up to its arguments object is matched and its name is
// valid: its first delta carries id and name, then the object's text streams in argument deltas as it arrives
// (never ending inside a UTF-8 sequence while more may follow), and the syntax's closing text after the object is
// consumed. A call once made is not taken back:
// - an answer that ends inside the arguments leaves the call with its arguments cut off there (not valid JSON), and
//   one that ends inside the closing text drops that text;
// - text after the object that is not the closing text expected is content again (a call may start in it), the
//   white space and closing pieces matched before it dropped;
// - the arguments are checked for strings and nesting only, so a malformed object is the call's arguments as written.
// Before a call is made its text is held back (at most kMaxCallBytes in tool_calls.cpp); text that turns out not to
// be a call, or that finish() cuts off, is content. A call written in another form (the name after the arguments, or
// the arguments as a JSON string) is released whole once complete and valid, its arguments re-serialised.
class ToolCallStream {
 public:
  explicit ToolCallStream(ToolSyntax syntax);

  struct Delta {
    std::string content;
    std::vector<ToolCallDelta> calls;
  };
  Delta push(std::string_view text);
  Delta finish();
  // Every call made so far, with its arguments as far as they came (for a final message or a non-streaming answer).
  const std::vector<ToolCall>& calls() const;

 private:
  enum class State {
    kText,       // content, or a call not made yet
    kArguments,  // in the arguments object of the last call
    kClosing,    // after that object, in the syntax's closing text
  };

  // Where in pending_ a call (or a marker cut off by the end of the text so far) may start; npos when nowhere.
  size_t call_start() const;
  // Adds text known to be content; trailing white space is held until more content follows (dropped when the answer
  // has calls, so the space around calls does not become content).
  void emit_content(Delta& out, std::string_view text);
  // One step in each state: false when it waits for more text (or, at the end, has nothing left to do).
  bool scan_text(Delta& out, bool at_end);
  bool stream_arguments(Delta& out, bool at_end);
  bool close_call(bool at_end);
  Delta drain(bool at_end);

  ToolSyntax syntax_;
  State state_ = State::kText;
  std::string pending_;          // text not decided yet
  std::string held_space_;       // white space after the last content
  bool json_allowed_ = true;     // Llama 3 / generic: a call may start here (answer start, or right after a call)
  JsonObjectScanner arguments_;  // kArguments: the last call's arguments object
  size_t scanned_ = 0;  // kArguments: bytes at the front of pending_ in the object but held (a UTF-8 sequence begun)
  std::span<const std::string_view> closer_;  // kClosing: literals still to come, each after optional white space
  std::vector<ToolCall> calls_;
};

// The answer text `content` through `tools` (all of it content when null: no tools offered) and, once the answer ends
// (`last`), what `tools` still held: the deltas in the order they happen.
std::vector<ToolCallStream::Delta> answer_deltas(ToolCallStream* tools, std::string_view content, bool last);

}  // namespace cai::server
