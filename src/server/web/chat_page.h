// The built-in chat page served at "/": one self-contained HTML document (no external resources).
#pragma once

#include <string_view>

namespace cai::server {

std::string_view chat_page_html();

}  // namespace cai::server
