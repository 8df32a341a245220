// Which shard runs each camera of a shared camera list (docs/deployment.md
// "Many boxes"): rendezvous weights (server/shard.h) with bounded loads, so
// the split is even on few cameras (plain rendezvous put 3 of 4 cameras on
// one of 2 shards) and a change of N still moves few of them.
//
// The rule, a pure function of the set of ids and N (no order, no state):
// with I ids = q N + r, r shards hold q + 1 cameras and the others q (so
// none more than ceil(I/N)). The (id, shard) pairs are taken in descending
// rendezvous weight (ties: the smaller id, then the lower shard); a pair
// places its id on its shard when the id has no shard yet and the shard
// has room: q + 1 until r shards hold that many, q after. Each camera is
// on its highest-weight shard unless that shard is full of cameras that
// weigh more there. Going from N
// to N+1 moves about 1/(N+1) of the cameras (measured in
// tests/unit/test_fleet_rules.cpp: at most 1.5 ids/(N+1) + 1), some of them
// between old shards since the bound shrinks.
//
// An id outside the list (added by POST /streams) goes to its plain
// rendezvous owner (owner_shard): the other shards' lists do not change.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace torchinfer::server {

class ShardPlan {
 public:
  ShardPlan() = default;
  // `ids`: the shared camera list (duplicates count once); 1 <= count.
  ShardPlan(const std::vector<std::string>& ids, int count);

  int count() const { return count_; }
  // The shard of `id`: from the plan for a listed id, else owner_shard().
  int owner(const std::string& id) const;
  // The cameras of `shard`, in `ids`' order.
  std::vector<std::string> owned(const std::vector<std::string>& ids, int shard) const;
  // camera_list_hash() of the list the plan was made from.
  const std::string& list_hash() const { return hash_; }

 private:
  int count_ = 1;
  std::map<std::string, int> owner_;
  std::string hash_;
};

// 16 hex digits naming a camera list as a set: FNV-1a 64 then mix64 over
// the distinct ids in byte order, each followed by one 0x00 byte. Shards
// that show different hashes split different lists: some cameras run on
// no shard or on two.
std::string camera_list_hash(const std::vector<std::string>& ids);

}  // namespace torchinfer::server
