// Facts about the machine that decide inference speed, read from /proc and
// /sys. Parsers take text or a sysfs root so tests can feed them fixtures.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace torchinfer {

struct CpuIdentity {
  std::string model_name;       // "Intel(R) Xeon(R) ..." or "" if unknown
  std::set<std::string> flags;  // /proc/cpuinfo "flags" of the first CPU
  bool hypervisor = false;
};

// Parses /proc/cpuinfo text (x86 layout).
CpuIdentity parse_cpuinfo(const std::string& text);
CpuIdentity read_cpuinfo(const std::string& path = "/proc/cpuinfo");

// Instruction-set features inference cares about, from cpuinfo flags.
struct IsaFlags {
  bool avx2 = false, avx512f = false, avx512_vnni = false, avx_vnni = false, avx512_bf16 = false,
       amx_tile = false, amx_int8 = false, amx_bf16 = false;
};
IsaFlags isa_from_flags(const std::set<std::string>& flags);
std::string describe(const IsaFlags& isa);  // "AVX2 AVX-512 VNNI BF16 AMX"

// Physical cores among `cpus`: SMT siblings (same package and core id) count
// once. Falls back to cpus.size() where topology is not readable.
int physical_cores(const std::vector<int>& cpus,
                   const std::string& sysfs_cpu_root = "/sys/devices/system/cpu");

// `cpus` split into `parts` groups of whole physical cores (SMT siblings
// stay in one group), in order of their lowest CPU, group sizes differing
// by one core at most: the cores of the lanes of a model loaded `lanes`
// times. Where topology is not readable every CPU is a core. Throws
// Error(kConfigInvalid) when there are fewer cores than parts, naming both.
std::vector<std::vector<int>> split_cores(
    const std::vector<int>& cpus, int parts,
    const std::string& sysfs_cpu_root = "/sys/devices/system/cpu");

// NUMA node -> its CPUs; empty when the kernel exposes no node directory.
std::map<int, std::vector<int>> numa_nodes(
    const std::string& sysfs_node_root = "/sys/devices/system/node");
// Nodes whose CPUs intersect `cpus`.
std::vector<int> nodes_of(const std::map<int, std::vector<int>>& nodes,
                          const std::vector<int>& cpus);

// cpu -> scaling_governor; empty when cpufreq is absent (typical in VMs).
std::map<int, std::string> cpu_governors(
    const std::vector<int>& cpus, const std::string& sysfs_cpu_root = "/sys/devices/system/cpu");

// One finding of the self-check. Warnings carry the fix.
struct Finding {
  enum class Level { kInfo, kWarning };
  Level level = Level::kInfo;
  std::string key;    // stable name, e.g. "governor"
  std::string value;  // what was found
  std::string fix;    // for warnings: what to do about it
};

// Threads vs cores, SMT, governor, NUMA span: the system-level checks that
// need no libtorch. `threads` is what the engine will use, `cpus` the cores
// it runs on.
std::vector<Finding> check_system(const CpuIdentity& cpu, const std::vector<int>& cpus, int threads,
                                  const std::map<int, std::vector<int>>& numa,
                                  const std::map<int, std::string>& governors, int physical);

// "  key: value" lines, with "WARNING" and the fix for warnings.
std::string format_findings(const std::vector<Finding>& findings);

}  // namespace torchinfer
