#include "common/cpu_set.h"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "common/error.h"

namespace torchinfer {
namespace {

[[noreturn]] void bad(const std::string& text, const std::string& why) {
  throw Error(ErrorKind::kConfigInvalid,
              "cores '" + text + "' is not a valid CPU list (" + why +
                  "); expected ids and ranges like \"0\", \"2-5\" or \"0-3,8\"");
}

// Strict: std::stoi would accept "1x" and " 1"; a typo must not pick a core.
int parse_id(const std::string& text, const std::string& item) {
  if (item.empty()) bad(text, "empty item");
  if (item.size() > 5) bad(text, "'" + item + "' is too large");
  int v = 0;
  for (char c : item) {
    if (c < '0' || c > '9') bad(text, "'" + item + "' is not a CPU number");
    v = v * 10 + (c - '0');
  }
  if (v > kMaxCpuId) bad(text, "'" + item + "' is above " + std::to_string(kMaxCpuId));
  return v;
}

}  // namespace

std::vector<int> parse_cpu_list(const std::string& text) {
  std::string s;
  for (char c : text)
    if (c != ' ' && c != '\t') s += c;
  if (s.empty()) bad(text, "it is empty");
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto dash = item.find('-');
    if (dash == std::string::npos) {
      out.push_back(parse_id(text, item));
      continue;
    }
    const int lo = parse_id(text, item.substr(0, dash));
    const int hi = parse_id(text, item.substr(dash + 1));
    if (hi < lo) bad(text, "range '" + item + "' runs backwards");
    for (int i = lo; i <= hi; ++i) out.push_back(i);
  }
  if (s.back() == ',') bad(text, "empty item");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::vector<int> v = cpus;
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  std::string out;
  for (std::size_t i = 0; i < v.size();) {
    std::size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(v[i]);
    if (j > i) out += "-" + std::to_string(v[j]);
    i = j + 1;
  }
  return out;
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return out;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) out.push_back(i);
  return out;
}

std::vector<int> resolve_cpu_list(const std::string& text, const std::vector<int>& allowed) {
  const std::vector<int> cpus = parse_cpu_list(text);
  std::vector<int> missing;
  for (int c : cpus)
    if (!std::binary_search(allowed.begin(), allowed.end(), c)) missing.push_back(c);
  if (!missing.empty())
    throw Error(ErrorKind::kConfigInvalid,
                "cores '" + text + "': CPU " + format_cpu_list(missing) +
                    " not available to this process (allowed: " + format_cpu_list(allowed) +
                    "; see taskset/cgroup cpuset)");
  return cpus;
}

void pin_current_thread(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  const int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  if (rc != 0)
    throw Error(ErrorKind::kRuntime,
                "cannot pin thread to CPU " + format_cpu_list(cpus) + ": " + std::strerror(rc));
}

int current_tid() {
  return static_cast<int>(::syscall(SYS_gettid));
}

}  // namespace torchinfer
