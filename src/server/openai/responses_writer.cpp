// OpenAI Responses API output: output items from the engine's text, the response object and the typed event stream.
#include "server/openai/responses_writer.h"

#include "server/http/sse.h"
#include "server/openai/response_writer.h"

namespace cai::server {

using nlohmann::json;

json responses_usage_json(const Usage& u, int reasoning_tokens) {
  return {{"input_tokens", u.prompt_tokens},
          {"input_tokens_details", {{"cached_tokens", u.cached_tokens}}},
          {"output_tokens", u.completion_tokens},
          {"output_tokens_details", {{"reasoning_tokens", reasoning_tokens}}},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

namespace {

// A custom tool's input from the arguments the model wrote ({"input": "..."}); the raw text when they are not that.
std::string custom_input(const std::string& arguments) {
  const json args = json::parse(arguments, nullptr, /*allow_exceptions=*/false);
  if (args.is_object() && args.contains("input") && args["input"].is_string()) return args["input"];
  return arguments;
}

// The function name the model called an item's tool by ("<namespace>__<name>" inside a namespace).
std::string called_name(const json& item) {
  const std::string name = item["name"];
  return item.contains("namespace") ? item["namespace"].get<std::string>() + "__" + name : name;
}

}  // namespace

ResponsesWriter::ResponsesWriter(const ResponsesRequest& request, ResponseMeta meta, bool opens_think,
                                 std::optional<ToolSyntax> tool_syntax, std::shared_ptr<ResponseStore> store)
    : meta_(std::move(meta)), settings_(request.settings), conversation_(request.conversation),
      tools_offered_(request.tools), parallel_tool_calls_(request.api.parallel_tool_calls),
      want_logprobs_(request.api.top_logprobs >= 0), store_(request.store ? std::move(store) : nullptr),
      parser_(opens_think) {
  if (tool_syntax) tools_ = std::make_unique<ToolCallStream>(*tool_syntax);
}

void ResponsesWriter::open(std::vector<Event>& out, Open kind, json item, json part) {
  close(out);
  open_ = kind;
  open_text_.clear();
  const int index = static_cast<int>(items_.size());
  items_.push_back(item);
  out.push_back({"response.output_item.added", {{"output_index", index}, {"item", std::move(item)}}});
  if (part.is_null()) return;
  out.push_back({"response.content_part.added",
                 {{"item_id", items_.back()["id"]}, {"output_index", index}, {"content_index", 0}, {"part", part}}});
}

void ResponsesWriter::close(std::vector<Event>& out) {
  if (open_ == Open::kNone) return;
  const int index = static_cast<int>(items_.size()) - 1;
  json& item = items_.back();
  const json id = item["id"];
  auto text_done = [&](const char* done_type, json part) {
    json done = {{"item_id", id}, {"output_index", index}, {"content_index", 0}, {"text", open_text_}};
    if (open_ == Open::kMessage) done["logprobs"] = part["logprobs"];
    out.push_back({done_type, std::move(done)});
    out.push_back({"response.content_part.done",
                   {{"item_id", id}, {"output_index", index}, {"content_index", 0}, {"part", part}}});
    item["content"] = json::array({std::move(part)});
  };
  if (open_ == Open::kReasoning) {
    text_done("response.reasoning_text.done", {{"type", "reasoning_text"}, {"text", open_text_}});
  } else if (open_ == Open::kMessage) {
    text_done("response.output_text.done",
              {{"type", "output_text"}, {"text", open_text_}, {"annotations", json::array()}, {"logprobs", logprobs_}});
    item["status"] = "completed";
    answer_ += open_text_;
    logprobs_ = json::array();
  } else if (item["type"] == "custom_tool_call") {
    const std::string input = custom_input(open_text_);
    out.push_back(
        {"response.custom_tool_call_input.delta", {{"item_id", id}, {"output_index", index}, {"delta", input}}});
    out.push_back(
        {"response.custom_tool_call_input.done", {{"item_id", id}, {"output_index", index}, {"input", input}}});
    item["input"] = input;
    item["status"] = "completed";
    calls_.push_back({item["call_id"], called_name(item), json{{"input", input}}.dump()});
  } else {
    out.push_back({"response.function_call_arguments.done",
                   {{"item_id", id}, {"output_index", index}, {"name", item["name"]}, {"arguments", open_text_}}});
    item["arguments"] = open_text_;
    item["status"] = "completed";
    calls_.push_back({item["call_id"], called_name(item), open_text_});
  }
  out.push_back({"response.output_item.done", {{"output_index", index}, {"item", item}}});
  open_ = Open::kNone;
}

void ResponsesWriter::reasoning_delta(std::vector<Event>& out, const std::string& text) {
  if (open_ != Open::kReasoning)
    open(
        out, Open::kReasoning,
        {{"id", new_response_id("rs_")}, {"type", "reasoning"}, {"summary", json::array()}, {"content", json::array()}},
        {{"type", "reasoning_text"}, {"text", ""}});
  open_text_ += text;
  out.push_back(
      {"response.reasoning_text.delta",
       {{"item_id", items_.back()["id"]}, {"output_index", items_.size() - 1}, {"content_index", 0}, {"delta", text}}});
}

void ResponsesWriter::text_delta(std::vector<Event>& out, const std::string& text) {
  if (open_ != Open::kMessage)
    open(out, Open::kMessage,
         {{"id", new_response_id("msg_")},
          {"type", "message"},
          {"status", "in_progress"},
          {"role", "assistant"},
          {"content", json::array()}},
         {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}, {"logprobs", json::array()}});
  open_text_ += text;
  out.push_back({"response.output_text.delta",
                 {{"item_id", items_.back()["id"]},
                  {"output_index", items_.size() - 1},
                  {"content_index", 0},
                  {"delta", text},
                  {"logprobs", json::array()}}});
}

void ResponsesWriter::add_answer(std::vector<Event>& out, const ToolCallStream::Delta& d) {
  if (!d.content.empty()) text_delta(out, d.content);
  for (const ToolCallDelta& call : d.calls) {
    if (!parallel_tool_calls_ && call.index > 0) continue;  // one call per answer: the first
    if (open_ != Open::kCall || call.index != open_call_) {
      auto offered = tools_offered_.find(call.name);
      const bool custom = offered != tools_offered_.end() && offered->second.custom;
      json item = {{"id", new_response_id(custom ? "ctc_" : "fc_")},
                   {"type", custom ? "custom_tool_call" : "function_call"},
                   {"status", "in_progress"},
                   {"call_id", call.id},
                   {"name", offered == tools_offered_.end() ? call.name : offered->second.name}};
      if (offered != tools_offered_.end() && !offered->second.ns.empty()) item["namespace"] = offered->second.ns;
      item[custom ? "input" : "arguments"] = "";
      open(out, Open::kCall, std::move(item), nullptr);
      open_call_ = call.index;
    }
    open_text_ += call.arguments;
    if (!call.arguments.empty() && items_.back()["type"] == "function_call")
      out.push_back(
          {"response.function_call_arguments.delta",
           {{"item_id", items_.back()["id"]}, {"output_index", items_.size() - 1}, {"delta", call.arguments}}});
  }
}

std::vector<ResponsesWriter::Event> ResponsesWriter::advance(const StreamEvent& ev) {
  std::vector<Event> out;
  const bool last = ev.finish != FinishReason::kNone;
  const ReasoningDelta d = parser_.push(ev.text, last);
  if (!d.reasoning.empty()) {
    reasoning_delta(out, d.reasoning);
    if (d.content.empty()) reasoning_tokens_ += static_cast<int>(ev.tokens.size());
  }
  if (want_logprobs_ && !d.content.empty())
    for (const json& lp : chat_logprobs_json(ev.logprobs)["content"]) logprobs_.push_back(lp);
  for (const ToolCallStream::Delta& answer : answer_deltas(tools_.get(), d.content, last)) add_answer(out, answer);
  if (last) close(out);
  return out;
}

void ResponsesWriter::end(const StreamEvent& ev) {
  finish_ = ev.finish;
  error_ = ev.error;
  error_code_ = ev.error_code;
}

json ResponsesWriter::response_json(const Usage& usage) const {
  json r = settings_;
  r["id"] = meta_.id;
  r["object"] = "response";
  r["created_at"] = meta_.created;
  r["model"] = meta_.model;
  r["output"] = items_;
  r["error"] = nullptr;
  r["incomplete_details"] = nullptr;
  r["usage"] = nullptr;
  switch (finish_) {
    case FinishReason::kNone: r["status"] = "in_progress"; return r;
    case FinishReason::kStop: r["status"] = "completed"; break;
    case FinishReason::kLength:
      r["status"] = "incomplete";
      r["incomplete_details"] = {{"reason", "max_output_tokens"}};
      break;
    default: {
      const ApiError e = engine_end_error(finish_, error_, error_code_);
      r["status"] = "failed";
      r["error"] = {{"code", e.code.empty() ? "server_error" : e.code}, {"message", e.message}};
    }
  }
  r["usage"] = responses_usage_json(usage, reasoning_tokens_);
  return r;
}

void ResponsesWriter::keep(const json& response) {
  if (kept_ || !store_ || (finish_ != FinishReason::kStop && finish_ != FinishReason::kLength)) return;
  kept_ = true;
  nlohmann::ordered_json conversation = conversation_;
  nlohmann::ordered_json answer = {{"role", "assistant"}, {"content", answer_}};
  if (!calls_.empty()) {
    if (answer_.empty()) answer["content"] = nullptr;
    answer["tool_calls"] = nlohmann::ordered_json::array();
    for (const ToolCall& c : calls_)
      answer["tool_calls"].push_back(
          {{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  }
  conversation.push_back(std::move(answer));
  store_->put(meta_.id, {response, std::move(conversation)});
}

std::string ResponsesWriter::sse(const Event& e) {
  json body = {{"type", e.first}, {"sequence_number", sequence_++}};
  body.update(e.second);
  return sse_event(e.first, body);
}

std::string ResponsesWriter::start(const Usage& usage) {
  if (started_) return {};
  started_ = true;
  const json r = response_json(usage);
  std::string out = sse({"response.created", {{"response", r}}});
  return out + sse({"response.in_progress", {{"response", r}}});
}

std::string ResponsesWriter::keep_alive(const Usage& usage) {
  std::string out = start(usage);
  return out.empty() ? kSseKeepAlive : out;
}

std::string ResponsesWriter::stream(const StreamEvent& ev, const Usage& usage) {
  if (done_ || ev.index != 0) return {};
  std::string out = start(usage);
  for (const Event& e : advance(ev)) out += sse(e);
  if (ev.finish == FinishReason::kNone) return out;
  end(ev);
  done_ = true;
  const json r = response_json(usage);
  keep(r);
  const char* last = finish_ == FinishReason::kStop     ? "response.completed"
                     : finish_ == FinishReason::kLength ? "response.incomplete"
                                                        : "response.failed";
  return out + sse({last, {{"response", r}}});
}

void ResponsesWriter::collect(const StreamEvent& ev) {
  if (ev.index != 0 || finish_ != FinishReason::kNone) return;
  advance(ev);
  if (ev.finish != FinishReason::kNone) end(ev);
}

bool ResponsesWriter::failed(ApiError* error) const {
  if (finish_ != FinishReason::kError && finish_ != FinishReason::kCancelled) return false;
  *error = engine_end_error(finish_, error_, error_code_);
  return true;
}

json ResponsesWriter::result(const Usage& usage) {
  json r = response_json(usage);
  keep(r);
  return r;
}

}  // namespace cai::server
