// The malloc rule the plugin loader applies (src/engine/malloc_tuning.h):
// applied unless the user set glibc's malloc or asked for its own.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "engine/malloc_tuning.h"

using namespace torchinfer;

namespace {

MallocChoice choose(const std::map<std::string, std::string>& vars) {
  return choose_malloc_tuning([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

TEST(MallocTuning, AppliedWhenTheUserSetNothing) {
  const MallocChoice c = choose({});
  EXPECT_TRUE(c.apply);
  EXPECT_NE(c.reason.find("8 MiB"), std::string::npos) << c.reason;
  EXPECT_TRUE(choose({{"GLIBC_TUNABLES", "glibc.pthread.rseq=0"}}).apply);
  EXPECT_TRUE(choose({{"MALLOC_PERTURB_", "165"}}).apply);  // meson test sets it
  EXPECT_TRUE(choose({{"TORCHINFER_MALLOC", "kept"}}).apply);
}

TEST(MallocTuning, WhatTheUserSetIsKept) {
  for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_"}) {
    const MallocChoice c = choose({{name, "1000000"}});
    EXPECT_FALSE(c.apply) << name;
    EXPECT_NE(c.reason.find(name), std::string::npos) << c.reason;
  }
  const MallocChoice t = choose({{"GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1"}});
  EXPECT_FALSE(t.apply);
  EXPECT_NE(t.reason.find("GLIBC_TUNABLES"), std::string::npos) << t.reason;
  const MallocChoice s = choose({{"TORCHINFER_MALLOC", "system"}});
  EXPECT_FALSE(s.apply);
  EXPECT_NE(s.reason.find("TORCHINFER_MALLOC=system"), std::string::npos) << s.reason;
}
