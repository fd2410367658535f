// Response writer: engine events → OpenAI chunks or objects, with the R1 reasoning split for chat.
#include "server/response_writer.h"

#include "server/sse.h"

namespace cai::server {

using nlohmann::json;

ApiError engine_end_error(FinishReason finish, const std::string& message, StatusCode code) {
  ApiError e;
  if (finish == FinishReason::kError && (code == StatusCode::kOutOfMemory || code == StatusCode::kResourceExhausted)) {
    e.http_status = 503;  // the device is full right now; the server keeps running and later requests may fit
    e.type = "server_error";
    e.code = "device_out_of_memory";
    e.message = "the device ran out of memory: " + message;
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

ResponseWriter::ResponseWriter(const ApiRequest& request, ResponseMeta meta, bool opens_think)
    : kind_(request.kind),
      want_logprobs_(request.top_logprobs >= 0),
      include_usage_(request.include_usage),
      meta_(std::move(meta)),
      parser_(opens_think) {}

json ResponseWriter::logprobs_json(const std::vector<TokenLogprob>& lps) {
  if (!want_logprobs_) return nullptr;
  if (kind_ == ApiKind::kChat) return chat_logprobs_json(lps);
  json j = completion_logprobs_json(lps, text_offset_);
  for (const TokenLogprob& lp : lps) text_offset_ += lp.text.size();
  return j;
}

std::string ResponseWriter::stream_chat(const StreamEvent& ev) {
  std::string out;
  if (!sent_role_) {
    out += sse_data(chat_chunk_json(meta_, {{"role", "assistant"}, {"content", ""}}, FinishReason::kNone, nullptr));
    sent_role_ = true;
  }
  ReasoningDelta d = parser_.push(ev.text);
  if (ev.finish != FinishReason::kNone) {
    ReasoningDelta rest = parser_.finish();
    d.reasoning += rest.reasoning;
    d.content += rest.content;
  }
  json lp = ev.logprobs.empty() ? json(nullptr) : logprobs_json(ev.logprobs);
  if (!d.reasoning.empty())
    out += sse_data(chat_chunk_json(meta_, {{"reasoning_content", d.reasoning}}, FinishReason::kNone,
                                    d.content.empty() ? lp : json(nullptr)));
  if (!d.content.empty() || (d.reasoning.empty() && !lp.is_null()))
    out += sse_data(chat_chunk_json(meta_, {{"content", d.content}}, FinishReason::kNone, lp));
  return out;
}

std::string ResponseWriter::stream_completion(const StreamEvent& ev) {
  json lp = ev.logprobs.empty() ? json(nullptr) : logprobs_json(ev.logprobs);
  if (ev.text.empty() && lp.is_null()) return {};
  return sse_data(completion_chunk_json(meta_, ev.text, FinishReason::kNone, lp));
}

std::string ResponseWriter::stream(const StreamEvent& ev, const Usage& usage) {
  std::string out = kind_ == ApiKind::kChat ? stream_chat(ev) : stream_completion(ev);
  if (ev.finish == FinishReason::kNone) return out;
  if (ev.finish == FinishReason::kStop || ev.finish == FinishReason::kLength) {
    out += sse_data(kind_ == ApiKind::kChat ? chat_chunk_json(meta_, json::object(), ev.finish, nullptr)
                                            : completion_chunk_json(meta_, "", ev.finish, nullptr));
    if (include_usage_) out += sse_data(usage_chunk_json(meta_, kind_ == ApiKind::kChat, usage));
  } else {
    out += sse_data(error_json(engine_end_error(ev.finish, ev.error, ev.error_code)));
  }
  out += kSseDone;
  return out;
}

void ResponseWriter::collect(const StreamEvent& ev) {
  if (kind_ == ApiKind::kChat) {
    ReasoningDelta d = parser_.push(ev.text);
    reasoning_ += d.reasoning;
    text_ += d.content;
  } else {
    text_ += ev.text;
  }
  if (want_logprobs_) logprobs_.insert(logprobs_.end(), ev.logprobs.begin(), ev.logprobs.end());
  if (ev.finish == FinishReason::kNone) return;
  finish_ = ev.finish;
  error_ = ev.error;
  error_code_ = ev.error_code;
  if (kind_ == ApiKind::kChat) {
    ReasoningDelta rest = parser_.finish();
    reasoning_ += rest.reasoning;
    text_ += rest.content;
  }
}

bool ResponseWriter::failed(ApiError* error) const {
  if (finish_ == FinishReason::kStop || finish_ == FinishReason::kLength) return false;
  *error = engine_end_error(finish_, error_, error_code_);
  return true;
}

json ResponseWriter::result(const Usage& usage) {
  json lp = logprobs_json(logprobs_);
  if (kind_ == ApiKind::kChat) return chat_completion_json(meta_, reasoning_, text_, finish_, usage, lp);
  return completion_json(meta_, text_, finish_, usage, lp);
}

}  // namespace cai::server
