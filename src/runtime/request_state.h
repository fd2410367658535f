// RequestState: what the engine thread keeps per live request: sampler, incremental detokenizer, stop-string holdback.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "cai/engine.h"
#include "tokenizer/tokenizer.h"

namespace cai {

class RequestState {
 public:
  RequestState(GenerationRequest request, EventCallback on_event, const Tokenizer* tokenizer);

  const GenerationRequest& request() const { return request_; }
  Sampler& sampler() { return sampler_; }
  void emit(const StreamEvent& ev) const { on_event_(ev); }

  // Feeds one generated token. Returns the text that may be released now; sets `stop_hit` when a stop string appeared
  // (the text from the stop string on is dropped and nothing more is produced).
  std::string push_token(int32_t token, bool& stop_hit);
  // Releases the held-back text at the end (not after a stop string).
  std::string finish_text();
  bool stopped() const { return stopped_; }

 private:
  GenerationRequest request_;
  EventCallback on_event_;
  Sampler sampler_;
  std::unique_ptr<Tokenizer::StreamingDecoder> decoder_;  // null without a tokenizer
  std::string held_;  // decoded text not yet released: it could be the start of a stop string
  size_t max_stop_len_ = 0;
  bool stopped_ = false;
};

}  // namespace cai
