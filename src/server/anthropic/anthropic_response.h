// Anthropic Messages API output: one request's engine events → content blocks (thinking, text, tool_use), streamed as
// Anthropic's named SSE events or collected into one message object.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/event_writer.h"
#include "server/tools/tool_calls.h"
#include "tokenizer/reasoning_parser.h"

namespace cai::server {

// Anthropic's usage object: input_tokens (the prompt less what the prefix cache served), output_tokens,
// cache_read_input_tokens (prefix-cache hits), cache_creation_input_tokens (0: nothing is written on request).
nlohmann::json anthropic_usage_json(const Usage& u);
// The signature of a thinking block: a hex digest (FNV-1a, 64 bits) of its text. CAI does not check the signatures
// clients send back; the field is there because Anthropic clients expect one.
std::string thinking_signature(const std::string& thinking);

class AnthropicWriter : public EventWriter {
 public:
  // `opens_think`: the prompt left <think> open. `tool_syntax`: how the model writes tool calls when the request
  // offers tools (nullopt: the whole answer is text).
  AnthropicWriter(ResponseMeta meta, bool opens_think, std::optional<ToolSyntax> tool_syntax);

  // message_start and a ping first (before the first event's blocks, or as the first keep-alive while the prompt is
  // computed); message_delta and message_stop after the last; an engine error or cancellation ends the stream with an
  // error event.
  std::string stream(const StreamEvent& ev, const Usage& usage) override;
  bool done() const override { return done_; }
  void collect(const StreamEvent& ev) override;
  bool failed(ApiError* error) const override;
  nlohmann::json result(const Usage& usage) override;
  std::string keep_alive(const Usage& usage) override;
  ErrorShape error_shape() const override { return ErrorShape::kAnthropic; }

 private:
  // One step of a content block's life: content_block_start / content_block_delta / content_block_stop with its body.
  struct BlockEvent {
    const char* name;
    nlohmann::json body;
  };
  enum class Block { kNone, kThinking, kText, kToolUse };

  // Feeds one event's text through the <think> splitter and the tool-call parser; the block events it makes.
  std::vector<BlockEvent> advance(const StreamEvent& ev);
  void open(std::vector<BlockEvent>& out, Block kind, nlohmann::json block);
  void delta(std::vector<BlockEvent>& out, Block kind, nlohmann::json delta);
  void close(std::vector<BlockEvent>& out);
  void add_content(std::vector<BlockEvent>& out, const ToolCallStream::Delta& d);
  // Applies a block event to the collected message (non-streaming).
  void apply(const BlockEvent& be);
  // Records the final event; the stop reason (null after an error).
  void end(const StreamEvent& ev);
  nlohmann::json message_json(nlohmann::json content, const Usage& usage) const;
  // message_start and a ping, once; "" after that.
  std::string start(const Usage& usage);

  ResponseMeta meta_;
  ReasoningParser parser_;
  std::unique_ptr<ToolCallStream> tools_;
  Block open_ = Block::kNone;
  int n_blocks_ = 0;     // blocks started so far (the open one's index is n_blocks_ - 1)
  int tool_index_ = -1;  // the ToolCallStream index of the open tool_use block
  bool used_tool_ = false;
  std::string thinking_;  // the open thinking block's text (for its signature)
  bool started_ = false;  // streaming: message_start was written
  bool done_ = false;
  FinishReason finish_ = FinishReason::kNone;
  std::string stop_sequence_;
  std::string error_;
  StatusCode error_code_ = StatusCode::kOk;
  nlohmann::json content_ = nlohmann::json::array();  // non-streaming: the blocks collected
  std::vector<std::string> partial_json_;             // non-streaming: tool_use input text per block
};

}  // namespace cai::server
