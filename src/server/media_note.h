// What a text-only model reads in place of an image or a file a tool returned: agents' tools return them unasked (a
// file-reading tool on a PNG), and a refusal would stop the agent, while a note lets the model say what it cannot see.
// Images and files a user sends are refused instead, so that the user knows the model never saw them.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace cai::server {

// `kind` names what was left out, e.g. "image".
inline std::string media_note(std::string_view kind) {
  return fmt::format("[{} omitted: this model reads text only]", kind);
}

}  // namespace cai::server
