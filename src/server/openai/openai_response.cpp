// OpenAI response schema: builds completion objects, chunks, usage and logprobs.
#include "server/openai/openai_response.h"

#include <fmt/format.h>

#include <cmath>
#include <random>

namespace cai::server {

using nlohmann::json;

std::string new_response_id(const char* prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{}{:016x}{:08x}", prefix, rng(), static_cast<uint32_t>(rng()));
}

// Speculative decoding reports in OpenAI's fields for predicted outputs (completion_tokens_details), which clients
// already parse.
json usage_json(const Usage& u) {
  json j = {{"prompt_tokens", u.prompt_tokens},
            {"completion_tokens", u.completion_tokens},
            {"total_tokens", u.prompt_tokens + u.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
  if (u.draft_tokens > 0)
    j["completion_tokens_details"] = {{"accepted_prediction_tokens", u.accepted_tokens},
                                      {"rejected_prediction_tokens", u.draft_tokens - u.accepted_tokens}};
  return j;
}

json finish_reason_json(FinishReason r) {
  if (r == FinishReason::kStop) return "stop";
  if (r == FinishReason::kLength) return "length";
  return nullptr;  // still running, or ended without an OpenAI finish reason (reported as an error instead)
}

namespace {

json byte_values(const std::string& s) {
  json out = json::array();
  for (unsigned char c : s) out.push_back(int(c));
  return out;
}

}  // namespace

json chat_logprobs_json(const std::vector<TokenLogprob>& lps) {
  json content = json::array();
  for (const TokenLogprob& lp : lps) {
    json top = json::array();
    for (const auto& [text, logprob] : lp.top)
      top.push_back({{"token", text}, {"logprob", logprob}, {"bytes", byte_values(text)}});
    content.push_back(
        {{"token", lp.text}, {"logprob", lp.logprob}, {"bytes", byte_values(lp.text)}, {"top_logprobs", top}});
  }
  return {{"content", std::move(content)}};
}

json completion_logprobs_json(const std::vector<TokenLogprob>& lps, size_t text_offset0) {
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(), offsets = json::array();
  size_t offset = text_offset0;
  for (const TokenLogprob& lp : lps) {
    tokens.push_back(lp.text);
    if (std::isnan(lp.logprob)) {  // an echoed prompt's first token: nothing before it to score it
      token_logprobs.push_back(nullptr);
      top.push_back(nullptr);
    } else {
      token_logprobs.push_back(lp.logprob);
      json alts = json::object();
      for (const auto& [text, logprob] : lp.top) alts[text] = logprob;
      top.push_back(std::move(alts));
    }
    offsets.push_back(offset);
    offset += lp.text.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

json chat_finish_reason_json(FinishReason r, bool made_tool_calls) {
  return made_tool_calls && r == FinishReason::kStop ? json("tool_calls") : finish_reason_json(r);
}

json tool_calls_json(const std::vector<ToolCall>& calls) {
  json out = json::array();
  for (const ToolCall& c : calls)
    out.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  return out;
}

json tool_call_delta_json(const ToolCallDelta& d) {
  if (d.id.empty()) return {{"index", d.index}, {"function", {{"arguments", d.arguments}}}};
  return {{"index", d.index},
          {"id", d.id},
          {"type", "function"},
          {"function", {{"name", d.name}, {"arguments", d.arguments}}}};
}

json chat_completion_json(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices, const Usage& usage) {
  json out = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    json message = {{"role", "assistant"}, {"content", c.text}};
    if (!c.reasoning.empty()) message["reasoning_content"] = c.reasoning;
    if (!c.tool_calls.empty()) {
      if (c.text.empty()) message["content"] = nullptr;
      message["tool_calls"] = tool_calls_json(c.tool_calls);
    }
    out.push_back({{"index", i},
                   {"message", std::move(message)},
                   {"logprobs", c.logprobs},
                   {"finish_reason", chat_finish_reason_json(c.finish, !c.tool_calls.empty())}});
  }
  return {{"id", meta.id},       {"object", "chat.completion"}, {"created", meta.created},
          {"model", meta.model}, {"choices", std::move(out)},   {"usage", usage_json(usage)}};
}

json chat_chunk_json(const ResponseMeta& meta, int index, json delta, FinishReason finish, const json& logprobs) {
  json choice = {{"index", index},
                 {"delta", std::move(delta)},
                 {"logprobs", logprobs},
                 {"finish_reason", finish_reason_json(finish)}};
  return {{"id", meta.id},
          {"object", "chat.completion.chunk"},
          {"created", meta.created},
          {"model", meta.model},
          {"choices", json::array({std::move(choice)})}};
}

json completion_json(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices, const Usage& usage) {
  json out = json::array();
  for (size_t i = 0; i < choices.size(); ++i)
    out.push_back({{"index", i},
                   {"text", choices[i].text},
                   {"logprobs", choices[i].logprobs},
                   {"finish_reason", finish_reason_json(choices[i].finish)}});
  return {{"id", meta.id},       {"object", "text_completion"}, {"created", meta.created},
          {"model", meta.model}, {"choices", std::move(out)},   {"usage", usage_json(usage)}};
}

json completion_chunk_json(const ResponseMeta& meta, int index, const std::string& text, FinishReason finish,
                           const json& logprobs) {
  json choice = {
      {"index", index}, {"text", text}, {"logprobs", logprobs}, {"finish_reason", finish_reason_json(finish)}};
  return {{"id", meta.id},
          {"object", "text_completion"},
          {"created", meta.created},
          {"model", meta.model},
          {"choices", json::array({std::move(choice)})}};
}

json usage_chunk_json(const ResponseMeta& meta, bool chat, const Usage& usage) {
  return {{"id", meta.id},
          {"object", chat ? "chat.completion.chunk" : "text_completion"},
          {"created", meta.created},
          {"model", meta.model},
          {"choices", json::array()},
          {"usage", usage_json(usage)}};
}

}  // namespace cai::server
