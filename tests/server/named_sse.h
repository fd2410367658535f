// Helpers for the tests of writers whose streams name each event (Anthropic's messages, OpenAI's Responses): the
// events of a stream, checked for framing, and scripted engine events to feed a writer.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "cai/engine.h"
#include "server/openai/openai_response.h"

namespace cai::server::test_support {

struct SseEvent {
  std::string name;
  nlohmann::json data;
};

// Splits a stream into its events, checking the framing ("event: NAME\ndata: {...}\n\n") and that each event's name
// is its data's type.
inline std::vector<SseEvent> parse_named_events(const std::string& text) {
  std::vector<SseEvent> out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos) << text.substr(pos);
    if (end == std::string::npos) break;
    const std::string event = text.substr(pos, end - pos);
    pos = end + 2;
    const size_t nl = event.find('\n');
    EXPECT_TRUE(event.starts_with("event: ") && nl != std::string::npos) << event;
    EXPECT_EQ(event.substr(nl + 1, 6), "data: ") << event;
    SseEvent e{event.substr(7, nl - 7), nlohmann::json::parse(event.substr(nl + 7))};
    EXPECT_EQ(e.data["type"], e.name);
    out.push_back(std::move(e));
  }
  return out;
}

// One engine event per piece (one token each) of a 10-token prompt with 4 cached, the last ending with `finish`.
inline std::vector<StreamEvent> scripted_events(const std::vector<std::string>& pieces,
                                                FinishReason finish = FinishReason::kStop) {
  std::vector<StreamEvent> out;
  for (size_t i = 0; i < pieces.size(); ++i) {
    StreamEvent ev;
    ev.text = pieces[i];
    ev.tokens = {static_cast<int32_t>(i)};
    ev.n_prompt_tokens = 10;
    ev.n_cached_prompt_tokens = 4;
    ev.n_generated_tokens = static_cast<int>(i + 1);
    if (i + 1 == pieces.size()) ev.finish = finish;
    out.push_back(ev);
  }
  return out;
}

// The usage a Generation reports after `ev`.
inline Usage usage_after(const StreamEvent& ev) {
  return {ev.n_prompt_tokens, ev.n_generated_tokens, ev.n_cached_prompt_tokens};
}

}  // namespace cai::server::test_support
