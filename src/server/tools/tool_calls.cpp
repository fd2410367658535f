// Tool calls: syntax detection and the split of an answer into content and calls (see ToolCallStream in the header
// for when a call is made and what becomes of text that breaks off or goes astray after that). The whole-answer
// parse is the stream fed in one piece, so both always agree.
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

// What follows a call's arguments object in each syntax: these literals in turn, each after optional white space.
constexpr std::array<std::string_view, 1> kJsonCloser = {"}"};
constexpr std::array<std::string_view, 2> kHermesCloser = {"}", kHermesClose};
constexpr std::array<std::string_view, 2> kDsFencedCloser = {"```", kDsCallEnd};
constexpr std::array<std::string_view, 1> kDsCloser = {kDsCallEnd};

// The longest text accepted before a call is made (for a call released whole: all of it): a longer one is content.
constexpr size_t kMaxCallBytes = 128 << 10;
constexpr size_t kLongestName = 64;

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

enum class Outcome {
  kNeedMore,  // the text ends before it is decided
  kNoMatch,
  kMatch,  // a whole call, or a marker that only frames calls
  kHead,   // a call up to its arguments object, which follows
};

// What the text at a possible call start turned out to be.
struct Match {
  Outcome outcome = Outcome::kNoMatch;
  size_t consumed = 0;  // kMatch: bytes of the call or marker; kHead: bytes before the arguments object
  std::optional<ToolCall> call = std::nullopt;    // kMatch: the call, or none for a framing marker; kHead: its name
  std::span<const std::string_view> closer = {};  // kHead: what closes the call after its arguments
};

Match need_more() { return {Outcome::kNeedMore}; }
Match no_match() { return {Outcome::kNoMatch}; }

// `lit` at `pos` of `s`: kMatch (pos moves past it), kNeedMore (s ends inside it) or kNoMatch.
Outcome expect(std::string_view s, size_t& pos, std::string_view lit) {
  const std::string_view rest = s.substr(pos);
  if (rest.starts_with(lit)) {
    pos += lit.size();
    return Outcome::kMatch;
  }
  return lit.starts_with(rest) ? Outcome::kNeedMore : Outcome::kNoMatch;
}

// The same after optional white space.
Outcome expect_after_space(std::string_view s, size_t& pos, std::string_view lit) {
  pos = skip_space(s, pos);
  return expect(s, pos, lit);
}

// The end (one past the closing bracket) of the JSON object starting at `pos`; npos when the text ends first.
size_t json_value_end(std::string_view s, size_t pos) {
  JsonObjectScanner scanner;
  const size_t n = scanner.feed(s.substr(pos));
  return scanner.done() ? pos + n : std::string_view::npos;
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

// A whole call, {"name": ..., "arguments": {...}} in any form, at `pos` of `s` (after optional space); on kMatch
// `pos` moves past it.
Match json_call_at(std::string_view s, size_t& pos) {
  const size_t at = skip_space(s, pos);
  if (at == s.size()) return need_more();
  if (s[at] != '{') return no_match();
  const size_t end = json_value_end(s, at);
  if (end == std::string_view::npos) return need_more();
  std::optional<ordered_json> obj = parse_object(s.substr(at, end - at));
  std::optional<ToolCall> call = obj ? call_from_object(*obj) : std::nullopt;
  if (!call) return no_match();
  pos = end;
  return {Outcome::kMatch, 0, std::move(call)};
}

// A call's head once its name is known: kHead when its arguments object starts at `pos` of `s` (after optional
// space), kNoMatch when something else does.
Match head_before_object(std::string_view s, size_t pos, std::string name, std::span<const std::string_view> closer) {
  if (!is_valid_tool_name(name)) return no_match();
  pos = skip_space(s, pos);
  if (pos == s.size()) return need_more();
  if (s[pos] != '{') return no_match();
  return {Outcome::kHead, pos, ToolCall{"", std::move(name), ""}, closer};
}

// The head of a call in JSON, {"name": "NAME", "arguments" | "parameters": , at `pos` of `s` (after optional space).
// Any other form (other keys or order, a name with escapes, arguments that are not an object) is kNoMatch here.
Match json_head_at(std::string_view s, size_t pos, std::span<const std::string_view> closer) {
  for (std::string_view lit : {"{", "\"name\"", ":", "\""})
    if (const Outcome o = expect_after_space(s, pos, lit); o != Outcome::kMatch) return {o};
  const size_t name_end = s.find_first_of("\"\\", pos);
  if (name_end == std::string_view::npos) return s.size() - pos > kLongestName ? no_match() : need_more();
  if (s[name_end] != '"') return no_match();
  std::string name(s.substr(pos, name_end - pos));
  pos = name_end + 1;
  if (const Outcome o = expect_after_space(s, pos, ","); o != Outcome::kMatch) return {o};
  Outcome key = expect_after_space(s, pos, "\"arguments\"");
  if (key == Outcome::kNoMatch) key = expect(s, pos, "\"parameters\"");
  if (key != Outcome::kMatch) return {key};
  if (const Outcome o = expect_after_space(s, pos, ":"); o != Outcome::kMatch) return {o};
  return head_before_object(s, pos, std::move(name), closer);
}

// Qwen2.5 / Hermes: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>
Match match_hermes(std::string_view s) {
  size_t pos = 0;
  if (const Outcome o = expect(s, pos, kHermesOpen); o != Outcome::kMatch) return {o};
  if (Match head = json_head_at(s, pos, kHermesCloser); head.outcome != Outcome::kNoMatch) return head;
  Match m = json_call_at(s, pos);
  if (m.outcome != Outcome::kMatch) return m;
  if (const Outcome o = expect_after_space(s, pos, kHermesClose); o != Outcome::kMatch) return {o};
  m.consumed = pos;
  return m;
}

// Llama 3.x and the generic syntax: the answer is {"name": ..., "parameters" | "arguments": {...}}.
Match match_json(std::string_view s) {
  if (Match head = json_head_at(s, 0, kJsonCloser); head.outcome != Outcome::kNoMatch) return head;
  size_t pos = 0;
  Match m = json_call_at(s, pos);
  m.consumed = pos;
  return m;
}

// The head of one DeepSeek call at the start of `s`.
Match match_deepseek_call(std::string_view s) {
  size_t pos = 0;
  if (const Outcome o = expect(s, pos, kDsCallBegin); o != Outcome::kMatch) return {o};
  const size_t sep = s.find(kDsSep, pos);
  if (sep == std::string_view::npos) return s.size() - pos > kLongestName + kDsSep.size() ? no_match() : need_more();
  std::string name(s.substr(pos, sep - pos));
  pos = sep + kDsSep.size();
  if (name != "function") return head_before_object(s, pos, std::move(name), kDsCloser);
  const size_t eol = s.find('\n', pos);
  if (eol == std::string_view::npos) return s.size() - pos > kLongestName ? no_match() : need_more();
  name = std::string(s.substr(pos, eol - pos));
  pos = eol + 1;
  if (const Outcome o = expect(s, pos, "```"); o != Outcome::kMatch) return {o};
  if (expect(s, pos, "json") == Outcome::kNeedMore) return need_more();
  return head_before_object(s, pos, std::move(name), kDsFencedCloser);
}

// DeepSeek V3/R1: <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```<｜tool▁call▁end｜>, also V3.1's
// <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>. The calls-begin marker before a call goes with it;
// the calls-end marker is dropped once a call was made (`after_call`).
Match match_deepseek(std::string_view s, bool after_call) {
  size_t pos = 0;
  if (after_call) {
    const Outcome end = expect(s, pos, kDsCallsEnd);
    if (end == Outcome::kMatch) return {Outcome::kMatch, pos};
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

bool ToolCallStream::scan_text(Delta& out, bool at_end) {
  if (pending_.empty()) return false;
  const size_t start = call_start();
  const size_t text_end = std::min(start, pending_.size());
  emit_content(out, std::string_view(pending_).substr(0, text_end));
  pending_.erase(0, text_end);
  if (start == std::string::npos) return false;
  Match m = syntax_ == ToolSyntax::kDeepSeek ? match_deepseek(pending_, !calls_.empty())
            : syntax_ == ToolSyntax::kHermes ? match_hermes(pending_)
                                             : match_json(pending_);
  // Text held past kMaxCallBytes before a call is made is not one, so that an unclosed call is not rescanned without
  // end.
  const bool decided = m.outcome == Outcome::kMatch || m.outcome == Outcome::kHead;
  if ((decided && m.consumed > kMaxCallBytes) || (m.outcome == Outcome::kNeedMore && pending_.size() > kMaxCallBytes))
    m.outcome = Outcome::kNoMatch;
  if (m.outcome == Outcome::kNeedMore && !at_end) return false;
  if (m.outcome == Outcome::kNoMatch || m.outcome == Outcome::kNeedMore) {
    emit_content(out, std::string_view(pending_).substr(0, 1));  // not a call: its first byte is text
    pending_.erase(0, 1);
    return true;
  }
  if (m.call) {
    ToolCall& call = calls_.emplace_back(std::move(*m.call));
    call.id = new_tool_call_id();
    const int index = static_cast<int>(calls_.size()) - 1;
    out.calls.push_back({index, call.id, call.name, ""});
    if (m.outcome == Outcome::kMatch) out.calls.push_back({index, "", "", call.arguments});
    json_allowed_ = true;  // Llama 3 / generic: another call may follow this one
  }
  pending_.erase(0, m.consumed);
  if (m.outcome == Outcome::kHead) {
    state_ = State::kArguments;
    arguments_ = JsonObjectScanner();
    closer_ = m.closer;
  }
  return true;
}

bool ToolCallStream::stream_arguments(Delta& out, bool at_end) {
  scanned_ += arguments_.feed(std::string_view(pending_).substr(scanned_));
  // While the object goes on, a UTF-8 sequence cut off by the end of the text so far waits for its other bytes.
  const size_t release =
      arguments_.done() || at_end ? scanned_ : utf8_prefix_end(std::string_view(pending_).substr(0, scanned_));
  if (release > 0) {
    calls_.back().arguments.append(pending_, 0, release);
    out.calls.push_back({static_cast<int>(calls_.size()) - 1, "", "", pending_.substr(0, release)});
    pending_.erase(0, release);
    scanned_ -= release;
  }
  if (arguments_.done())
    state_ = State::kClosing;
  else if (at_end)
    state_ = State::kText;  // the answer ended inside the arguments: the call keeps them as they are
  else
    return false;
  return true;
}

bool ToolCallStream::close_call(bool at_end) {
  while (!closer_.empty()) {
    size_t pos = 0;
    const Outcome o = expect_after_space(pending_, pos, closer_.front());
    if (o == Outcome::kMatch) {
      pending_.erase(0, pos);
      closer_ = closer_.subspan(1);
      continue;
    }
    pending_.erase(0, skip_space(pending_, 0));
    if (o == Outcome::kNoMatch) {
      json_allowed_ = false;  // what follows the call instead is content
      break;
    }
    if (!at_end) return false;
    pending_.clear();  // the answer ended inside the closing text
    break;
  }
  closer_ = {};
  state_ = State::kText;
  return true;
}

ToolCallStream::Delta ToolCallStream::drain(bool at_end) {
  Delta out;
  for (bool more = true; more;) {
    switch (state_) {
      case State::kText: more = scan_text(out, at_end); break;
      case State::kArguments: more = stream_arguments(out, at_end); break;
      case State::kClosing: more = close_call(at_end); break;
    }
  }
  return out;
}

const std::vector<ToolCall>& ToolCallStream::calls() const { return calls_; }

std::vector<ToolCallStream::Delta> answer_deltas(ToolCallStream* tools, std::string_view content, bool last) {
  if (!tools) return {{std::string(content), {}}};
  std::vector<ToolCallStream::Delta> out = {tools->push(content)};
  if (last) out.push_back(tools->finish());
  return out;
}

}  // namespace cai::server
