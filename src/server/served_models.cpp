// Model ids against --served-model-name entries (exact or fnmatch globs).
#include "server/served_models.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>

namespace cai::server {

bool is_model_glob(std::string_view entry) { return entry.find_first_of("*?[") != std::string_view::npos; }

bool serves_model(const std::vector<std::string>& served, const std::string& id) {
  return std::any_of(served.begin(), served.end(), [&](const std::string& entry) {
    return is_model_glob(entry) ? fnmatch(entry.c_str(), id.c_str(), 0) == 0 : entry == id;
  });
}

std::vector<std::string> listed_models(const std::vector<std::string>& served) {
  std::vector<std::string> out;
  std::copy_if(served.begin(), served.end(), std::back_inserter(out),
               [](const std::string& entry) { return !is_model_glob(entry); });
  return out;
}

std::string default_model(const std::vector<std::string>& served) {
  const std::vector<std::string> exact = listed_models(served);
  return !exact.empty() ? exact.front() : served.empty() ? std::string() : served.front();
}

ApiError model_not_found_error(const std::string& model, const std::vector<std::string>& served) {
  std::string names;
  for (const std::string& id : served) names += (names.empty() ? "'" : ", '") + id + "'";
  ApiError e = bad_request(fmt::format("the model '{}' does not exist; this server serves {}", model, names), "model");
  e.http_status = 404;
  e.code = "model_not_found";
  return e;
}

}  // namespace cai::server
