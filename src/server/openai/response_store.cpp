// The Responses API's bounded in-memory store.
#include "server/openai/response_store.h"

namespace cai::server {

void ResponseStore::put(const std::string& id, StoredResponse r) {
  const size_t bytes = r.response.dump().size() + r.conversation.dump().size();
  std::lock_guard lock(mu_);
  if (auto it = by_id_.find(id); it != by_id_.end()) {
    bytes_ -= it->second->bytes;
    lru_.erase(it->second);
    by_id_.erase(it);
  }
  lru_.push_front(Entry{id, std::move(r), bytes});
  by_id_[id] = lru_.begin();
  bytes_ += bytes;
  evict_locked();
}

std::optional<StoredResponse> ResponseStore::get(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->value;
}

bool ResponseStore::erase(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return false;
  bytes_ -= it->second->bytes;
  lru_.erase(it->second);
  by_id_.erase(it);
  return true;
}

// The newest entry stays even when it alone is over max_bytes: a request may always continue the answer it just got.
void ResponseStore::evict_locked() {
  while (lru_.size() > 1 && (lru_.size() > capacity_ || bytes_ > max_bytes_)) {
    bytes_ -= lru_.back().bytes;
    by_id_.erase(lru_.back().id);
    lru_.pop_back();
  }
}

}  // namespace cai::server
