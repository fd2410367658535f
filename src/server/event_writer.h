// EventWriter: what the generation routes need from a request's output format (OpenAI chat/completions, Anthropic
// messages): engine events → SSE text while streaming, or one JSON object at the end.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "cai/engine.h"
#include "server/error_shape.h"
#include "server/openai/openai_response.h"
#include "server/http/sse.h"

namespace cai::server {

class EventWriter {
 public:
  virtual ~EventWriter() = default;
  // Streaming: the SSE text for one event (an engine error ends the stream with an error event).
  virtual std::string stream(const StreamEvent& ev, const Usage& usage) = 0;
  // Streaming: the stream's last event was written (every choice ended, or one failed).
  virtual bool done() const = 0;
  // Non-streaming: add one event.
  virtual void collect(const StreamEvent& ev) = 0;
  // Non-streaming, after every final event: the error a choice ended with, if any; else result() is the response.
  virtual bool failed(ApiError* error) const = 0;
  virtual nlohmann::json result(const Usage& usage) = 0;
  // What a stream sends while a request produces nothing (so that a vanished client is noticed).
  virtual std::string keep_alive(const Usage& /*usage*/) { return kSseKeepAlive; }
  // The shape of error bodies.
  virtual ErrorShape error_shape() const { return ErrorShape::kOpenAI; }
};

}  // namespace cai::server
