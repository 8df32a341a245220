// A stream's frames (and serialized events) between the streaming thread and
// the output thread. Items leave strictly in the order they entered; an item
// whose result is still being computed holds back everything behind it.
// Bounded: push() blocks (or fails) when full, so a slow model can never
// make it grow without limit. A ring of `capacity` entries: passing items
// through allocates nothing.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace torchinfer {

template <class T>
class InOrderQueue {
 public:
  explicit InOrderQueue(std::size_t capacity) : capacity_(capacity ? capacity : 1) {
    ring_.resize(capacity_);
  }

  void set_capacity(std::size_t capacity) {
    std::lock_guard<std::mutex> lk(mu_);
    capacity_ = capacity ? capacity : 1;
    if (capacity_ > ring_.size()) {
      // Re-laid out in order from index 0; only ever grows.
      std::vector<Entry> bigger(capacity_);
      for (std::size_t i = 0; i < count_; ++i) bigger[i] = std::move(at(i));
      ring_.swap(bigger);
      head_ = 0;
    }
    cv_.notify_all();
  }

  // Returns the item's sequence number, or nothing if flushing or (without
  // block) full; the item is then left with the caller.
  std::optional<std::uint64_t> push(T&& item, bool ready, bool block) {
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      if (flushing_) return std::nullopt;
      if (count_ < capacity_) break;
      if (!block) return std::nullopt;
      cv_.wait(lk);
    }
    const std::uint64_t seq = next_seq_++;
    at(count_++) = Entry{seq, std::move(item), ready};
    cv_.notify_all();
    return seq;
  }

  // Runs fn(item) on entry seq under the lock and marks it ready, unless fn
  // returns false (an item waiting for several results). Returns false when
  // the entry is gone (flushed), in which case fn is not called.
  template <class F>
  bool complete(std::uint64_t seq, F&& fn) {
    std::lock_guard<std::mutex> lk(mu_);
    if (count_ == 0 || seq < at(0).seq) return false;
    const std::uint64_t pos = seq - at(0).seq;
    if (pos >= count_) return false;
    Entry& e = at(pos);
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
      if (count_ > 0 && at(0).ready) break;
      cv_.wait(lk);
    }
    T item = std::move(at(0).item);
    at(0) = Entry{};  // what the item still held goes now, not when the slot is reused
    head_ = (head_ + 1) % ring_.size();
    --count_;
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
      for (std::size_t i = 0; i < count_; ++i) {
        dropped.push_back(std::move(at(i).item));
        at(i) = Entry{};
      }
      head_ = count_ = 0;
    }
    cv_.notify_all();
    return dropped;
  }

  // Waits until every item has left; false if flushing first.
  bool wait_empty() {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return flushing_ || count_ == 0; });
    return !flushing_;
  }

  std::size_t capacity() const {
    std::lock_guard<std::mutex> lk(mu_);
    return capacity_;
  }

  std::size_t size() const {
    std::lock_guard<std::mutex> lk(mu_);
    return count_;
  }

 private:
  struct Entry {
    std::uint64_t seq = 0;
    T item{};
    bool ready = false;
  };
  // The i-th oldest entry.
  Entry& at(std::size_t i) { return ring_[(head_ + i) % ring_.size()]; }
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Entry> ring_;  // ring_.size() >= capacity_
  std::size_t head_ = 0, count_ = 0;
  std::uint64_t next_seq_ = 0;
  std::size_t capacity_;
  bool flushing_ = false;
};

}  // namespace torchinfer
