// Pattern: a PCRE2 regex (UTF + Unicode properties, JIT) or a literal string, finding every match in a text.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pattern.h"

#include <pcre2.h>

#include <nlohmann/json.hpp>

namespace cai::tok {

struct Pattern::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

Result<Pattern> Pattern::regex(std::string_view regex) {
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(regex.data()), regex.size(), PCRE2_UTF | PCRE2_UCP,
                                   &error, &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    return invalid_argument("bad tokenizer regex at offset {}: {} (pattern: {})", error_offset,
                            reinterpret_cast<const char*>(message), regex);
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // best effort: the interpreter is used if JIT is unavailable
  Pattern p;
  auto holder = std::make_shared<Code>();
  holder->code = code;
  p.code_ = std::move(holder);
  return p;
}

Pattern Pattern::literal(std::string_view text) {
  Pattern p;
  p.literal_ = std::string(text);
  return p;
}

std::vector<Span> Pattern::find_all(std::string_view text) const {
  std::vector<Span> spans;
  if (!code_) {
    if (literal_.empty()) return spans;
    for (size_t pos = text.find(literal_); pos != std::string_view::npos; pos = text.find(literal_, pos)) {
      spans.push_back({pos, pos + literal_.size()});
      pos += literal_.size();
    }
    return spans;
  }
  // One ovector pair is enough (the whole match); rc == 0 then means "matched, groups not stored".
  struct MatchData {
    pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
    ~MatchData() { pcre2_match_data_free(md); }
  };
  thread_local MatchData holder;
  pcre2_match_data* md = holder.md;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    const int rc = pcre2_match(code_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc < 0) break;  // PCRE2_ERROR_NOMATCH, or a resource limit: the rest stays unmatched
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    if (ov[1] > ov[0]) {
      spans.push_back({ov[0], ov[1]});
      start = ov[1];
    } else {  // empty match: step over one character
      start = ov[0] + 1;
      while (start < text.size() && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) ++start;
    }
  }
  return spans;
}

std::string Pattern::replace_all(std::string_view text, std::string_view content) const {
  std::string out;
  size_t last = 0;
  for (const Span& s : find_all(text)) {
    out.append(text.substr(last, s.begin - last));
    out.append(content);
    last = s.end;
  }
  out.append(text.substr(last));
  return out;
}

Result<Pattern> pattern_from_json(const nlohmann::json& j) {
  if (j.is_object() && j.contains("String") && j["String"].is_string())
    return Pattern::literal(j["String"].get<std::string>());
  if (j.is_object() && j.contains("Regex") && j["Regex"].is_string())
    return Pattern::regex(j["Regex"].get<std::string>());
  return corrupt("tokenizer.json: a pattern must be {{\"String\": ...}} or {{\"Regex\": ...}}");
}

}  // namespace cai::tok
