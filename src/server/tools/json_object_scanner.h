// Incremental scan of a JSON object's text as it arrives: where the object ends, and where its text may be cut
// without splitting a UTF-8 sequence. A tool call's arguments stream through it.
#pragma once

#include <cstddef>
#include <string_view>

namespace cai::server {

// Finds the end of the JSON object (or array) whose text is fed to it, tracking strings, escapes and nesting. Whether
// the text is valid JSON is not checked.
class JsonObjectScanner {
 public:
  // Scans the next bytes of the value (the first call starts at its opening bracket) and returns how many of them
  // belong to it: all of them, or those up to and including its closing bracket, after which done() is true.
  size_t feed(std::string_view text);
  bool done() const { return done_; }

 private:
  int depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;  // in a string, right after a backslash
  bool done_ = false;
};

// The length of the longest prefix of `text` (which starts at a character) that does not end inside a UTF-8
// sequence: all of it unless its last bytes begin a sequence they do not complete.
size_t utf8_prefix_end(std::string_view text);

}  // namespace cai::server
