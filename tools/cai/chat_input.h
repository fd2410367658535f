// `cai chat` input: one user message per call from the terminal (or a pipe), with the multi-line forms: a line ending
// in `\` continues on the next line, and a line starting with """ opens a block that a line ending with """ closes.
#pragma once

#include <string>

namespace cai::cli {

struct UserInput {
  enum class Kind { kText, kEnd, kInterrupted };
  Kind kind = Kind::kEnd;
  std::string text;  // kText: the message, its lines joined by '\n' (never empty)
};

class ChatInput {
 public:
  // Reads `fd`; writes the prompts (">>> ", "... " on continuation lines) to stdout when `show_prompts`.
  ChatInput(int fd, bool show_prompts) : fd_(fd), show_prompts_(show_prompts) {}

  // The next non-empty message; kEnd at end of input (Ctrl-D on an empty line); kInterrupted when Ctrl-C was pressed
  // (the message being typed is dropped). A message cut short by the end of input is still returned first.
  UserInput next();

 private:
  enum class LineStatus { kLine, kEnd, kInterrupted };
  LineStatus read_line(std::string& line);
  void prompt(bool continuation) const;

  int fd_;
  bool show_prompts_;
  std::string pending_;  // bytes read past the last line returned
  bool at_end_ = false;
};

}  // namespace cai::cli
