// The queue between two pipeline stages. Bounded, so a slow sink slows the source down instead of filling memory:
// by a number of items and, optionally, by their total cost (bytes), so peak memory is set by configuration, never
// a function of the input size. An item larger than the whole cost bound still passes when the queue is empty.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <optional>
#include <vector>

namespace skippr {

template <class T>
class BoundedQueue {
 public:
  explicit BoundedQueue(size_t capacity, size_t max_cost = std::numeric_limits<size_t>::max())
      : capacity_(capacity), max_cost_(max_cost) {}

  // Blocks while full. False when the queue was closed (the item is dropped).
  bool push(T item, size_t cost = 0) {
    std::unique_lock lock(mu_);
    not_full_.wait(lock, [&] {
      return closed_ || items_.empty() || (items_.size() < capacity_ && cost <= max_cost_ - std::min(cost_, max_cost_));
    });
    if (closed_) return false;
    items_.push_back({std::move(item), cost});
    cost_ += cost;
    not_empty_.notify_one();
    return true;
  }

  // Blocks while empty. nullopt once the queue is closed and empty.
  std::optional<T> pop() {
    std::unique_lock lock(mu_);
    not_empty_.wait(lock, [&] { return closed_ || !items_.empty(); });
    if (items_.empty()) return std::nullopt;
    T item = take_front_locked();
    not_full_.notify_all();
    return item;
  }

  // Blocks while empty, then takes the first item and those after it as long as there are at most `max_items` and
  // their total cost stays within `max_cost` (the first one always comes). Empty once closed and empty.
  std::vector<T> pop_up_to(size_t max_items, size_t max_cost) {
    std::unique_lock lock(mu_);
    not_empty_.wait(lock, [&] { return closed_ || !items_.empty(); });
    std::vector<T> taken;
    size_t cost = 0;
    while (!items_.empty() && taken.size() < max_items && (taken.empty() || cost + items_.front().cost <= max_cost)) {
      cost += items_.front().cost;
      taken.push_back(take_front_locked());
    }
    if (!taken.empty()) not_full_.notify_all();
    return taken;
  }

  // Waits up to `timeout` for an item (or the close). False when the time ran out with the queue still empty.
  template <class Rep, class Period>
  bool wait_for_item(std::chrono::duration<Rep, Period> timeout) {
    std::unique_lock lock(mu_);
    return not_empty_.wait_for(lock, timeout, [&] { return closed_ || !items_.empty(); });
  }

  // No more pushes; pops drain what is left.
  void close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    not_full_.notify_all();
    not_empty_.notify_all();
  }

  // Close and drop what is queued (used when stopping: uncommitted batches are simply re-read next run).
  void close_and_clear() {
    std::lock_guard lock(mu_);
    closed_ = true;
    items_.clear();
    cost_ = 0;
    not_full_.notify_all();
    not_empty_.notify_all();
  }

 private:
  struct Item {
    T value;
    size_t cost = 0;
  };
  T take_front_locked() {
    cost_ -= items_.front().cost;
    T value = std::move(items_.front().value);
    items_.pop_front();
    return value;
  }

  std::mutex mu_;
  std::condition_variable not_full_, not_empty_;
  std::deque<Item> items_;
  size_t capacity_;
  size_t max_cost_;
  size_t cost_ = 0;  // of the items queued
  bool closed_ = false;
};

}  // namespace skippr
