#include "server/core/shard.h"

#include <cctype>

#include "common/error.h"

namespace torchinfer::server {

namespace {

[[noreturn]] void bad(const std::string& what, const std::string& problem) {
  throw Error(ErrorKind::kConfigInvalid, what.empty() ? problem : what + ": " + problem);
}

// Digits only, at most 9 of them (no overflow); -1 otherwise.
long long small_number(const std::string& s) {
  if (s.empty() || s.size() > 9) return -1;
  long long v = 0;
  for (unsigned char c : s) {
    if (!std::isdigit(c)) return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

std::uint64_t fnv1a64(const std::string& bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

std::uint64_t rendezvous_weight(const std::string& id, int shard) {
  std::string key = id;
  key += '\0';
  const auto k = static_cast<std::uint32_t>(shard);
  for (int i = 0; i < 4; ++i) key += static_cast<char>((k >> (8 * i)) & 0xff);
  return mix64(fnv1a64(key));
}

int owner_shard(const std::string& id, int count) {
  int best = 0;
  std::uint64_t best_w = rendezvous_weight(id, 0);
  for (int k = 1; k < count; ++k) {
    const std::uint64_t w = rendezvous_weight(id, k);
    if (w > best_w) {
      best = k;
      best_w = w;
    }
  }
  return best;
}

ShardSpec parse_shard(const std::string& text, const std::string& what) {
  const std::size_t slash = text.find('/');
  const long long k = slash == std::string::npos ? -1 : small_number(text.substr(0, slash));
  const long long n = slash == std::string::npos ? -1 : small_number(text.substr(slash + 1));
  if (text.empty())
    bad(what,
        "empty: give K/N, the shard's index and the count, e.g. 0/4 (an unset variable "
        "in a template or manifest?)");
  if (k < 0 || n < 0)
    bad(what, "'" + text.substr(0, 40) + "' is not K/N: give the shard's index and the count, " +
                  "e.g. 0/4 (indexes start at 0)");
  if (n < 1 || n > kMaxShards)
    bad(what, "the count " + std::to_string(n) + " is out of range: give 1 to " +
                  std::to_string(kMaxShards) + " shards");
  if (k >= n)
    bad(what, "shard " + std::to_string(k) + " of " + std::to_string(n) +
                  " does not exist: indexes run from 0 to " + std::to_string(n - 1));
  return {static_cast<int>(k), static_cast<int>(n), true};
}

int ordinal_from_hostname(const std::string& hostname) {
  const std::size_t dash = hostname.rfind('-');
  const long long k = dash == std::string::npos ? -1 : small_number(hostname.substr(dash + 1));
  if (k < 0)
    bad("--shard-from-hostname",
        "host name '" + hostname.substr(0, 64) +
            "' does not end in -N (a StatefulSet pod is named <set>-<ordinal>, e.g. "
            "torchinfer-3); give --shard K/N instead");
  return static_cast<int>(k);
}

ShardSpec resolve_shard(const ShardSources& s) {
  const bool flag = s.flag_given || !s.flag.empty();
  if (flag && s.from_hostname)
    bad("--shard", "give either --shard K/N or --shard-from-hostname, not both");
  if (flag) return parse_shard(s.flag, "--shard");
  ShardSpec config;
  if (!s.config_shard.empty()) config = parse_shard(s.config_shard, "shard (config)");
  if (s.config_count && config.enabled && config.count != s.config_count)
    bad("shards (config)", "says " + std::to_string(s.config_count) +
                               " shards but \"shard\" says " + std::to_string(config.count));
  if (!s.from_hostname) {
    if (!config.enabled && s.config_count > 1)
      bad("shards (config)", "the config is split over " + std::to_string(s.config_count) +
                                 " shards: say which this is with --shard K/" +
                                 std::to_string(s.config_count) + " or --shard-from-hostname");
    return config;
  }
  const int n = s.flag_count ? s.flag_count : s.config_count ? s.config_count : config.count;
  if (!s.flag_count && !s.config_count && !config.enabled)
    bad("--shard-from-hostname",
        "the shard count is not given: add --shards N or \"shards\": N "
        "to the config");
  const int k = ordinal_from_hostname(s.hostname);
  return parse_shard(std::to_string(k) + "/" + std::to_string(n),
                     "--shard-from-hostname (host " + s.hostname.substr(0, 64) + ")");
}

std::string add_constant_label(const std::string& text, const std::string& name,
                               const std::string& value) {
  const std::string label = name + "=\"" + value + "\"";
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    const std::size_t cut = line.find_first_of("{ ");
    if (line.empty() || line[0] == '#' || cut == std::string::npos) {
      out += line;
    } else if (line[cut] == '{') {
      const bool empty = cut + 1 < line.size() && line[cut + 1] == '}';
      out += line.substr(0, cut + 1) + label + (empty ? "" : ",") + line.substr(cut + 1);
    } else {
      out += line.substr(0, cut) + "{" + label + "}" + line.substr(cut);
    }
    if (end < text.size()) out += '\n';
  }
  return out;
}

}  // namespace torchinfer::server
