// The cameras a server runs, by id, in the order they were added, under a
// limit. Holds whatever the glue keeps per camera (a pipeline); the rules
// (unique ids, the limit, what a removal of an unknown id is) live here so
// they are tested without GStreamer. Not thread-safe: the server uses it
// from its main loop only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace torchinfer::server {

enum class AddResult { kAdded, kDuplicateId, kLimitReached };

template <typename T>
class StreamRegistry {
 public:
  explicit StreamRegistry(int max_streams) : max_(max_streams) {}

  int max_streams() const { return max_; }
  std::size_t size() const { return items_.size(); }

  // Checks whether `id` could be added now, without adding it.
  AddResult check(const std::string& id) const {
    if (find(id)) return AddResult::kDuplicateId;
    if (static_cast<int>(items_.size()) >= max_) return AddResult::kLimitReached;
    return AddResult::kAdded;
  }

  AddResult add(const std::string& id, std::shared_ptr<T> item) {
    const AddResult r = check(id);
    if (r == AddResult::kAdded) {
      items_.emplace_back(id, std::move(item));
      added_++;
    }
    return r;
  }

  std::shared_ptr<T> find(const std::string& id) const {
    for (const auto& [k, v] : items_)
      if (k == id) return v;
    return nullptr;
  }

  // The removed item, or null if there was none with this id.
  std::shared_ptr<T> remove(const std::string& id) {
    auto it =
        std::find_if(items_.begin(), items_.end(), [&](const auto& p) { return p.first == id; });
    if (it == items_.end()) return nullptr;
    std::shared_ptr<T> item = std::move(it->second);
    items_.erase(it);
    removed_++;
    return item;
  }

  const std::vector<std::pair<std::string, std::shared_ptr<T>>>& items() const { return items_; }
  std::uint64_t added() const { return added_; }
  std::uint64_t removed() const { return removed_; }

 private:
  int max_;
  std::vector<std::pair<std::string, std::shared_ptr<T>>> items_;
  std::uint64_t added_ = 0, removed_ = 0;
};

}  // namespace torchinfer::server
