// A stream's frames (and serialized events) between the streaming thread and
// the output thread. Items leave strictly in the order they entered; an item
// whose result is still being computed holds back everything behind it.
// Bounded: push() blocks (or fails) when full, so a slow model can never
// make it grow without limit.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace torchinfer {

template <class T>
class InOrderQueue {
 public:
  explicit InOrderQueue(std::size_t capacity) : capacity_(capacity ? capacity : 1) {}

  void set_capacity(std::size_t capacity) {
    std::lock_guard<std::mutex> lk(mu_);
    capacity_ = capacity ? capacity : 1;
    cv_.notify_all();
  }

  // Returns the item's sequence number, or nothing if flushing or (without
  // block) full; the item is then left with the caller.
  std::optional<std::uint64_t> push(T&& item, bool ready, bool block) {
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      if (flushing_) return std::nullopt;
      if (entries_.size() < capacity_) break;
      if (!block) return std::nullopt;
      cv_.wait(lk);
    }
    const std::uint64_t seq = next_seq_++;
    entries_.push_back(Entry{seq, std::move(item), ready});
    cv_.notify_all();
    return seq;
  }

  // Runs fn(item) on entry seq under the lock and marks it ready, unless fn
  // returns false (an item waiting for several results). Returns false when
  // the entry is gone (flushed), in which case fn is not called.
  template <class F>
  bool complete(std::uint64_t seq, F&& fn) {
    std::lock_guard<std::mutex> lk(mu_);
    if (entries_.empty() || seq < entries_.front().seq) return false;
    const std::uint64_t pos = seq - entries_.front().seq;
    if (pos >= entries_.size()) return false;
    Entry& e = entries_[pos];
    if constexpr (std::is_same_v<std::invoke_result_t<F, T&>, bool>) {
      if (!fn(e.item)) return true;
    } else {
      fn(e.item);
    }
    e.ready = true;
    cv_.notify_all();
    return true;
  }

  // Waits for the oldest item to be ready and removes it; nothing when
  // flushing.
  std::optional<T> pop() {
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      if (flushing_) return std::nullopt;
      if (!entries_.empty() && entries_.front().ready) break;
      cv_.wait(lk);
    }
    T item = std::move(entries_.front().item);
    entries_.pop_front();
    cv_.notify_all();
    return item;
  }

  // Flushing: push() and pop() return at once, waiting ones too. Returns
  // the items that were queued, for the caller to dispose of.
  std::vector<T> set_flushing(bool flushing) {
    std::lock_guard<std::mutex> lk(mu_);
    flushing_ = flushing;
    std::vector<T> dropped;
    if (flushing) {
      for (Entry& e : entries_) dropped.push_back(std::move(e.item));
      entries_.clear();
    }
    cv_.notify_all();
    return dropped;
  }

  // Waits until every item has left; false if flushing first.
  bool wait_empty() {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return flushing_ || entries_.empty(); });
    return !flushing_;
  }

  std::size_t capacity() const {
    std::lock_guard<std::mutex> lk(mu_);
    return capacity_;
  }

  std::size_t size() const {
    std::lock_guard<std::mutex> lk(mu_);
    return entries_.size();
  }

 private:
  struct Entry {
    std::uint64_t seq;
    T item;
    bool ready;
  };
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Entry> entries_;
  std::uint64_t next_seq_ = 0;
  std::size_t capacity_;
  bool flushing_ = false;
};

}  // namespace torchinfer
