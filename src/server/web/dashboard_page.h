// The operator's dashboard served at "/dashboard": one self-contained HTML document (no external resources) that
// polls /v1/status and shows the engine's load, latencies and every device's readings, with charts of the last minutes.
#pragma once

#include <string_view>

namespace cai::server {

std::string_view dashboard_page_html();

}  // namespace cai::server
