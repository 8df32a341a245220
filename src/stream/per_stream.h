// What a session remembers per stream. Several streams may pass through one
// element (a funnel sends each stream's stream-start again when it switches
// to it); frame counts (inference-interval), tracked objects' memory
// (reclassify-interval) and the latest result kept for reuse belong to one
// stream each, or camera B would be timed by camera A's frames and carry
// A's results for its own object ids.
//
// Bounded: at most `max` streams are known; the least recently used is
// forgotten first. Looking up a known stream allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace torchinfer {

constexpr std::size_t kMaxStreamsRemembered = 64;

template <class V>
class PerStream {
 public:
  explicit PerStream(std::size_t max = kMaxStreamsRemembered) : max_(max ? max : 1) {}

  // Stream `key`'s state, made by make() when new (or forgotten).
  template <class Make>
  V& get(std::uint64_t key, Make&& make) {
    ++clock_;
    for (Entry& e : entries_)
      if (e.key == key) {
        e.used = clock_;
        return e.value;
      }
    if (entries_.size() >= max_) {
      std::size_t oldest = 0;
      for (std::size_t i = 1; i < entries_.size(); ++i)
        if (entries_[i].used < entries_[oldest].used) oldest = i;
      entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(oldest));
    }
    entries_.push_back(Entry{key, clock_, make()});
    return entries_.back().value;
  }
  // The key of the first stream whose state satisfies pred, or nothing.
  template <class Pred>
  bool find_key(Pred&& pred, std::uint64_t* key) const {
    for (const Entry& e : entries_)
      if (pred(e.value)) {
        *key = e.key;
        return true;
      }
    return false;
  }
  template <class F>
  void for_each(F&& f) {
    for (Entry& e : entries_) f(e.value);
  }
  void clear() { entries_.clear(); }
  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::uint64_t key = 0, used = 0;
    V value;
  };
  std::size_t max_;
  std::uint64_t clock_ = 0;
  std::vector<Entry> entries_;
};

}  // namespace torchinfer
