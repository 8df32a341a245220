// CPU lists as Linux writes them ("0-3,8"): parsing, formatting and the set
// of cores this process may run on. No libtorch here, so it is unit-testable.
#pragma once

#include <string>
#include <vector>

namespace torchinfer {

// "2-5,8" -> {2,3,4,5,8}: sorted, duplicates removed. Throws
// Error(kConfigInvalid) naming the bad item for anything else ("", "a-b",
// "3-1", "-1", "1,,2", ids above kMaxCpuId).
std::vector<int> parse_cpu_list(const std::string& text);

// {0,1,2,5} -> "0-2,5"; empty -> "".
std::string format_cpu_list(const std::vector<int>& cpus);

// Cores the calling thread may run on (sched_getaffinity), sorted.
std::vector<int> allowed_cpus();

// Parses `text` and checks every core is in `allowed`; the error says which
// cores are not and which are available (e.g. under taskset).
std::vector<int> resolve_cpu_list(const std::string& text, const std::vector<int>& allowed);

// Pins the calling thread to one core / a set of cores. Throws kRuntime.
void pin_current_thread(const std::vector<int>& cpus);

// Kernel thread id of the calling thread (what /proc/self/task/<tid> names).
int current_tid();

constexpr int kMaxCpuId = 4095;

}  // namespace torchinfer
