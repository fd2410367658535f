// UTF-8 helpers for the tokenizer: code point decode/encode, character splitting, lossy validation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cai::tok {

// Length in bytes of the UTF-8 sequence that `lead` starts (1 for a stray continuation or invalid lead byte).
size_t utf8_seq_len(uint8_t lead);

// Appends the UTF-8 encoding of code point `cp` to `out`.
void append_utf8(std::string& out, uint32_t cp);

// Decodes the code point at `pos` of valid UTF-8 and advances `pos` past it.
uint32_t next_code_point(std::string_view text, size_t& pos);

// Copies `bytes` to `out` as valid UTF-8: each ill-formed sequence (a bad byte, or the longest valid-but-cut
// prefix of a sequence) becomes U+FFFD. When `final` is false, an incomplete sequence at the very end is left
// unconsumed so that a later call with more bytes can complete it. Returns the number of bytes consumed.
// Cutting the input anywhere and calling this on the pieces gives the same output as one final call.
size_t append_valid_utf8(std::string_view bytes, std::string& out, bool final);

bool is_valid_utf8(std::string_view bytes);
std::string to_valid_utf8(std::string_view bytes);

}  // namespace cai::tok
