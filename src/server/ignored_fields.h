// Request fields a route does not know: ignored rather than refused (newer clients send fields before a server knows
// them), and logged once per route and field so that an operator sees what clients send.
#pragma once

#include <string>
#include <string_view>

namespace cai::server {

// Logs "<route>: ignoring '<path>' (<why>)" at info the first time this process sees that route and path; array
// indices in `path` are left out (messages[3].x → messages[].x) so that each field is logged once.
void ignore_field(std::string_view route, const std::string& path, std::string_view why = "unknown to this server");

}  // namespace cai::server
