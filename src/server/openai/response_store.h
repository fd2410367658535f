// The Responses API's store: finished responses kept in memory (bounded, least recently used first out) so that a
// later request can continue one by previous_response_id and a client can read one back (GET /v1/responses/{id}).
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace cai::server {

struct StoredResponse {
  nlohmann::json response;              // the response object as it was returned
  nlohmann::ordered_json conversation;  // the chat messages up to and including its answer, instructions left out
};

class ResponseStore {
 public:
  // At most `capacity` responses and `max_bytes` of their JSON text; the least recently used go first.
  ResponseStore(size_t capacity, size_t max_bytes) : capacity_(capacity), max_bytes_(max_bytes) {}

  void put(const std::string& id, StoredResponse r);
  std::optional<StoredResponse> get(const std::string& id);
  // Whether `id` was there.
  bool erase(const std::string& id);

 private:
  struct Entry {
    std::string id;
    StoredResponse value;
    size_t bytes = 0;
  };
  void evict_locked();

  const size_t capacity_;
  const size_t max_bytes_;
  std::mutex mu_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> by_id_;
  size_t bytes_ = 0;
};

}  // namespace cai::server
