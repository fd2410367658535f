// `cai chat` input: lines from a file descriptor (read() directly, so Ctrl-C interrupts a wait), joined into messages.
#include "chat_input.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string_view>
#include <vector>

#include "interrupt.h"

namespace cai::cli {

namespace {

constexpr std::string_view kBlockQuote = R"(""")";

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) out += '\n';
    out += lines[i];
  }
  return out;
}

}  // namespace

void ChatInput::prompt(bool continuation) const {
  if (!show_prompts_) return;
  std::fputs(continuation ? "... " : ">>> ", stdout);
  std::fflush(stdout);
}

ChatInput::LineStatus ChatInput::read_line(std::string& line) {
  for (;;) {
    if (const size_t nl = pending_.find('\n'); nl != std::string::npos) {
      line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return LineStatus::kLine;
    }
    if (at_end_) {
      if (pending_.empty()) return LineStatus::kEnd;
      line = std::move(pending_);  // a last line without '\n'
      pending_.clear();
      return LineStatus::kLine;
    }
    if (take_interrupt()) {
      pending_.clear();
      return LineStatus::kInterrupted;
    }
    char buf[4096];
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n > 0) {
      pending_.append(buf, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;  // Ctrl-C (checked above) or another signal
    } else {
      at_end_ = true;  // end of input, or an error reading it
    }
  }
}

UserInput ChatInput::next() {
  take_interrupt();  // a Ctrl-C pressed before this prompt was shown belongs to what came before
  std::vector<std::string> lines;
  bool in_block = false, continuation = false;
  for (;;) {
    prompt(continuation);
    std::string line;
    const LineStatus st = read_line(line);
    if (st == LineStatus::kInterrupted) return {UserInput::Kind::kInterrupted, {}};
    if (st == LineStatus::kEnd) {
      if (!lines.empty()) return {UserInput::Kind::kText, join_lines(lines)};
      return {UserInput::Kind::kEnd, {}};
    }
    std::string_view rest = line;
    if (!in_block && !continuation && rest.starts_with(kBlockQuote)) {
      in_block = true;
      rest.remove_prefix(kBlockQuote.size());
      if (rest.empty()) {  // the opening """ alone
        continuation = true;
        continue;
      }
    }
    if (in_block) {
      continuation = true;
      if (rest.ends_with(kBlockQuote)) {
        rest.remove_suffix(kBlockQuote.size());
        if (!rest.empty()) lines.emplace_back(rest);
        if (lines.empty()) {  // an empty block: ask again
          in_block = continuation = false;
          continue;
        }
        return {UserInput::Kind::kText, join_lines(lines)};
      }
      lines.emplace_back(rest);
      continue;
    }
    if (rest.ends_with('\\')) {
      rest.remove_suffix(1);
      lines.emplace_back(rest);
      continuation = true;
      continue;
    }
    lines.emplace_back(rest);
    std::string text = join_lines(lines);
    if (text.find_first_not_of(" \t\n") == std::string::npos) {  // nothing typed: ask again
      lines.clear();
      continuation = false;
      continue;
    }
    return {UserInput::Kind::kText, std::move(text)};
  }
}

}  // namespace cai::cli
