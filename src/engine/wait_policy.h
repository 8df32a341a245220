// The OpenMP wait policy the plugin loader sets before libtorch loads
// libgomp (which reads it once). Header-only and free of GStreamer and
// libtorch: the loader (plugin/plugin.cpp) links neither.
//
// No fixed policy wins both ways (docs/tuning.md, "OpenMP wait policy"):
// spinning between the parallel regions of a forward() is up to 2x faster
// on idle cores, and several times slower when other processes want the
// cores. So the loader looks at how busy the cores this process may use
// were over a short sample at start: mostly idle -> a bounded spin, else
// PASSIVE. A policy the user set is always kept.
#pragma once

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace torchinfer {

// Spins of libgomp's busy-wait loop before a waiting thread sleeps: ~0.1-0.3
// ms (`pause` takes 40-140 cycles), longer than the gaps inside a forward(),
// short enough to sleep between batches. tests/bench/wait_policy.sh reads it.
constexpr const char* kIdleSpinCount = "10000";
// Busy share of the sampled cores at or above which the cores count as
// contended (one core of two fully taken is 0.5).
constexpr double kContendedBusyShare = 0.25;

struct CpuTimes {
  std::uint64_t busy = 0, total = 0;
};

// Per-CPU jiffies from /proc/stat text ("cpuN user nice system idle iowait
// irq softirq steal ..."), for the CPUs listed (all when empty). Idle and
// iowait count as not busy. Nothing when the text has no such line or a
// malformed one.
inline std::optional<CpuTimes> cpu_times(const std::string& proc_stat,
                                         const std::vector<int>& cpus) {
  std::istringstream in(proc_stat);
  std::string line;
  CpuTimes t;
  int found = 0;
  while (std::getline(in, line)) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
    std::istringstream f(line.substr(3));
    int cpu = -1;
    if (!(f >> cpu)) return std::nullopt;
    bool wanted = cpus.empty();
    for (int c : cpus) wanted = wanted || c == cpu;
    if (!wanted) continue;
    std::vector<std::uint64_t> v;
    std::uint64_t x;
    while (f >> x) v.push_back(x);
    if (v.size() < 5 || !f.eof()) return std::nullopt;
    std::uint64_t sum = 0;
    // guest and guest_nice (fields 9, 10) are already in user and nice.
    for (std::size_t i = 0; i < v.size() && i < 8; ++i) sum += v[i];
    t.total += sum;
    t.busy += sum - v[3] - v[4];
    ++found;
  }
  if (found == 0) return std::nullopt;
  return t;
}

// Busy share of the sampled CPUs between two /proc/stat readings; nothing
// when either is unusable or no time passed.
inline std::optional<double> busy_share(const std::string& before, const std::string& after,
                                        const std::vector<int>& cpus) {
  const auto a = cpu_times(before, cpus), b = cpu_times(after, cpus);
  if (!a || !b || b->total <= a->total || b->busy < a->busy) return std::nullopt;
  return static_cast<double>(b->busy - a->busy) / static_cast<double>(b->total - a->total);
}

struct WaitPolicyChoice {
  std::string variable;  // "" = leave the environment alone
  std::string value;
  std::string reason;  // for the log
};

// What to set, given the user's variables (null = unset) and the measured
// busy share of the cores (nothing = could not be measured: PASSIVE, the
// safe side).
inline WaitPolicyChoice choose_wait_policy(const char* omp_wait_policy, const char* gomp_spincount,
                                           std::optional<double> busy) {
  if (omp_wait_policy || gomp_spincount)
    return {"", "",
            "set by the user: OMP_WAIT_POLICY=" +
                std::string(omp_wait_policy ? omp_wait_policy : "(unset)") +
                ", GOMP_SPINCOUNT=" + std::string(gomp_spincount ? gomp_spincount : "(unset)")};
  if (!busy) return {"OMP_WAIT_POLICY", "PASSIVE", "core load unknown (/proc/stat unreadable)"};
  std::ostringstream why;
  why.precision(2);
  why << "cores " << std::fixed << *busy * 100 << " % busy at start";
  if (*busy < kContendedBusyShare)
    return {"GOMP_SPINCOUNT", kIdleSpinCount, why.str() + ": bounded spin"};
  return {"OMP_WAIT_POLICY", "PASSIVE", why.str() + ": shared, passive"};
}

}  // namespace torchinfer
