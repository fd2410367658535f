// Chat templates: binds a JSON context to the Jinja interpreter with transformers' globals and limits.
#include "tokenizer/chat_template.h"

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/evaluator.h"
#include "tokenizer/jinja/parser.h"

namespace cai {

Result<ChatTemplate> ChatTemplate::parse(std::string_view source) {
  CAI_ASSIGN_OR_RETURN(std::shared_ptr<const jinja::Template> tpl, jinja::parse_template(source));
  return ChatTemplate(std::move(tpl));
}

template <class Json>
Result<std::string> ChatTemplate::render_impl(const Json& context, const ChatRenderOptions& options) const {
  if (!context.is_object()) return invalid_argument("chat template context must be a JSON object");
  std::tm now{};
  if (options.now) {
    now = *options.now;
  } else {
    std::time_t t = std::time(nullptr);
    localtime_r(&t, &now);
  }
  jinja::Limits limits;
  limits.max_output_bytes = options.max_output_bytes;
  limits.max_steps = options.max_steps;
  jinja::Evaluator ev(limits, now);
  jinja::install_globals(ev);
  for (auto it = context.begin(); it != context.end(); ++it) {
    Result<jinja::Value> v = jinja::from_json(it.value());
    if (!v.ok()) return invalid_argument("chat template context '{}': {}", it.key(), v.status().message());
    ev.set_global(it.key(), std::move(v).value());
  }
  return ev.render(*tpl_);
}

Result<std::string> ChatTemplate::render(const nlohmann::json& context, const ChatRenderOptions& options) const {
  return render_impl(context, options);
}

Result<std::string> ChatTemplate::render_ordered(const nlohmann::ordered_json& context,
                                                 const ChatRenderOptions& options) const {
  return render_impl(context, options);
}

}  // namespace cai
