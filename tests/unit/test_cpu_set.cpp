#include <gtest/gtest.h>

#include "common/cpu_set.h"
#include "common/error.h"

using namespace torchinfer;

TEST(CpuList, ParsesIdsAndRanges) {
  EXPECT_EQ(parse_cpu_list("0"), (std::vector<int>{0}));
  EXPECT_EQ(parse_cpu_list("2-5,8"), (std::vector<int>{2, 3, 4, 5, 8}));
  EXPECT_EQ(parse_cpu_list("8, 1-2 ,1"), (std::vector<int>{1, 2, 8}));
  EXPECT_EQ(parse_cpu_list("3-3"), (std::vector<int>{3}));
}

TEST(CpuList, FormatsCompactly) {
  EXPECT_EQ(format_cpu_list({0, 1, 2, 5}), "0-2,5");
  EXPECT_EQ(format_cpu_list({4, 0, 1}), "0-1,4");
  EXPECT_EQ(format_cpu_list({}), "");
  EXPECT_EQ(parse_cpu_list(format_cpu_list({7, 3, 4, 5, 9})), (std::vector<int>{3, 4, 5, 7, 9}));
}

TEST(CpuList, AllowedSetIsWhatTheKernelSays) {
  const auto cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  EXPECT_EQ(resolve_cpu_list(std::to_string(cpus[0]), cpus), (std::vector<int>{cpus[0]}));
}

namespace {
std::string parse_error(const std::string& text) {
  try {
    parse_cpu_list(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfigInvalid);
    return e.what();
  }
  ADD_FAILURE() << "accepted '" << text << "'";
  return {};
}
}  // namespace

TEST(CpuListErrors, Syntax) {
  for (const char* bad : {"a-b", "a", "1x", "-1", "1-", "1,,2", "1,", ",1", "1-2-3", "0x1"}) {
    const std::string msg = parse_error(bad);
    EXPECT_NE(msg.find(std::string("'") + bad + "'"), std::string::npos) << msg;
  }
}

TEST(CpuListErrors, EmptyAndBlank) {
  EXPECT_NE(parse_error("").find("empty"), std::string::npos);
  EXPECT_NE(parse_error("  ").find("empty"), std::string::npos);
}

TEST(CpuListErrors, BackwardsRange) {
  EXPECT_NE(parse_error("3-1").find("backwards"), std::string::npos);
}

TEST(CpuListErrors, TooLarge) {
  EXPECT_NE(parse_error("123456").find("too large"), std::string::npos);
  EXPECT_NE(parse_error("5000").find("above"), std::string::npos);
}

TEST(CpuListErrors, OutsideAllowedSet) {
  try {
    resolve_cpu_list("0-1,99", {0, 1});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfigInvalid);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("CPU 99 not available"), std::string::npos) << msg;
    EXPECT_NE(msg.find("allowed: 0-1"), std::string::npos) << msg;
  }
  EXPECT_THROW(resolve_cpu_list("1", {0}), Error);
}
