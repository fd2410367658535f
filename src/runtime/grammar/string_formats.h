// The string `format`s the grammar enforces (date-time, date, time, duration, uuid, email, hostname, ipv4, ipv6,
// uri) as automata over the string's contents; any other format is an annotation.
#pragma once

#include <memory>
#include <string_view>

#include "runtime/grammar/char_automaton.h"
#include "runtime/grammar/regex.h"

namespace cai::grammar {

// The contents of the strings of `format` that are generated; null when the format is not enforced.
std::shared_ptr<const ContentDfa> format_automaton(std::string_view format);
bool format_enforced(std::string_view format);

}  // namespace cai::grammar
