// response_format: the three OpenAI types; json_schema's schema goes through Grammar::json_schema.
#include "server/openai/response_format.h"

#include <deque>
#include <map>
#include <mutex>
#include <string>

namespace cai::server {

using nlohmann::ordered_json;

namespace {

Result<std::shared_ptr<const grammar::Grammar>> compile(const ordered_json& rf) {
  if (!rf.is_object()) return invalid_argument("response_format must be an object");
  const auto type_it = rf.find("type");
  if (type_it == rf.end() || !type_it->is_string())
    return invalid_argument("response_format.type must be one of text, json_object, json_schema");
  const std::string type = type_it->get<std::string>();
  if (type == "text") return std::shared_ptr<const grammar::Grammar>();
  if (type == "json_object") return std::make_shared<const grammar::Grammar>(grammar::Grammar::json_object());
  if (type != "json_schema")
    return invalid_argument("response_format.type must be one of text, json_object, json_schema; got '{}'", type);
  const auto spec = rf.find("json_schema");
  if (spec == rf.end() || !spec->is_object())
    return invalid_argument("response_format.json_schema must be an object with a name and a schema");
  const auto name = spec->find("name");
  if (name == spec->end() || !name->is_string() || name->get<std::string>().empty())
    return invalid_argument("response_format.json_schema.name must be a non-empty string");
  if (const auto strict = spec->find("strict"); strict != spec->end() && !strict->is_boolean() && !strict->is_null())
    return invalid_argument("response_format.json_schema.strict must be a boolean");
  // Without a schema any JSON value is allowed (OpenAI's default); strict changes nothing: the output always
  // follows the schema.
  const auto schema = spec->find("schema");
  if (schema == spec->end()) return std::make_shared<const grammar::Grammar>(grammar::Grammar::json_value());
  Result<grammar::Grammar> g = grammar::Grammar::json_schema(*schema);
  if (!g.ok()) return invalid_argument("response_format.json_schema.schema: {}", g.status().message());
  return std::make_shared<const grammar::Grammar>(std::move(g).value());
}

// The grammars of the last kCached distinct response_formats: requests repeating one get the same Grammar object, so
// the engine serves them with one automaton and one mask cache.
constexpr size_t kCached = 64;
std::mutex cache_mu;
std::map<std::string, std::shared_ptr<const grammar::Grammar>> cache;
std::deque<std::string> cache_order;  // oldest first

}  // namespace

Result<std::shared_ptr<const grammar::Grammar>> parse_response_format(const ordered_json& rf) {
  const std::string key = rf.dump();
  {
    std::lock_guard lock(cache_mu);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  CAI_ASSIGN_OR_RETURN(std::shared_ptr<const grammar::Grammar> g, compile(rf));
  if (!g) return g;
  std::lock_guard lock(cache_mu);
  if (cache.emplace(key, g).second) {
    cache_order.push_back(key);
    if (cache_order.size() > kCached) {
      cache.erase(cache_order.front());
      cache_order.pop_front();
    }
  }
  return g;
}

}  // namespace cai::server
