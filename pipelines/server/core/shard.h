// Splitting one shared camera list over N torchinfer-server processes
// (docs/deployment.md "Many boxes"). A shard's cameras are a pure function
// of the camera ids and (K, N): no coordinator, no state shared between
// boxes. The owner of an id is chosen by rendezvous (highest random weight)
// hashing, so going from N to N+1 shards moves only the ids the new shard
// wins (about 1/(N+1) of them) and never moves one between old shards.
//
// The hash is fixed and documented so every build, on every machine, splits
// the same way (std::hash promises neither): weight(id, k) =
// mix64(fnv1a64(id bytes, then one 0x00 byte, then k as 4 bytes
// little-endian)), where fnv1a64 is FNV-1a 64 (offset basis
// 0xcbf29ce484222325, prime 0x100000001b3) and mix64 is SplitMix64's
// finaliser (FNV-1a alone spreads short keys poorly over the high bits).
// The owner is the k with the highest weight; a tie (never seen) goes to the
// lower k.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace torchinfer::server {

struct ShardSpec {
  int index = 0;         // K, 0-based (a StatefulSet's ordinals start at 0)
  int count = 1;         // N
  bool enabled = false;  // set by --shard, --shard-from-hostname or the config
};
constexpr int kMaxShards = 1024;

std::uint64_t fnv1a64(const std::string& bytes);
std::uint64_t mix64(std::uint64_t x);
std::uint64_t rendezvous_weight(const std::string& id, int shard);
// The shard in [0, count) that owns `id`.
int owner_shard(const std::string& id, int count);

// "K/N" with 0 <= K < N <= kMaxShards. Throws Error(kConfigInvalid) naming
// `what` (the flag or field; "" for none) and the expected form.
ShardSpec parse_shard(const std::string& text, const std::string& what);
// The StatefulSet ordinal: the digits after the last '-' of a host name
// ("torchinfer-3" -> 3). Throws naming the host name when there are none.
int ordinal_from_hostname(const std::string& hostname);

// Where the shard comes from, in order: --shard K/N; --shard-from-hostname
// (K from `hostname`, N from --shards, else the config's "shards", else the
// N of its "shard"); the config's "shard". 0 for a count means not given.
struct ShardSources {
  std::string flag;         // --shard
  bool flag_given = false;  // --shard, even empty (refused: not K/N)
  bool from_hostname = false;
  std::string hostname;
  int flag_count = 0;        // --shards
  std::string config_shard;  // "shard": "K/N"
  int config_count = 0;      // "shards": N
};
ShardSpec resolve_shard(const ShardSources& s);

// Prometheus text exposition with `name="value"` added to every sample
// (first among its labels); comments are kept. The value must need no
// escaping (shard numbers do not).
std::string add_constant_label(const std::string& text, const std::string& name,
                               const std::string& value);

}  // namespace torchinfer::server
