// ElasticTaskQueue: threads on demand, bounded, retired when idle.
#include "server/http/elastic_task_queue.h"

#include <algorithm>

namespace cai::server {

ElasticTaskQueue::ElasticTaskQueue(size_t max_threads, std::chrono::milliseconds idle_retire)
    : max_threads_(std::max<size_t>(1, max_threads)), idle_retire_(idle_retire) {}

ElasticTaskQueue::~ElasticTaskQueue() { shutdown(); }

void ElasticTaskQueue::enqueue(std::function<void()> fn) {
  std::lock_guard lock(mu_);
  reap_locked();
  tasks_.push_back(std::move(fn));
  if (n_idle_ >= tasks_.size() || threads_.size() >= max_threads_) {
    cv_.notify_one();
    return;
  }
  threads_.emplace_back([this] { work(); });
}

void ElasticTaskQueue::work() {
  std::unique_lock lock(mu_);
  for (;;) {
    ++n_idle_;
    const bool woken = cv_.wait_for(lock, idle_retire_, [&] { return !tasks_.empty() || shutting_down_; });
    --n_idle_;
    if (tasks_.empty() && (shutting_down_ || !woken)) break;
    if (tasks_.empty()) continue;
    std::function<void()> fn = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    fn();
    fn = nullptr;  // the task's captures go before the lock is taken again
    lock.lock();
  }
  exited_.push_back(std::this_thread::get_id());
}

void ElasticTaskQueue::reap_locked() {
  for (std::thread::id id : exited_) {
    auto it = std::find_if(threads_.begin(), threads_.end(), [id](const std::thread& t) { return t.get_id() == id; });
    if (it == threads_.end()) continue;
    it->join();  // it has left work(): the join is immediate
    threads_.erase(it);
  }
  exited_.clear();
}

void ElasticTaskQueue::shutdown() {
  std::list<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    shutting_down_ = true;
    threads.swap(threads_);
    exited_.clear();
  }
  cv_.notify_all();
  for (std::thread& t : threads) t.join();
}

size_t ElasticTaskQueue::n_threads() const {
  std::lock_guard lock(mu_);
  return threads_.size() - exited_.size();
}

}  // namespace cai::server
