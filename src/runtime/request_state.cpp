// RequestState: detokenization, stop strings and the reasoning budget for one sequence.
#include "runtime/request_state.h"

#include <algorithm>

namespace cai {

RequestState::RequestState(GenerationRequest request, EventCallback on_event, const Tokenizer* tokenizer,
                           uint64_t group, int index)
    : request_(std::move(request)), on_event_(std::move(on_event)), sampler_(request_.sampling), group_(group),
      index_(index) {
  if (tokenizer) {
    decoder_ = std::make_unique<Tokenizer::StreamingDecoder>(*tokenizer, /*skip_special=*/true,
                                                             /*continues_text=*/true);
    // A required structure after open reasoning gets half the output for the reasoning unless the request set a
    // budget, so that it always ends with the structure.
    int budget = request_.max_reasoning_tokens;
    if (budget < 0 && request_.grammar && request_.prompt_opens_think) budget = request_.max_tokens / 2;
    if (budget >= 0) budget_.emplace(budget, request_.prompt_opens_think, reasoning_close_tokens(*tokenizer));
  }
  for (const std::string& s : request_.stop) max_stop_len_ = std::max(max_stop_len_, s.size());
}

std::string RequestState::push_token(int32_t token, bool& stop_hit) {
  stop_hit = false;
  if (stopped_ || !decoder_) return {};
  const std::string piece = decoder_->push(token);
  if (budget_) budget_->observe(piece);
  if (grammar_) grammar_->push(token, piece);
  held_ += piece;
  // The earliest stop string wins; text before it is released, the rest dropped.
  size_t cut = std::string::npos;
  for (const std::string& s : request_.stop) {
    const size_t at = s.empty() ? std::string::npos : held_.find(s);
    if (at < cut) cut = at, stop_string_ = s;
  }
  if (cut != std::string::npos) {
    std::string out = held_.substr(0, cut);
    held_.clear();
    stopped_ = stop_hit = true;
    return out;
  }
  // Keep the last max_stop_len - 1 bytes (a stop string may be starting), without splitting a UTF-8 sequence.
  if (max_stop_len_ <= 1 || held_.size() < max_stop_len_) {
    if (max_stop_len_ > 1) return {};
    return std::exchange(held_, {});
  }
  size_t release = held_.size() - (max_stop_len_ - 1);
  while (release > 0 && (static_cast<unsigned char>(held_[release]) & 0xC0) == 0x80) --release;
  std::string out = held_.substr(0, release);
  held_.erase(0, release);
  return out;
}

std::string RequestState::finish_text() {
  if (stopped_ || !decoder_) return {};
  held_ += decoder_->flush();
  return std::exchange(held_, {});
}

}  // namespace cai
