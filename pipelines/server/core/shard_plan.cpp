#include "server/core/shard_plan.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <tuple>

#include "server/core/shard.h"

namespace torchinfer::server {

namespace {

struct Pair {
  std::uint64_t weight;
  const std::string* id;
  int shard;
};

// Descending weight; ties (never seen) by id, then shard, so the plan is
// the same on every box.
bool heavier(const Pair& a, const Pair& b) {
  if (a.weight != b.weight) return a.weight > b.weight;
  if (*a.id != *b.id) return *a.id < *b.id;
  return a.shard < b.shard;
}

}  // namespace

ShardPlan::ShardPlan(const std::vector<std::string>& ids, int count)
    : count_(std::max(count, 1)), hash_(camera_list_hash(ids)) {
  const std::set<std::string> distinct(ids.begin(), ids.end());
  if (distinct.empty()) return;
  // N = q K + r: r shards get q + 1 cameras, the others q. Loads only grow
  // and the room only shrinks, so an id whose every pair found its shard
  // full would leave N placed already: every id gets a shard.
  const std::size_t q = distinct.size() / count_, r = distinct.size() % count_;
  std::vector<Pair> pairs;
  pairs.reserve(distinct.size() * count_);
  for (const std::string& id : distinct)
    for (int k = 0; k < count_; ++k) pairs.push_back({rendezvous_weight(id, k), &id, k});
  std::sort(pairs.begin(), pairs.end(), heavier);
  std::vector<std::size_t> load(count_, 0);
  std::size_t big = 0;  // shards holding q + 1
  for (const Pair& p : pairs) {
    const std::size_t room = big < r ? q + 1 : q;
    if (load[p.shard] >= room || owner_.count(*p.id)) continue;
    owner_[*p.id] = p.shard;
    if (++load[p.shard] == q + 1) big++;
    if (owner_.size() == distinct.size()) break;
  }
}

int ShardPlan::owner(const std::string& id) const {
  const auto it = owner_.find(id);
  return it != owner_.end() ? it->second : owner_shard(id, count_);
}

std::vector<std::string> ShardPlan::owned(const std::vector<std::string>& ids, int shard) const {
  std::vector<std::string> out;
  for (const auto& id : ids)
    if (owner(id) == shard) out.push_back(id);
  return out;
}

std::string camera_list_hash(const std::vector<std::string>& ids) {
  const std::set<std::string> distinct(ids.begin(), ids.end());
  std::string bytes;
  for (const auto& id : distinct) {
    bytes += id;
    bytes += '\0';
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(mix64(fnv1a64(bytes))));
  return hex;
}

}  // namespace torchinfer::server
