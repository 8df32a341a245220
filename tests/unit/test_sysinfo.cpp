#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/sysinfo.h"

using namespace torchinfer;
namespace fs = std::filesystem;

namespace {

const char* kCpuinfo =
    "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Test CPU @ 2.0GHz\n"
    "flags\t\t: fpu sse avx2 avx512f avx512_vnni avx512_bf16 amx_tile amx_int8 hypervisor\n\n"
    "processor\t: 1\nmodel name\t: Other\nflags\t\t: fpu\n";

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text << "\n";
}

const Finding* find(const std::vector<Finding>& f, const std::string& key, Finding::Level level) {
  for (const auto& x : f)
    if (x.key == key && x.level == level) return &x;
  return nullptr;
}

}  // namespace

TEST(Sysinfo, ParsesCpuinfoFirstCpu) {
  const CpuIdentity id = parse_cpuinfo(kCpuinfo);
  EXPECT_EQ(id.model_name, "Test CPU @ 2.0GHz");
  EXPECT_TRUE(id.hypervisor);
  const IsaFlags isa = isa_from_flags(id.flags);
  EXPECT_TRUE(isa.avx2 && isa.avx512f && isa.avx512_vnni && isa.avx512_bf16 && isa.amx_int8);
  EXPECT_EQ(describe(isa), "AVX2 AVX-512 VNNI BF16 AMX");
  EXPECT_EQ(describe(IsaFlags{}), "baseline x86-64");
}

TEST(Sysinfo, PhysicalCoresCountSmtSiblingsOnce) {
  const fs::path root = fs::path(testing::TempDir()) / "sysfs_cpu";
  for (int c = 0; c < 4; ++c) {  // cpus 0/2 and 1/3 are siblings
    write(root / ("cpu" + std::to_string(c)) / "topology/physical_package_id", "0");
    write(root / ("cpu" + std::to_string(c)) / "topology/core_id", std::to_string(c % 2));
  }
  EXPECT_EQ(physical_cores({0, 1, 2, 3}, root.string()), 2);
  EXPECT_EQ(physical_cores({0, 1}, root.string()), 2);
  EXPECT_EQ(physical_cores({0, 2}, root.string()), 1);
  // Unreadable topology: every cpu counts.
  EXPECT_EQ(physical_cores({0, 9}, root.string()), 2);
}

TEST(Sysinfo, SplitCoresKeepsSiblingsTogetherAndSizesEven) {
  const fs::path root = fs::path(testing::TempDir()) / "sysfs_split";
  for (int c = 0; c < 6; ++c) {  // cpus 0/3, 1/4 and 2/5 are siblings
    write(root / ("cpu" + std::to_string(c)) / "topology/physical_package_id", "0");
    write(root / ("cpu" + std::to_string(c)) / "topology/core_id", std::to_string(c % 3));
  }
  using Parts = std::vector<std::vector<int>>;
  EXPECT_EQ(split_cores({0, 1, 2, 3, 4, 5}, 1, root.string()), (Parts{{0, 1, 2, 3, 4, 5}}));
  EXPECT_EQ(split_cores({0, 1, 2, 3, 4, 5}, 3, root.string()), (Parts{{0, 3}, {1, 4}, {2, 5}}));
  // Three cores in two parts: two and one, never a sibling apart.
  EXPECT_EQ(split_cores({5, 4, 3, 2, 1, 0}, 2, root.string()), (Parts{{0, 1, 3, 4}, {2, 5}}));
  EXPECT_EQ(split_cores({0, 1}, 2, root.string()), (Parts{{0}, {1}}));
  try {
    split_cores({0, 3}, 2, root.string());  // one core, two threads
    FAIL() << "two lanes on one core";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfigInvalid);
    EXPECT_STREQ(e.what(),
                 "lanes=2 needs a core per lane, but CPUs 0,3 are 1 cores: lower lanes or "
                 "list more cores");
  }
  EXPECT_THROW(split_cores({0, 1}, 0, root.string()), Error);
  // Unreadable topology: every CPU is a core; five into two is three and two.
  EXPECT_EQ(split_cores({7, 8, 9, 10, 11}, 2, "/nonexistent"), (Parts{{7, 8, 9}, {10, 11}}));
}

TEST(Sysinfo, NumaNodesAndGovernors) {
  const fs::path node = fs::path(testing::TempDir()) / "sysfs_node";
  write(node / "node0/cpulist", "0-1");
  write(node / "node1/cpulist", "2-3");
  write(node / "possible", "0-1");  // not a node directory
  const auto nodes = numa_nodes(node.string());
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes.at(1), (std::vector<int>{2, 3}));
  EXPECT_EQ(nodes_of(nodes, {1, 2}), (std::vector<int>{0, 1}));
  EXPECT_TRUE(numa_nodes("/nonexistent").empty());

  const fs::path cpu = fs::path(testing::TempDir()) / "sysfs_gov";
  write(cpu / "cpu0/cpufreq/scaling_governor", "powersave");
  const auto g = cpu_governors({0, 1}, cpu.string());
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g.at(0), "powersave");
}

TEST(Sysinfo, ThisMachineIsDescribed) {
  const CpuIdentity id = read_cpuinfo();
  EXPECT_FALSE(id.flags.empty());
  EXPECT_FALSE(numa_nodes().empty());  // Linux always has node0
}

TEST(SysinfoChecks, CleanSetupHasNoWarnings) {
  const auto f = check_system(parse_cpuinfo(kCpuinfo), {0, 1}, 2, {{0, {0, 1}}},
                              {{0, "performance"}, {1, "performance"}}, 2);
  for (const auto& x : f) EXPECT_EQ(x.level, Finding::Level::kInfo) << x.key << ": " << x.value;
  ASSERT_NE(find(f, "cores", Finding::Level::kInfo), nullptr);
  EXPECT_EQ(find(f, "cores", Finding::Level::kInfo)->value, "0-1 (2 logical, 2 physical)");
}

TEST(SysinfoChecks, OversubscribedThreadsWarnWithFix) {
  const auto f = check_system(parse_cpuinfo(kCpuinfo), {0}, 4, {}, {}, 1);
  const Finding* w = find(f, "threads", Finding::Level::kWarning);
  ASSERT_NE(w, nullptr);
  EXPECT_NE(w->fix.find("threads=1"), std::string::npos) << w->fix;
}

TEST(SysinfoChecks, SmtSiblingsWarn) {
  const auto f = check_system(parse_cpuinfo(kCpuinfo), {0, 1}, 2, {}, {}, 1);
  ASSERT_NE(find(f, "threads", Finding::Level::kWarning), nullptr);
}

TEST(SysinfoChecks, GovernorAndNumaSpanWarn) {
  const auto f = check_system(parse_cpuinfo(kCpuinfo), {1, 2}, 2, {{0, {0, 1}}, {1, {2, 3}}},
                              {{1, "powersave"}, {2, "performance"}}, 2);
  const Finding* g = find(f, "governor", Finding::Level::kWarning);
  ASSERT_NE(g, nullptr);
  EXPECT_NE(g->value.find("1=powersave"), std::string::npos);
  EXPECT_NE(g->fix.find("cpupower"), std::string::npos);
  ASSERT_NE(find(f, "numa", Finding::Level::kWarning), nullptr);
  EXPECT_NE(format_findings(f).find("WARNING governor"), std::string::npos);
}

TEST(SysinfoChecks, MissingIsaWarns) {
  CpuIdentity old;
  old.flags = {"sse4_1"};
  const auto f = check_system(old, {0}, 1, {}, {}, 1);
  ASSERT_NE(find(f, "isa", Finding::Level::kWarning), nullptr);
  CpuIdentity avx2;
  avx2.flags = {"avx2"};
  ASSERT_NE(find(check_system(avx2, {0}, 1, {}, {}, 1), "int8", Finding::Level::kWarning), nullptr);
}

TEST(SysinfoChecks, VmWithoutGovernorSaysSo) {
  const auto f = check_system(parse_cpuinfo(kCpuinfo), {0}, 1, {}, {}, 1);
  const Finding* g = find(f, "governor", Finding::Level::kInfo);
  ASSERT_NE(g, nullptr);
  EXPECT_NE(g->value.find("virtual machine"), std::string::npos);
}
