// The installed CLIs: torchinfer-selfcheck and torchinfer-dump-frames.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "test_paths.h"

namespace {

struct Result {
  int code = -1;
  std::string out;
};

Result run(const std::string& cmd) {
  Result r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string tool(const char* env) {
  const char* v = std::getenv(env);
  return v ? v : "false";
}

std::string selfcheck(const std::string& args) {
  return tool("TORCHINFER_SELFCHECK") + " " + args;
}

void expect_lines(const std::string& out, std::initializer_list<const char*> keys) {
  for (const char* k : keys)
    EXPECT_NE(out.find(std::string("\n  ") + k), std::string::npos) << "missing '" << k << "' in:\n"
                                                                    << out;
}

}  // namespace

TEST(SelfCheck, DescribesThisMachine) {
  const Result r = run(selfcheck(""));
  ASSERT_EQ(r.code, 0) << r.out;
  expect_lines(r.out, {"cpu: ", "isa (cpuinfo): ", "hypervisor: ", "cores: ", "threads: ", "numa: ",
                       "governor: ", "libtorch: 1.", "onednn: ", "onednn kernels: ",
                       "quantized engines: ", "affinity: not pinned"});
  EXPECT_NE(r.out.find("effective ISA "), std::string::npos);
  EXPECT_NE(r.out.find("onednn kernels: built in, enabled"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("selected: onednn"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("warning(s)"), std::string::npos);
}

TEST(SelfCheck, ReportsModelState) {
  const Result r =
      run(selfcheck("--model " + torchinfer::test::model_path("tiny_int8.pt") + " --cores 0"));
  ASSERT_EQ(r.code, 0) << r.out;
  expect_lines(r.out, {"model: ", "model state: eval, inference mode, frozen, int8 kernels",
                       "precision: int8", "timings: load ", "input: float32 NHWC 32x48x3",
                       "input alignment: 64-byte aligned", "affinity: pinned", "threads: 1"});
}

TEST(SelfCheck, OversubscriptionWarnsWithAFix) {
  const Result r = run(selfcheck("--cores 0 --threads 4"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("WARNING threads"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fix: set threads=1"), std::string::npos) << r.out;
}

TEST(SelfCheckErrors, BadCoreList) {
  for (const char* bad : {"a-b", "3-1", "99"}) {
    const Result r = run(selfcheck(std::string("--cores ") + bad));
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("error: cores '"), std::string::npos) << r.out;
  }
}

TEST(SelfCheckErrors, MissingModel) {
  const Result r = run(selfcheck("--model /nonexistent/net.pt"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("/nonexistent/net.pt"), std::string::npos) << r.out;
}

TEST(SelfCheckErrors, BadArguments) {
  EXPECT_EQ(run(selfcheck("--precision fp16")).code, 64);
  EXPECT_EQ(run(selfcheck("--bogus")).code, 64);
}

TEST(DumpFrames, WritesPreprocessedNhwcFloats) {
  const std::string clip = testing::TempDir() + "dump_clip.avi";
  ASSERT_EQ(run("gst-launch-1.0 -q videotestsrc num-buffers=6 ! "
                "video/x-raw,width=64,height=48,framerate=30/1 ! jpegenc ! avimux ! filesink "
                "location=" +
                clip)
                .code,
            0);
  const std::string out = testing::TempDir() + "dump.raw";
  const Result r =
      run(tool("TORCHINFER_DUMP_FRAMES") + " --clip " + clip + " --model " +
          torchinfer::test::model_path("tiny_classifier.pt") + " --out " + out + " --every 2");
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream h(out + ".json");
  const auto hdr = nlohmann::json::parse(h);
  EXPECT_EQ(hdr.at("count"), 3);
  EXPECT_EQ(hdr.at("width"), 48);
  EXPECT_EQ(hdr.at("height"), 32);
  EXPECT_EQ(hdr.at("layout"), "NHWC");
  std::ifstream raw(out, std::ios::binary | std::ios::ate);
  EXPECT_EQ(static_cast<long>(raw.tellg()), 3L * 32 * 48 * 3 * 4);
}

TEST(DumpFramesErrors, MissingClipAndArguments) {
  const Result r = run(tool("TORCHINFER_DUMP_FRAMES") + " --clip /nonexistent.mkv --model " +
                       torchinfer::test::model_path("tiny_classifier.pt") + " --out " +
                       testing::TempDir() + "none.raw");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(run(tool("TORCHINFER_DUMP_FRAMES") + " --clip x.mkv").code, 64);
}
