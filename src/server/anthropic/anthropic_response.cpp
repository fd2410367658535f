// Anthropic Messages API output: content blocks from the engine's text, the message object and the event stream.
#include "server/anthropic/anthropic_response.h"

#include <fmt/format.h>

#include "server/openai/response_writer.h"

namespace cai::server {

using nlohmann::json;

json anthropic_usage_json(const Usage& u) {
  return {{"input_tokens", u.prompt_tokens - u.cached_tokens},
          {"output_tokens", u.completion_tokens},
          {"cache_creation_input_tokens", 0},
          {"cache_read_input_tokens", u.cached_tokens}};
}

std::string thinking_signature(const std::string& thinking) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : thinking) h = (h ^ c) * 0x100000001b3ull;
  return fmt::format("{:016x}", h);
}

namespace {

// Anthropic's stop_reason for a choice that ended with `finish` (stop or length).
const char* stop_reason(FinishReason finish, bool used_tool, const std::string& stop_sequence) {
  if (finish == FinishReason::kLength) return "max_tokens";
  if (used_tool) return "tool_use";
  return stop_sequence.empty() ? "end_turn" : "stop_sequence";
}

json nullable(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

}  // namespace

AnthropicWriter::AnthropicWriter(ResponseMeta meta, bool opens_think, std::optional<ToolSyntax> tool_syntax)
    : meta_(std::move(meta)), parser_(opens_think) {
  if (tool_syntax) tools_ = std::make_unique<ToolCallStream>(*tool_syntax);
}

void AnthropicWriter::open(std::vector<BlockEvent>& out, Block kind, json block) {
  close(out);
  open_ = kind;
  out.push_back({"content_block_start",
                 {{"type", "content_block_start"}, {"index", n_blocks_++}, {"content_block", std::move(block)}}});
}

void AnthropicWriter::delta(std::vector<BlockEvent>& out, Block kind, json delta) {
  if (open_ != kind) {
    if (kind == Block::kThinking)
      open(out, kind, {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
    else
      open(out, kind, {{"type", "text"}, {"text", ""}});
  }
  out.push_back({"content_block_delta",
                 {{"type", "content_block_delta"}, {"index", n_blocks_ - 1}, {"delta", std::move(delta)}}});
}

void AnthropicWriter::close(std::vector<BlockEvent>& out) {
  if (open_ == Block::kNone) return;
  if (open_ == Block::kThinking) {
    out.push_back({"content_block_delta",
                   {{"type", "content_block_delta"},
                    {"index", n_blocks_ - 1},
                    {"delta", {{"type", "signature_delta"}, {"signature", thinking_signature(thinking_)}}}}});
    thinking_.clear();
  }
  out.push_back({"content_block_stop", {{"type", "content_block_stop"}, {"index", n_blocks_ - 1}}});
  open_ = Block::kNone;
}

void AnthropicWriter::add_content(std::vector<BlockEvent>& out, const ToolCallStream::Delta& d) {
  if (!d.content.empty()) delta(out, Block::kText, {{"type", "text_delta"}, {"text", d.content}});
  for (const ToolCallDelta& call : d.calls) {
    if (open_ != Block::kToolUse || call.index != tool_index_) {
      open(out, Block::kToolUse,
           {{"type", "tool_use"}, {"id", new_response_id("toolu_")}, {"name", call.name}, {"input", json::object()}});
      tool_index_ = call.index;
      used_tool_ = true;
    }
    if (!call.arguments.empty())
      delta(out, Block::kToolUse, {{"type", "input_json_delta"}, {"partial_json", call.arguments}});
  }
}

std::vector<AnthropicWriter::BlockEvent> AnthropicWriter::advance(const StreamEvent& ev) {
  std::vector<BlockEvent> out;
  const bool last = ev.finish != FinishReason::kNone;
  const ReasoningDelta d = parser_.push(ev.text, last);
  if (!d.reasoning.empty()) {
    thinking_ += d.reasoning;
    delta(out, Block::kThinking, {{"type", "thinking_delta"}, {"thinking", d.reasoning}});
  }
  for (const ToolCallStream::Delta& answer : answer_deltas(tools_.get(), d.content, last)) add_content(out, answer);
  if (last) close(out);
  return out;
}

void AnthropicWriter::end(const StreamEvent& ev) {
  finish_ = ev.finish;
  stop_sequence_ = ev.finish == FinishReason::kStop ? ev.stop_sequence : std::string();
  error_ = ev.error;
  error_code_ = ev.error_code;
}

json AnthropicWriter::message_json(json content, const Usage& usage) const {
  const bool ended = finish_ == FinishReason::kStop || finish_ == FinishReason::kLength;
  return {{"id", meta_.id},
          {"type", "message"},
          {"role", "assistant"},
          {"model", meta_.model},
          {"content", std::move(content)},
          {"stop_reason", ended ? json(stop_reason(finish_, used_tool_, stop_sequence_)) : json(nullptr)},
          {"stop_sequence", nullable(stop_sequence_)},
          {"usage", anthropic_usage_json(usage)}};
}

std::string AnthropicWriter::stream(const StreamEvent& ev, const Usage& usage) {
  if (done_ || ev.index != 0) return {};
  std::string out = start(usage);
  for (const BlockEvent& be : advance(ev)) out += sse_event(be.name, be.body);
  if (ev.finish == FinishReason::kNone) return out;
  end(ev);
  done_ = true;
  ApiError error;
  if (failed(&error)) return out + sse_event("error", error_body(error, ErrorShape::kAnthropic));
  json delta = {{"stop_reason", stop_reason(finish_, used_tool_, stop_sequence_)},
                {"stop_sequence", nullable(stop_sequence_)}};
  out += sse_event("message_delta",
                   {{"type", "message_delta"}, {"delta", std::move(delta)}, {"usage", anthropic_usage_json(usage)}});
  return out + sse_event("message_stop", {{"type", "message_stop"}});
}

void AnthropicWriter::apply(const BlockEvent& be) {
  const json& body = be.body;
  if (body["type"] == "content_block_start") {
    content_.push_back(body["content_block"]);
    partial_json_.emplace_back();
    return;
  }
  const size_t i = body["index"].get<size_t>();
  json& block = content_[i];
  if (body["type"] == "content_block_stop") {
    if (block["type"] != "tool_use") return;
    json input = json::parse(partial_json_[i], nullptr, /*allow_exceptions=*/false);
    block["input"] = input.is_object() ? std::move(input) : json::object();
    return;
  }
  const json& d = body["delta"];
  const std::string& type = d["type"].get_ref<const std::string&>();
  if (type == "text_delta")
    block["text"] = block["text"].get<std::string>() + d["text"].get<std::string>();
  else if (type == "thinking_delta")
    block["thinking"] = block["thinking"].get<std::string>() + d["thinking"].get<std::string>();
  else if (type == "signature_delta")
    block["signature"] = d["signature"];
  else if (type == "input_json_delta")
    partial_json_[i] += d["partial_json"].get<std::string>();
}

void AnthropicWriter::collect(const StreamEvent& ev) {
  if (ev.index != 0 || finish_ != FinishReason::kNone) return;
  for (const BlockEvent& be : advance(ev)) apply(be);
  if (ev.finish != FinishReason::kNone) end(ev);
}

bool AnthropicWriter::failed(ApiError* error) const {
  if (finish_ != FinishReason::kError && finish_ != FinishReason::kCancelled) return false;
  *error = engine_end_error(finish_, error_, error_code_);
  return true;
}

json AnthropicWriter::result(const Usage& usage) { return message_json(content_, usage); }

std::string AnthropicWriter::start(const Usage& usage) {
  if (started_) return {};
  started_ = true;
  return sse_event("message_start", {{"type", "message_start"}, {"message", message_json(json::array(), usage)}}) +
         sse_event("ping", {{"type", "ping"}});
}

std::string AnthropicWriter::keep_alive(const Usage& usage) {
  std::string out = start(usage);
  return out.empty() ? sse_event("ping", {{"type", "ping"}}) : out;
}

}  // namespace cai::server
