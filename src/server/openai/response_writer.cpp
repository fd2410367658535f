// Response writer: engine events → OpenAI chunks or objects, with the R1 reasoning split for chat.
#include "server/openai/response_writer.h"

#include "hal/process_group.h"
#include "server/http/sse.h"
#include "server/tools/tool_prompt.h"

namespace cai::server {

using nlohmann::json;

ApiError engine_end_error(FinishReason finish, const std::string& message, StatusCode code) {
  ApiError e;
  if (finish == FinishReason::kError && (code == StatusCode::kOutOfMemory || code == StatusCode::kResourceExhausted)) {
    e.http_status = 503;  // the device is full right now; the server keeps running and later requests may fit
    e.type = "server_error";
    e.code = "device_out_of_memory";
    e.message = "the device ran out of memory: " + message;
  } else if (finish == FinishReason::kError && code == StatusCode::kUnavailable && !hal::group_failure().empty()) {
    e.http_status = 503;  // a process of the MPI job died or hangs: the job ends and its orchestrator restarts it
    e.type = "server_error";
    e.code = "rank_failed";
    e.message = "a rank of the server's MPI job failed: " + hal::group_failure();
  } else if (finish == FinishReason::kError && code == StatusCode::kUnavailable) {
    e.http_status = 503;  // moving activations between the model's devices failed; the next step may succeed
    e.type = "server_error";
    e.code = "device_transfer_failed";
    e.message = "a transfer between the model's devices failed: " + message;
  } else if (finish == FinishReason::kError && code == StatusCode::kInvalidArgument) {
    e = bad_request(message);  // the request asks what this model cannot do, e.g. a format its vocabulary cannot write
  } else if (finish == FinishReason::kCancelled) {
    e.http_status = 503;
    e.type = "server_error";
    e.code = "cancelled";
    e.message = "the request was cancelled (server shutting down)";
  } else {
    e.http_status = 500;
    e.type = "server_error";
    e.message = message.empty() ? "generation failed" : "generation failed: " + message;
  }
  return e;
}

ResponseWriter::ResponseWriter(const ApiRequest& request, ResponseMeta meta, bool opens_think, ToolSyntax tool_syntax)
    : kind_(request.kind), want_logprobs_(request.top_logprobs >= 0), include_usage_(request.include_usage),
      tool_syntax_(tool_syntax), parallel_tool_calls_(request.parallel_tool_calls),
      generate_nothing_(request.max_tokens == 0), meta_(std::move(meta)),
      choices_(static_cast<size_t>(request.n), Choice(opens_think)) {
  if (request.kind == ApiKind::kChat && !tool_offer(request).tools.empty())
    for (Choice& c : choices_) c.tools.emplace(tool_syntax);
}

json ResponseWriter::logprobs_json(Choice& c, const std::vector<TokenLogprob>& lps) {
  if (!want_logprobs_) return nullptr;
  if (kind_ == ApiKind::kChat) return chat_logprobs_json(lps);
  json j = completion_logprobs_json(lps, c.text_offset);
  for (const TokenLogprob& lp : lps) c.text_offset += lp.text.size();
  return j;
}

bool ResponseWriter::end_choice(Choice& c, const StreamEvent& ev) {
  c.finish = ev.finish;
  ++n_ended_;
  if (ev.finish == FinishReason::kStop || ev.finish == FinishReason::kLength) return true;
  if (error_finish_ == FinishReason::kNone) {
    error_finish_ = ev.finish;
    error_ = ev.error;
    error_code_ = ev.error_code;
  }
  return false;
}

std::string ResponseWriter::stream_chat(int index, Choice& c, const StreamEvent& ev) {
  std::string out;
  if (!c.sent_role) {
    out +=
        sse_data(chat_chunk_json(meta_, index, {{"role", "assistant"}, {"content", ""}}, FinishReason::kNone, nullptr));
    c.sent_role = true;
  }
  ReasoningDelta d = c.parser.push(ev.text, ev.finish != FinishReason::kNone);
  std::vector<ToolCallDelta> calls;
  if (c.tools) {
    ToolCallStream::Delta td = c.tools->push(d.content);
    if (ev.finish != FinishReason::kNone) {
      ToolCallStream::Delta rest = c.tools->finish();
      td.content += rest.content;
      td.calls.insert(td.calls.end(), rest.calls.begin(), rest.calls.end());
    }
    d.content = std::move(td.content);
    for (ToolCallDelta& call : td.calls)
      if (parallel_tool_calls_ || call.index == 0) calls.push_back(std::move(call));
  }
  json lp = ev.logprobs.empty() ? json(nullptr) : logprobs_json(c, ev.logprobs);
  if (!d.reasoning.empty())
    out += sse_data(chat_chunk_json(meta_, index, {{"reasoning_content", d.reasoning}}, FinishReason::kNone,
                                    d.content.empty() ? lp : json(nullptr)));
  if (!d.content.empty() || (d.reasoning.empty() && !lp.is_null()))
    out += sse_data(chat_chunk_json(meta_, index, {{"content", d.content}}, FinishReason::kNone, lp));
  for (const ToolCallDelta& call : calls)
    out += sse_data(chat_chunk_json(meta_, index, {{"tool_calls", json::array({tool_call_delta_json(call)})}},
                                    FinishReason::kNone, nullptr));
  return out;
}

void ResponseWriter::echo(std::string prompt_text, bool added_bos) {
  echo_text_ = std::move(prompt_text);
  echo_added_bos_ = added_bos;
}

StreamEvent ResponseWriter::completion_view(Choice& c, const StreamEvent& ev) const {
  StreamEvent out = ev;
  if (generate_nothing_) {
    out.text.clear();
    out.tokens.clear();
    out.logprobs.clear();
    if (ev.finish == FinishReason::kStop) out.finish = FinishReason::kLength;
  }
  if (!echo_text_ || c.echoed) return out;
  c.echoed = true;
  out.text = *echo_text_ + out.text;
  std::vector<TokenLogprob> lps = ev.prompt_logprobs;
  if (echo_added_bos_ && !lps.empty()) lps[0].text.clear();
  lps.insert(lps.end(), out.logprobs.begin(), out.logprobs.end());
  out.logprobs = std::move(lps);
  return out;
}

Usage ResponseWriter::reported(Usage u) const {
  if (generate_nothing_) u.completion_tokens = 0;
  return u;
}

std::string ResponseWriter::stream_completion(int index, Choice& c, const StreamEvent& event) {
  const StreamEvent ev = completion_view(c, event);
  json lp = ev.logprobs.empty() ? json(nullptr) : logprobs_json(c, ev.logprobs);
  if (ev.text.empty() && lp.is_null()) return {};
  return sse_data(completion_chunk_json(meta_, index, ev.text, FinishReason::kNone, lp));
}

std::string ResponseWriter::stream(const StreamEvent& ev, const Usage& usage) {
  if (done_ || ev.index < 0 || static_cast<size_t>(ev.index) >= choices_.size()) return {};
  Choice& c = choices_[static_cast<size_t>(ev.index)];
  std::string out = kind_ == ApiKind::kChat ? stream_chat(ev.index, c, ev) : stream_completion(ev.index, c, ev);
  if (ev.finish == FinishReason::kNone) return out;
  const FinishReason finish = kind_ == ApiKind::kCompletion ? completion_view(c, ev).finish : ev.finish;
  if (!end_choice(c, ev)) {
    out += sse_data(error_json(engine_end_error(error_finish_, error_, error_code_)));
    out += kSseDone;
    done_ = true;
    return out;
  }
  json last = kind_ == ApiKind::kChat ? chat_chunk_json(meta_, ev.index, json::object(), ev.finish, nullptr)
                                      : completion_chunk_json(meta_, ev.index, "", finish, nullptr);
  if (c.tools) last["choices"][0]["finish_reason"] = chat_finish_reason_json(ev.finish, !c.tools->calls().empty());
  out += sse_data(last);
  if (n_ended_ < static_cast<int>(choices_.size())) return out;
  if (include_usage_) out += sse_data(usage_chunk_json(meta_, kind_ == ApiKind::kChat, reported(usage)));
  out += kSseDone;
  done_ = true;
  return out;
}

void ResponseWriter::collect(const StreamEvent& event) {
  if (event.index < 0 || static_cast<size_t>(event.index) >= choices_.size()) return;
  Choice& c = choices_[static_cast<size_t>(event.index)];
  const StreamEvent ev = kind_ == ApiKind::kCompletion ? completion_view(c, event) : event;
  if (kind_ == ApiKind::kChat) {
    ReasoningDelta d = c.parser.push(ev.text);
    c.reasoning += d.reasoning;
    c.text += d.content;
  } else {
    c.text += ev.text;
  }
  if (want_logprobs_) c.logprobs.insert(c.logprobs.end(), ev.logprobs.begin(), ev.logprobs.end());
  if (ev.finish == FinishReason::kNone) return;
  (void)end_choice(c, ev);
  if (kind_ == ApiKind::kChat) {
    ReasoningDelta rest = c.parser.finish();
    c.reasoning += rest.reasoning;
    c.text += rest.content;
    if (c.tools) {
      ParsedAnswer answer = parse_tool_calls(tool_syntax_, c.text);
      c.text = std::move(answer.content);
      c.tool_calls = std::move(answer.tool_calls);
      if (!parallel_tool_calls_ && c.tool_calls.size() > 1) c.tool_calls.resize(1);
    }
  }
}

bool ResponseWriter::failed(ApiError* error) const {
  if (error_finish_ == FinishReason::kNone) return false;
  *error = engine_end_error(error_finish_, error_, error_code_);
  return true;
}

json ResponseWriter::result(const Usage& usage) {
  std::vector<ChoiceResult> out;
  for (Choice& c : choices_) out.push_back({c.reasoning, c.text, c.finish, logprobs_json(c, c.logprobs), c.tool_calls});
  if (kind_ == ApiKind::kChat) return chat_completion_json(meta_, out, usage);
  return completion_json(meta_, out, reported(usage));
}

}  // namespace cai::server
