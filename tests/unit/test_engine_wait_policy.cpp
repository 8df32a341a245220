// The wait-policy rule the plugin loader applies (src/engine/wait_policy.h):
// /proc/stat parsing, the busy share and the choice, on fixed texts.
#include <gtest/gtest.h>

#include "engine/wait_policy.h"

using namespace torchinfer;

namespace {

// cpu0 and cpu1: user nice system idle iowait irq softirq steal guest guest_nice
const char* kBefore =
    "cpu  300 0 100 1000 0 0 0 0 0 0\n"
    "cpu0 100 0 50 500 0 0 0 0 0 0\n"
    "cpu1 200 0 50 500 0 0 0 0 0 0\n"
    "intr 12345\n";
// +100 jiffies each: cpu0 10 busy + 90 idle, cpu1 100 busy (a busy loop).
const char* kAfter =
    "cpu  410 0 100 1090 0 0 0 0 0 0\n"
    "cpu0 110 0 50 590 0 0 0 0 0 0\n"
    "cpu1 300 0 50 500 0 0 0 0 0 0\n"
    "intr 12399\n";

}  // namespace

TEST(WaitPolicy, CpuTimesSumsTheListedCpusAndCountsIowaitAsIdle) {
  const auto all = cpu_times(kBefore, {});
  ASSERT_TRUE(all);
  EXPECT_EQ(all->total, 1400u);
  EXPECT_EQ(all->busy, 400u);
  const auto one = cpu_times("cpu3 10 1 2 30 7 0 0 0\n", {3});
  ASSERT_TRUE(one);
  EXPECT_EQ(one->total, 50u);
  EXPECT_EQ(one->busy, 13u);
}

TEST(WaitPolicy, BusyShareOfTheSampledCores) {
  EXPECT_DOUBLE_EQ(*busy_share(kBefore, kAfter, {}), 110.0 / 200.0);
  EXPECT_DOUBLE_EQ(*busy_share(kBefore, kAfter, {0}), 0.10);
  EXPECT_DOUBLE_EQ(*busy_share(kBefore, kAfter, {1}), 1.0);
}

TEST(WaitPolicy, IdleCoresSpinBoundedSharedOnesSleep) {
  WaitPolicyChoice c = choose_wait_policy(nullptr, nullptr, 0.10);
  EXPECT_EQ(c.variable, "GOMP_SPINCOUNT");
  EXPECT_EQ(c.value, kIdleSpinCount);
  EXPECT_NE(c.reason.find("10.00 % busy"), std::string::npos) << c.reason;
  c = choose_wait_policy(nullptr, nullptr, 0.55);
  EXPECT_EQ(c.variable, "OMP_WAIT_POLICY");
  EXPECT_EQ(c.value, "PASSIVE");
  c = choose_wait_policy(nullptr, nullptr, kContendedBusyShare);
  EXPECT_EQ(c.value, "PASSIVE") << "the threshold itself counts as shared";
}

TEST(WaitPolicy, TheUsersChoiceIsKept) {
  for (auto [policy, spin] : {std::pair<const char*, const char*>{"ACTIVE", nullptr},
                              {nullptr, "500"},
                              {"passive", "0"}}) {
    const WaitPolicyChoice c = choose_wait_policy(policy, spin, 0.0);
    EXPECT_TRUE(c.variable.empty());
    EXPECT_NE(c.reason.find("set by the user"), std::string::npos);
  }
}

TEST(WaitPolicyErrors, UnreadableOrMalformedStatIsPassive) {
  EXPECT_FALSE(cpu_times("", {}));
  EXPECT_FALSE(cpu_times("intr 5\n", {}));
  EXPECT_FALSE(cpu_times("cpu0 1 2 x 4 5\n", {})) << "a non-number";
  EXPECT_FALSE(cpu_times("cpu0 1 2 3\n", {})) << "too few fields";
  EXPECT_FALSE(cpu_times(kBefore, {7})) << "no such cpu";
  EXPECT_FALSE(busy_share(kAfter, kBefore, {})) << "time went backwards";
  EXPECT_FALSE(busy_share(kBefore, kBefore, {})) << "no time passed";
  const WaitPolicyChoice c = choose_wait_policy(nullptr, nullptr, std::nullopt);
  EXPECT_EQ(c.variable, "OMP_WAIT_POLICY");
  EXPECT_EQ(c.value, "PASSIVE");
  EXPECT_NE(c.reason.find("unknown"), std::string::npos);
}
