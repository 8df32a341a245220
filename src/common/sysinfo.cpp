#include "common/sysinfo.h"

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

#include "common/cpu_set.h"
#include "common/error.h"

namespace torchinfer {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

bool read_text(const std::string& path, std::string& out) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  out = trim(ss.str());
  return true;
}

}  // namespace

CpuIdentity parse_cpuinfo(const std::string& text) {
  CpuIdentity id;
  std::stringstream ss(text);
  std::string line;
  bool have_flags = false;
  while (std::getline(ss, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    if (key == "model name" && id.model_name.empty()) id.model_name = value;
    if (key == "flags" && !have_flags) {
      have_flags = true;
      std::stringstream fs(value);
      std::string f;
      while (fs >> f) id.flags.insert(f);
    }
  }
  id.hypervisor = id.flags.count("hypervisor") > 0;
  return id;
}

CpuIdentity read_cpuinfo(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  if (in) ss << in.rdbuf();
  return parse_cpuinfo(ss.str());
}

IsaFlags isa_from_flags(const std::set<std::string>& f) {
  IsaFlags i;
  i.avx2 = f.count("avx2");
  i.avx512f = f.count("avx512f");
  i.avx512_vnni = f.count("avx512_vnni");
  i.avx_vnni = f.count("avx_vnni");
  i.avx512_bf16 = f.count("avx512_bf16");
  i.amx_tile = f.count("amx_tile");
  i.amx_int8 = f.count("amx_int8");
  i.amx_bf16 = f.count("amx_bf16");
  return i;
}

std::string describe(const IsaFlags& i) {
  std::string out;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!out.empty()) out += ' ';
    out += name;
  };
  add(i.avx2, "AVX2");
  add(i.avx512f, "AVX-512");
  add(i.avx512_vnni || i.avx_vnni, "VNNI");
  add(i.avx512_bf16, "BF16");
  add(i.amx_tile && (i.amx_int8 || i.amx_bf16), "AMX");
  return out.empty() ? "baseline x86-64" : out;
}

namespace {

// Physical cores among `cpus` in order of their lowest CPU, each with its
// CPUs (sorted); every CPU alone where topology is not readable.
std::vector<std::vector<int>> core_groups(const std::vector<int>& cpus, const std::string& root) {
  std::vector<int> sorted = cpus;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::vector<std::vector<int>> cores;
  std::map<std::pair<std::string, std::string>, std::size_t> index;
  for (int c : sorted) {
    const std::string base = root + "/cpu" + std::to_string(c) + "/topology/";
    std::string pkg, core;
    if (!read_text(base + "physical_package_id", pkg) || !read_text(base + "core_id", core)) {
      cores.clear();
      for (int each : sorted) cores.push_back({each});
      return cores;
    }
    auto [it, added] = index.emplace(std::make_pair(pkg, core), cores.size());
    if (added) cores.emplace_back();
    cores[it->second].push_back(c);
  }
  return cores;
}

}  // namespace

int physical_cores(const std::vector<int>& cpus, const std::string& root) {
  return static_cast<int>(core_groups(cpus, root).size());
}

std::vector<std::vector<int>> split_cores(const std::vector<int>& cpus, int parts,
                                          const std::string& root) {
  const std::vector<std::vector<int>> cores = core_groups(cpus, root);
  const int n = static_cast<int>(cores.size());
  if (parts < 1 || n < parts) {
    std::vector<int> all;
    for (const auto& c : cores) all.insert(all.end(), c.begin(), c.end());
    std::sort(all.begin(), all.end());
    throw Error(ErrorKind::kConfigInvalid, "lanes=" + std::to_string(parts) +
                                               " needs a core per lane, but CPUs " +
                                               format_cpu_list(all) + " are " + std::to_string(n) +
                                               " cores: lower lanes or list more cores");
  }
  std::vector<std::vector<int>> out(static_cast<std::size_t>(parts));
  for (int g = 0; g < n; ++g) {
    auto& part = out[static_cast<std::size_t>(g * parts / n)];
    part.insert(part.end(), cores[static_cast<std::size_t>(g)].begin(),
                cores[static_cast<std::size_t>(g)].end());
  }
  for (auto& part : out) std::sort(part.begin(), part.end());
  return out;
}

std::map<int, std::vector<int>> numa_nodes(const std::string& root) {
  std::map<int, std::vector<int>> out;
  DIR* d = opendir(root.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind("node", 0) != 0 || name.size() < 5 ||
        name.find_first_not_of("0123456789", 4) != std::string::npos)
      continue;
    std::string list;
    std::vector<int> cpus;
    if (read_text(root + "/" + name + "/cpulist", list) && !list.empty()) {
      try {
        cpus = parse_cpu_list(list);
      } catch (...) {
      }
    }
    out[std::stoi(name.substr(4))] = cpus;
  }
  closedir(d);
  return out;
}

std::vector<int> nodes_of(const std::map<int, std::vector<int>>& nodes,
                          const std::vector<int>& cpus) {
  std::vector<int> out;
  for (const auto& [node, list] : nodes)
    for (int c : cpus)
      if (std::find(list.begin(), list.end(), c) != list.end()) {
        out.push_back(node);
        break;
      }
  return out;
}

std::map<int, std::string> cpu_governors(const std::vector<int>& cpus, const std::string& root) {
  std::map<int, std::string> out;
  for (int c : cpus) {
    std::string g;
    if (read_text(root + "/cpu" + std::to_string(c) + "/cpufreq/scaling_governor", g)) out[c] = g;
  }
  return out;
}

namespace {

using Level = Finding::Level;

void check_isa(const CpuIdentity& cpu, std::vector<Finding>& out) {
  const IsaFlags isa = isa_from_flags(cpu.flags);
  out.push_back({Level::kInfo, "cpu", cpu.model_name.empty() ? "unknown" : cpu.model_name, ""});
  out.push_back({Level::kInfo, "isa (cpuinfo)", describe(isa), ""});
  if (!isa.avx2)
    out.push_back({Level::kWarning, "isa", "no AVX2: oneDNN falls back to SSE4.1 kernels (slow)",
                   "run on a CPU with AVX2 or better (AVX-512 VNNI for int8)"});
  else if (!isa.avx512_vnni && !isa.avx_vnni)
    out.push_back({Level::kWarning, "int8", "no VNNI: int8 models gain little over fp32",
                   "keep precision=fp32 on this CPU, or move to one with AVX-512 VNNI/AVX-VNNI"});
  out.push_back({Level::kInfo, "hypervisor", cpu.hypervisor ? "yes (virtual machine)" : "no", ""});
}

void check_threads(const std::vector<int>& cpus, int threads, int physical,
                   std::vector<Finding>& out) {
  out.push_back({Level::kInfo, "cores",
                 format_cpu_list(cpus) + " (" + std::to_string(cpus.size()) + " logical, " +
                     std::to_string(physical) + " physical)",
                 ""});
  out.push_back({Level::kInfo, "threads", std::to_string(threads), ""});
  if (threads > static_cast<int>(cpus.size()))
    out.push_back({Level::kWarning, "threads",
                   std::to_string(threads) + " threads on " + std::to_string(cpus.size()) +
                       " cores: oversubscribed, threads wait on each other in every layer",
                   "set threads=" + std::to_string(physical) + " (or fewer), or list more cores"});
  else if (threads > physical)
    out.push_back({Level::kWarning, "threads",
                   std::to_string(threads) + " threads on " + std::to_string(physical) +
                       " physical cores: SMT siblings share one core's vector units",
                   "set threads=" + std::to_string(physical) + " and one core per physical core"});
}

void check_numa(const std::map<int, std::vector<int>>& numa, const std::vector<int>& cpus,
                std::vector<Finding>& out) {
  if (numa.empty()) {
    out.push_back(
        {Level::kInfo, "numa", "no NUMA information (/sys/devices/system/node absent)", ""});
    return;
  }
  const auto used = nodes_of(numa, cpus);
  std::string names;
  for (int n : used) names += (names.empty() ? "" : ",") + std::to_string(n);
  out.push_back({Level::kInfo, "numa",
                 std::to_string(numa.size()) + " node(s); engine cores on node " +
                     (names.empty() ? "?" : names),
                 ""});
  if (used.size() > 1)
    out.push_back(
        {Level::kWarning, "numa",
         "the cores span " + std::to_string(used.size()) +
             " NUMA nodes: every layer pulls activations across the interconnect",
         "list cores of one node in cores= (see /sys/devices/system/node/node*/cpulist)"});
}

void check_governors(const CpuIdentity& cpu, const std::map<int, std::string>& governors,
                     std::vector<Finding>& out) {
  if (governors.empty()) {
    out.push_back({Level::kInfo, "governor",
                   cpu.hypervisor ? "not exposed (virtual machine: the host sets the frequency)"
                                  : "not exposed (no cpufreq driver)",
                   ""});
    return;
  }
  std::string slow;
  for (const auto& [c, g] : governors)
    if (g != "performance") slow += (slow.empty() ? "" : ",") + std::to_string(c) + "=" + g;
  out.push_back({Level::kInfo, "governor", governors.begin()->second, ""});
  if (!slow.empty())
    out.push_back({Level::kWarning, "governor", "not 'performance' on cpu " + slow,
                   "sudo cpupower frequency-set -g performance (latency varies with "
                   "frequency ramp-up otherwise)"});
}

}  // namespace

std::vector<Finding> check_system(const CpuIdentity& cpu, const std::vector<int>& cpus, int threads,
                                  const std::map<int, std::vector<int>>& numa,
                                  const std::map<int, std::string>& governors, int physical) {
  std::vector<Finding> out;
  check_isa(cpu, out);
  check_threads(cpus, threads, physical, out);
  check_numa(numa, cpus, out);
  check_governors(cpu, governors, out);
  return out;
}

std::string format_findings(const std::vector<Finding>& findings) {
  std::string out;
  for (const Finding& f : findings) {
    if (f.level == Finding::Level::kWarning)
      out += "  WARNING " + f.key + ": " + f.value + "\n    fix: " + f.fix + "\n";
    else
      out += "  " + f.key + ": " + f.value + "\n";
  }
  return out;
}

}  // namespace torchinfer
