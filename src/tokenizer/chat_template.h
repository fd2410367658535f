// Chat templates: renders a model's Jinja chat template (tokenizer_config.json / GGUF) exactly as transformers does.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace cai {

namespace jinja {
struct Template;
}

struct ChatRenderOptions {
  std::optional<std::tm> now;                // what strftime_now() formats; unset = local time at render
  std::size_t max_output_bytes = 32u << 20;  // also bounds any single string the template builds
  std::int64_t max_steps = 5'000'000;        // statements + expression nodes + loop iterations
};

// A parsed template (jinja2 semantics with trim_blocks + lstrip_blocks, transformers' tojson/raise_exception/
// strftime_now, loop controls). Copies share the parsed tree. Rendering is const and thread-safe.
class ChatTemplate {
 public:
  // Syntax errors (and unknown filters/tests) → invalid_argument naming line and column.
  static Result<ChatTemplate> parse(std::string_view source);

  // Every top-level key of `context` becomes a template variable, e.g. {"messages": [...],
  // "add_generation_prompt": true, "bos_token": "...", "eos_token": "...", "tools": [...]}.
  // Template errors, raise_exception() and exceeded limits → invalid_argument naming the line.
  // Dict keys iterate (and `tojson` prints them) in the json's order: sorted for nlohmann::json.
  Result<std::string> render(const nlohmann::json& context, const ChatRenderOptions& options = {}) const;
  // Same, keeping the keys in the order the caller inserted them (what Python does with a request's JSON).
  Result<std::string> render_ordered(const nlohmann::ordered_json& context,
                                     const ChatRenderOptions& options = {}) const;

 private:
  explicit ChatTemplate(std::shared_ptr<const jinja::Template> tpl) : tpl_(std::move(tpl)) {}
  template <class Json>
  Result<std::string> render_impl(const Json& context, const ChatRenderOptions& options) const;

  std::shared_ptr<const jinja::Template> tpl_;
};

}  // namespace cai
