// The cameras a server runs, by id, in the order they were added, under a
// limit. Holds whatever the glue keeps per camera (a pipeline); the rules
// (unique ids, the limit, what a removal of an unknown id is) live here so
// they are tested without GStreamer. Not thread-safe: the server uses it
// from its main loop only.
//
// A removed camera is not gone at once: its pipeline drains (EOS into its
// JSON file and MQTT topic) and stops in the background. Until forget()
// says it is gone, it is "stopping": it still counts against max_streams
// (its threads and memory are still there) and still holds its id (its
// pipeline still writes <id>.jsonl), so neither the limit nor a re-added
// id can be overtaken by pipelines that are on their way out.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace torchinfer::server {

enum class AddResult { kAdded, kDuplicateId, kStopping, kLimitReached };

template <typename T>
class StreamRegistry {
 public:
  using Items = std::vector<std::pair<std::string, std::shared_ptr<T>>>;

  explicit StreamRegistry(int max_streams) : max_(max_streams) {}

  int max_streams() const { return max_; }
  // Cameras running (not removed).
  std::size_t size() const { return items_.size(); }
  // Removed cameras whose pipelines have not stopped yet.
  std::size_t stopping_count() const { return stopping_.size(); }

  // Checks whether `id` could be added now, without adding it.
  AddResult check(const std::string& id) const {
    if (find(id)) return AddResult::kDuplicateId;
    if (find_in(stopping_, id)) return AddResult::kStopping;
    if (static_cast<int>(items_.size() + stopping_.size()) >= max_) return AddResult::kLimitReached;
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

  // A running camera (not a stopping one).
  std::shared_ptr<T> find(const std::string& id) const { return find_in(items_, id); }
  std::shared_ptr<T> find_stopping(const std::string& id) const { return find_in(stopping_, id); }

  // Moves the camera to the stopping ones; the removed item, or null if no
  // running camera has this id.
  std::shared_ptr<T> remove(const std::string& id) {
    auto it =
        std::find_if(items_.begin(), items_.end(), [&](const auto& p) { return p.first == id; });
    if (it == items_.end()) return nullptr;
    std::shared_ptr<T> item = it->second;
    stopping_.push_back(std::move(*it));
    items_.erase(it);
    removed_++;
    return item;
  }

  // A stopping camera's pipeline is gone: its id and its place are free.
  bool forget(const std::shared_ptr<T>& item) {
    auto it = std::find_if(stopping_.begin(), stopping_.end(),
                           [&](const auto& p) { return p.second == item; });
    if (it == stopping_.end()) return false;
    stopping_.erase(it);
    return true;
  }

  const Items& items() const { return items_; }
  const Items& stopping() const { return stopping_; }
  std::uint64_t added() const { return added_; }
  std::uint64_t removed() const { return removed_; }

 private:
  static std::shared_ptr<T> find_in(const Items& items, const std::string& id) {
    for (const auto& [k, v] : items)
      if (k == id) return v;
    return nullptr;
  }

  int max_;
  Items items_, stopping_;
  std::uint64_t added_ = 0, removed_ = 0;
};

}  // namespace torchinfer::server
