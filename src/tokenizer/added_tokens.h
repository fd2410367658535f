// Added / special tokens: finds them in raw text (leftmost, longest first) so they bypass the model.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cai::tok {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;      // matched only when special tokens are parsed
  bool normalized = false;   // HF: matched in normalized text (after the normalizer), not in the raw text
  bool lstrip = false;       // white space just before the match is absorbed into it
  bool rstrip = false;       // white space just after the match is absorbed into it
  bool single_word = false;  // matches only when not inside a word
};

// A piece of input: either text for the model or an added token's id.
struct TextOrToken {
  std::string_view text;
  int32_t id = -1;  // >= 0: a token
};

class AddedTokenMatcher {
 public:
  void add(AddedToken token);
  bool empty() const { return tokens_.empty(); }

  // Cuts `text` at the added tokens whose `normalized` flag equals `normalized_stage` (and, unless
  // `parse_special`, that are not special). Text pieces are views into `text`; empty ones are left out.
  std::vector<TextOrToken> split(std::string_view text, bool parse_special, bool normalized_stage) const;

 private:
  // The longest eligible token whose content starts at `pos`, or nullptr.
  const AddedToken* match_at(std::string_view text, size_t pos, bool parse_special, bool normalized_stage) const;

  std::vector<AddedToken> tokens_;
  std::array<std::vector<uint32_t>, 256> by_first_byte_;  // indices into tokens_, longest content first
};

}  // namespace cai::tok
