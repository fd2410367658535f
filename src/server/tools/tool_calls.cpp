// Tool calls: syntax detection and the split of an answer into content and calls. The whole-answer parse is the
// stream fed in one piece, so both always agree. A call is released only once it is complete and valid (its JSON
// parsed, its closing marker seen): a call that breaks off or turns out malformed is content, never a half-sent call.
#include "server/tools/tool_calls.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <random>

namespace cai::server {

namespace {

using nlohmann::ordered_json;

constexpr std::string_view kDsCallsBegin = "<｜tool▁calls▁begin｜>";
constexpr std::string_view kDsCallsEnd = "<｜tool▁calls▁end｜>";
constexpr std::string_view kDsCallBegin = "<｜tool▁call▁begin｜>";
constexpr std::string_view kDsCallEnd = "<｜tool▁call▁end｜>";
constexpr std::string_view kDsSep = "<｜tool▁sep｜>";
constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";

// The longest call text accepted (markers, name and arguments): a longer one stays content.
constexpr size_t kMaxCallBytes = 128 << 10;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

size_t skip_space(std::string_view s, size_t pos) {
  while (pos < s.size() && is_space(s[pos])) ++pos;
  return pos;
}

bool json_syntax(ToolSyntax syntax) { return syntax == ToolSyntax::kLlama3 || syntax == ToolSyntax::kGeneric; }

// Whether `word` occurs in `text` as a whole identifier (not inside a longer one).
bool has_identifier(std::string_view text, std::string_view word) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = text.find(word); at != std::string_view::npos; at = text.find(word, at + 1)) {
    const size_t end = at + word.size();
    if ((at == 0 || !ident(text[at - 1])) && (end == text.size() || !ident(text[end]))) return true;
  }
  return false;
}

enum class Outcome { kNeedMore, kNoMatch, kMatch };

// What the text at a possible call start turned out to be.
struct Match {
  Outcome outcome = Outcome::kNoMatch;
  size_t consumed = 0;           // kMatch: bytes of the call (or of a marker that only frames calls)
  std::optional<ToolCall> call;  // kMatch: the call, or none for a framing marker
};

Match need_more() { return {Outcome::kNeedMore, 0, std::nullopt}; }
Match no_match() { return {Outcome::kNoMatch, 0, std::nullopt}; }

// `lit` at `pos` of `s`: kMatch (pos moves past it), kNeedMore (s ends inside it) or kNoMatch.
Outcome expect(std::string_view s, size_t& pos, std::string_view lit) {
  const std::string_view rest = s.substr(pos);
  if (rest.starts_with(lit)) {
    pos += lit.size();
    return Outcome::kMatch;
  }
  return lit.starts_with(rest) ? Outcome::kNeedMore : Outcome::kNoMatch;
}

// The end (one past the closing bracket) of the JSON object or array starting at `pos`, tracking strings and
// nesting; npos when the text ends first. Whether it is valid JSON is decided by parsing it afterwards.
size_t json_value_end(std::string_view s, size_t pos) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = pos; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

std::optional<ordered_json> parse_object(std::string_view text) {
  ordered_json v = ordered_json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded() || !v.is_object()) return std::nullopt;
  return v;
}

// A call from its name and its arguments object (or a string holding one).
std::optional<ToolCall> make_call(std::string name, const ordered_json& args) {
  if (!is_valid_tool_name(name)) return std::nullopt;
  if (args.is_object()) return ToolCall{"", std::move(name), args.dump()};
  if (!args.is_string()) return std::nullopt;
  std::optional<ordered_json> obj = parse_object(args.get_ref<const std::string&>());
  if (!obj) return std::nullopt;
  return ToolCall{"", std::move(name), obj->dump()};
}

// {"name": ..., "arguments" | "parameters": {...}} (nothing else) as a call.
std::optional<ToolCall> call_from_object(const ordered_json& obj) {
  auto name = obj.find("name");
  if (name == obj.end() || !name->is_string() || obj.size() != 2) return std::nullopt;
  auto args = obj.find("arguments");
  if (args == obj.end()) args = obj.find("parameters");
  if (args == obj.end()) return std::nullopt;
  return make_call(name->get<std::string>(), *args);
}

// A JSON object at `pos` of `s` (after optional space); on kMatch `pos` moves past it.
Outcome object_at(std::string_view s, size_t& pos, ordered_json& out) {
  size_t at = skip_space(s, pos);
  if (at == s.size()) return Outcome::kNeedMore;
  if (s[at] != '{') return Outcome::kNoMatch;
  const size_t end = json_value_end(s, at);
  if (end == std::string_view::npos) return Outcome::kNeedMore;
  std::optional<ordered_json> obj = parse_object(s.substr(at, end - at));
  if (!obj) return Outcome::kNoMatch;
  out = std::move(*obj);
  pos = end;
  return Outcome::kMatch;
}

// {"name": ..., "arguments": {...}} at `pos` of `s` as a call; on kMatch `pos` moves past it.
Match json_call_at(std::string_view s, size_t& pos) {
  ordered_json obj;
  if (const Outcome o = object_at(s, pos, obj); o != Outcome::kMatch) return {o, 0, std::nullopt};
  std::optional<ToolCall> call = call_from_object(obj);
  if (!call) return no_match();
  return {Outcome::kMatch, 0, std::move(call)};
}

// Qwen2.5 / Hermes: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>
Match match_hermes(std::string_view s) {
  size_t pos = 0;
  if (const Outcome o = expect(s, pos, kHermesOpen); o != Outcome::kMatch) return {o, 0, std::nullopt};
  Match m = json_call_at(s, pos);
  if (m.outcome != Outcome::kMatch) return m;
  pos = skip_space(s, pos);
  const Outcome close = expect(s, pos, kHermesClose);
  if (close != Outcome::kMatch) return {close, 0, std::nullopt};
  m.consumed = pos;
  return m;
}

// Llama 3.x and the generic syntax: the answer is {"name": ..., "parameters" | "arguments": {...}}.
Match match_json(std::string_view s) {
  size_t pos = 0;
  Match m = json_call_at(s, pos);
  m.consumed = pos;
  return m;
}

// One DeepSeek call at the start of `s`.
Match match_deepseek_call(std::string_view s) {
  size_t pos = 0;
  if (const Outcome o = expect(s, pos, kDsCallBegin); o != Outcome::kMatch) return {o, 0, std::nullopt};
  constexpr size_t kLongestName = 64;
  const size_t sep = s.find(kDsSep, pos);
  if (sep == std::string_view::npos) return s.size() - pos > kLongestName + kDsSep.size() ? no_match() : need_more();
  std::string name(s.substr(pos, sep - pos));
  pos = sep + kDsSep.size();
  const bool fenced = name == "function";
  if (fenced) {
    const size_t eol = s.find('\n', pos);
    if (eol == std::string_view::npos) return s.size() - pos > kLongestName ? no_match() : need_more();
    name = std::string(s.substr(pos, eol - pos));
    pos = eol + 1;
    if (const Outcome o = expect(s, pos, "```"); o != Outcome::kMatch) return {o, 0, std::nullopt};
    if (expect(s, pos, "json") == Outcome::kNeedMore) return need_more();
  }
  if (!is_valid_tool_name(name)) return no_match();
  ordered_json args;
  if (const Outcome o = object_at(s, pos, args); o != Outcome::kMatch) return {o, 0, std::nullopt};
  pos = skip_space(s, pos);
  if (fenced) {
    if (const Outcome o = expect(s, pos, "```"); o != Outcome::kMatch) return {o, 0, std::nullopt};
    pos = skip_space(s, pos);
  }
  if (const Outcome o = expect(s, pos, kDsCallEnd); o != Outcome::kMatch) return {o, 0, std::nullopt};
  std::optional<ToolCall> call = make_call(std::move(name), args);
  if (!call) return no_match();
  return {Outcome::kMatch, pos, std::move(call)};
}

// DeepSeek V3/R1: <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```<｜tool▁call▁end｜>, also V3.1's
// <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>. The calls-begin marker before a call goes with it;
// the calls-end marker is dropped once a call was made (`after_call`).
Match match_deepseek(std::string_view s, bool after_call) {
  size_t pos = 0;
  if (after_call) {
    const Outcome end = expect(s, pos, kDsCallsEnd);
    if (end == Outcome::kMatch) return {Outcome::kMatch, pos, std::nullopt};
    if (end == Outcome::kNeedMore) return need_more();
  }
  const Outcome begin = expect(s, pos, kDsCallsBegin);
  if (begin == Outcome::kNeedMore) return need_more();
  if (begin == Outcome::kNoMatch) return match_deepseek_call(s);
  pos = skip_space(s, pos);
  Match m = match_deepseek_call(s.substr(pos));
  m.consumed += pos;
  return m;
}

}  // namespace

bool is_valid_tool_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  return true;
}

ToolSyntax detect_tool_syntax(std::string_view chat_template) {
  if (chat_template.find(kDsCallBegin) != std::string_view::npos) return ToolSyntax::kDeepSeek;
  if (chat_template.find(kHermesOpen) != std::string_view::npos) return ToolSyntax::kHermes;
  if (chat_template.find("<|start_header_id|>") != std::string_view::npos && has_identifier(chat_template, "tools"))
    return ToolSyntax::kLlama3;
  return ToolSyntax::kGeneric;
}

bool template_uses_tools(std::string_view chat_template) { return has_identifier(chat_template, "tools"); }
bool template_renders_tool_calls(std::string_view chat_template) { return has_identifier(chat_template, "tool_calls"); }

std::string new_tool_call_id() {
  static constexpr std::string_view kChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kChars[rng() % kChars.size()];
  return id;
}

ParsedAnswer parse_tool_calls(ToolSyntax syntax, std::string_view answer) {
  ToolCallStream stream(syntax);
  ParsedAnswer out;
  out.content = stream.push(answer).content;
  out.content += stream.finish().content;
  out.tool_calls = stream.calls();
  return out;
}

ToolCallStream::ToolCallStream(ToolSyntax syntax) : syntax_(syntax) {}

ToolCallStream::Delta ToolCallStream::push(std::string_view text) {
  pending_ += text;
  return drain(/*at_end=*/false);
}

ToolCallStream::Delta ToolCallStream::finish() {
  Delta out = drain(/*at_end=*/true);
  if (calls_.empty()) out.content += held_space_;  // white space around calls is dropped, elsewhere kept
  held_space_.clear();
  return out;
}

size_t ToolCallStream::call_start() const {
  if (json_syntax(syntax_)) {
    if (!json_allowed_) return std::string::npos;
    const size_t first = skip_space(pending_, 0);
    return first < pending_.size() && pending_[first] == '{' ? first : std::string::npos;
  }
  static constexpr std::array<std::string_view, 3> kDeepSeek = {kDsCallsBegin, kDsCallBegin, kDsCallsEnd};
  static constexpr std::array<std::string_view, 1> kHermes = {kHermesOpen};
  const std::string_view* begin = syntax_ == ToolSyntax::kDeepSeek ? kDeepSeek.data() : kHermes.data();
  const std::string_view* end =
      syntax_ == ToolSyntax::kDeepSeek ? kDeepSeek.data() + kDeepSeek.size() : kHermes.data() + kHermes.size();
  size_t best = std::string::npos;
  for (const std::string_view* m = begin; m != end; ++m) {
    best = std::min(best, pending_.find(*m));
    // A marker cut off by the end of the text so far.
    const size_t from = pending_.size() > m->size() ? pending_.size() - m->size() + 1 : 0;
    for (size_t i = from; i < pending_.size() && i < best; ++i)
      if (m->starts_with(std::string_view(pending_).substr(i))) {
        best = i;
        break;
      }
  }
  return best;
}

void ToolCallStream::emit_content(Delta& out, std::string_view text) {
  size_t keep = text.size();
  while (keep > 0 && is_space(text[keep - 1])) --keep;
  if (keep > 0) {
    out.content += held_space_;
    out.content += text.substr(0, keep);
    held_space_.clear();
    json_allowed_ = false;
  }
  held_space_ += text.substr(keep);
}

ToolCallStream::Delta ToolCallStream::drain(bool at_end) {
  Delta out;
  while (!pending_.empty()) {
    const size_t start = call_start();
    emit_content(out, std::string_view(pending_).substr(0, std::min(start, pending_.size())));
    pending_.erase(0, std::min(start, pending_.size()));
    if (start == std::string::npos) break;
    Match m = syntax_ == ToolSyntax::kDeepSeek ? match_deepseek(pending_, !calls_.empty())
              : syntax_ == ToolSyntax::kHermes ? match_hermes(pending_)
                                               : match_json(pending_);
    // A call longer than kMaxCallBytes is text, so that an unclosed one is not rescanned without end.
    if ((m.outcome == Outcome::kMatch && m.consumed > kMaxCallBytes) ||
        (m.outcome == Outcome::kNeedMore && pending_.size() > kMaxCallBytes))
      m.outcome = Outcome::kNoMatch;
    if (m.outcome == Outcome::kNeedMore && !at_end) break;
    if (m.outcome == Outcome::kMatch) {
      if (m.call) {
        ToolCall& call = calls_.emplace_back(std::move(*m.call));
        call.id = new_tool_call_id();
        const int index = static_cast<int>(calls_.size()) - 1;
        out.calls.push_back({index, call.id, call.name, ""});
        out.calls.push_back({index, "", "", call.arguments});
        json_allowed_ = true;  // Llama 3 / generic: another call may follow
      }
      pending_.erase(0, m.consumed);
      continue;
    }
    emit_content(out, std::string_view(pending_).substr(0, 1));  // not a call: its first byte is text
    pending_.erase(0, 1);
  }
  return out;
}

const std::vector<ToolCall>& ToolCallStream::calls() const { return calls_; }

}  // namespace cai::server
