// The installed CLIs: torchinfer-selfcheck and torchinfer-dump-frames.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

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

void expect_lines(const std::string& out, std::initializer_list<std::string> keys) {
  for (const std::string& k : keys)
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

// The sidecar's input_layout (and input_dtype) reach the engine as they do
// in the element: the self-check once fed this model NCHW and failed on it.
TEST(SelfCheck, RunsAnNhwcModelAsTheElementDoes) {
  const Result r = run(
      selfcheck("--model " + torchinfer::test::model_path("lenet_nhwc_uint8.pt") + " --cores 0"));
  ASSERT_EQ(r.code, 0) << r.out;
  expect_lines(r.out, {"model: ", "input: float32 NHWC 28x28x1, handed to the model as [N,H,W,C]"});
  // A model that takes bytes is fed (and reported) as bytes, as the element does.
  const Result u =
      run(selfcheck("--model " + torchinfer::test::model_path("uint8_input.pt") + " --cores 0"));
  ASSERT_EQ(u.code, 0) << u.out;
  expect_lines(u.out, {"precision: fp32 (requested auto); auto: fp32 (uint8-input model converts "
                       "its input itself)",
                       "input: uint8 NHWC 6x8x3, seen zero-copy as channels_last NCHW"});
}

TEST(SelfCheck, ReportsWherePrecisionAutoDecided) {
  const std::string dir = testing::TempDir() + "selfcheck_precision_cache";
  std::filesystem::remove_all(dir);
  const std::string cmd =
      "TORCHINFER_CACHE_DIR=" + dir + " " +
      selfcheck("--model " + torchinfer::test::model_path("tiny_classifier.pt") +
                " --threads 1 --batch 2 --probe-bf16");
  const Result first = run(cmd);
  ASSERT_EQ(first.code, 0) << first.out;
  expect_lines(first.out, {"precision: fp32 (requested auto); auto: fp32 timed at batch 2: ",
                           "precision source: timed this start, saved to " + dir + "/precision-"});
  const Result again = run(cmd);
  ASSERT_EQ(again.code, 0) << again.out;
  expect_lines(again.out, {"precision: fp32 (requested auto); auto: fp32 (cached ",
                           "precision source: cached decision " + dir + "/precision-"});
  std::filesystem::remove_all(dir);
}

TEST(SelfCheck, UnwritablePrecisionCacheWarns) {
  const std::string file = testing::TempDir() + "selfcheck_plain_file";
  std::ofstream(file) << "x";
  const Result r = run("TORCHINFER_CACHE_DIR=" + file + "/cache " +
                       selfcheck("--model " + torchinfer::test::model_path("tiny_classifier.pt") +
                                 " --threads 1 --probe-bf16"));
  ASSERT_EQ(r.code, 0) << r.out;
  expect_lines(r.out, {"precision source: timed this start, not cached",
                       "WARNING precision cache: not writable"});
  EXPECT_NE(r.out.find("fix: set TORCHINFER_CACHE_DIR"), std::string::npos) << r.out;
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
  // 2, as every app for a bad command line.
  EXPECT_EQ(run(selfcheck("--precision fp16")).code, 2);
  EXPECT_EQ(run(selfcheck("--bogus")).code, 2);
  EXPECT_EQ(run(selfcheck("--batch 0")).code, 2);
  EXPECT_EQ(run(selfcheck("--batch x")).code, 2);
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
  EXPECT_EQ(run(tool("TORCHINFER_DUMP_FRAMES") + " --clip x.mkv").code, 2);
}

// ---- models/quantize.py ----------------------------------------------------

namespace {

std::string source_root() {
  const char* d = std::getenv("TORCHINFER_SOURCE_ROOT");
  return d ? d : ".";
}

std::string quantize(const std::string& out, const std::string& extra) {
  const std::string root = source_root();
  return "/usr/bin/python3 " + root + "/models/quantize.py --module " + root +
         "/models/make_quantized_test_models.py:Relu6Net --random-frames 40 --input 48x32 "
         "--out " +
         out + " " + extra;
}

struct ScratchDir {
  std::string path;
  ScratchDir() {
    char tmpl[] = "/tmp/torchinfer-quantize-XXXXXX";
    const char* d = mkdtemp(tmpl);
    path = d ? d : "/nonexistent";
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
};

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

bool exists(const std::string& path) {
  return std::ifstream(path).good();
}

}  // namespace

TEST(Quantize, FoldsRelu6PassesTheGuardAndTheEngineTakesTheInputQuantization) {
  const ScratchDir scratch;
  const std::string& dir = scratch.path;
  // The bound holds on every x86 kind CI runs on: oneDNN's int8 kernels gave
  // MAE 0.0014 with VNNI (Intel, AVX-512) and 0.0105 on plain AVX2 (AMD
  // EPYC), 0.0067 there since the classifier reads the pooled int8 tensor.
  const Result r = run(quantize(dir + "/r6.pt", "--min-top1 1 --max-mae 0.02"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("folded 3 ReLU6"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("turned 1 Linear after global pooling into 1x1 convolutions"),
            std::string::npos)
      << r.out;
  const auto side = read_json(dir + "/r6.json");
  EXPECT_EQ(side.at("precision"), "int8");
  EXPECT_EQ(side.at("input_width"), 48);
  EXPECT_EQ(side.at("input_height"), 32);
  const auto& q = side.at("quantization");
  EXPECT_EQ(q.at("relu6_folded"), 3);
  EXPECT_EQ(q.at("linear_as_conv1x1"), 1);
  EXPECT_EQ(q.at("backend"), "onednn");
  EXPECT_EQ(q.at("calibration_frames"), 28);
  EXPECT_EQ(q.at("heldout_frames"), 12);
  EXPECT_EQ(q.at("top1_agreement"), 1.0);
  EXPECT_LE(q.at("mean_abs_error").get<double>(), 0.02);
  EXPECT_EQ(q.at("forced"), false);

  const Result s = run(selfcheck("--model " + dir + "/r6.pt --threads 1"));
  ASSERT_EQ(s.code, 0) << s.out;
  EXPECT_NE(s.out.find("precision: int8"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("input quantized by the engine"), std::string::npos) << s.out;
}

TEST(Quantize, NoFoldKeepsTheRelu6) {
  const ScratchDir scratch;
  const std::string& dir = scratch.path;
  const Result r = run(quantize(dir + "/r6.pt", "--min-top1 1 --max-mae 0.02 --no-fold-relu6"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("folded"), std::string::npos) << r.out;
  EXPECT_EQ(read_json(dir + "/r6.json").at("quantization").at("relu6_folded"), 0);
}

TEST(Quantize, NoLinearAsConvKeepsTheLinear) {
  const ScratchDir scratch;
  const std::string& dir = scratch.path;
  const Result r = run(quantize(dir + "/r6.pt", "--min-top1 1 --max-mae 0.02 --no-linear-as-conv"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("folded 3 ReLU6"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("turned"), std::string::npos) << r.out;
  EXPECT_EQ(read_json(dir + "/r6.json").at("quantization").at("linear_as_conv1x1"), 0);
}

TEST(QuantizeErrors, RefusesAModelOutsideTheTolerance) {
  const ScratchDir scratch;
  const std::string& dir = scratch.path;
  const Result r = run(quantize(dir + "/r6.pt", "--max-mae 0"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("FAIL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("refusing to write"), std::string::npos) << r.out;
  EXPECT_FALSE(exists(dir + "/r6.pt"));
  EXPECT_FALSE(exists(dir + "/r6.json"));
}

TEST(QuantizeErrors, ForceWritesAFlaggedModel) {
  const ScratchDir scratch;
  const std::string& dir = scratch.path;
  const Result r = run(quantize(dir + "/r6.pt", "--max-mae 0 --force"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("WARNING: writing an int8 model that FAILED"), std::string::npos) << r.out;
  EXPECT_EQ(read_json(dir + "/r6.json").at("quantization").at("forced"), true);
}

// ---- tools the documentation runs ------------------------------------------

namespace {

std::vector<std::string> documentation_files() {
  namespace fs = std::filesystem;
  const fs::path root = source_root();
  std::vector<std::string> files = {"README.md", "models/README.md", "pipelines/README.md"};
  for (const auto& e : fs::directory_iterator(root / "docs"))
    if (e.path().extension() == ".md") files.push_back("docs/" + e.path().filename().string());
  return files;
}

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

// A line of the docs that starts with a repository script runs it directly:
// it must be executable and name the interpreter that has torch (the python3
// first on PATH has none). `python3 x.py` would pick that other one.
TEST(Docs, ScriptsTheDocsRunAreExecutableWithTheRightInterpreter) {
  namespace fs = std::filesystem;
  const std::regex direct(
      R"(^\s*(?:\$\s+)?(?:\./)?((?:models|pipelines|scripts|tests)/[\w/.-]+\.(?:py|sh))\b)");
  const std::regex bare_python(R"((?:^|[\s`(])python3?\s+[\w/.-]+\.py)");
  int scripts = 0;
  std::set<std::string> seen;
  for (const auto& doc : documentation_files()) {
    std::ifstream in(source_root() + "/" + doc);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      EXPECT_FALSE(std::regex_search(line, bare_python))
          << doc << ":" << n << " runs a script with python3 from PATH (no torch there); use "
          << "/usr/bin/python3 or run the script itself: " << line;
      std::smatch m;
      if (!std::regex_search(line, m, direct)) continue;
      const std::string rel = m[1].str();
      const std::string path = source_root() + "/" + rel;
      ASSERT_TRUE(fs::is_regular_file(path)) << doc << ":" << n << " runs missing " << rel;
      if (!seen.insert(rel).second) continue;
      ++scripts;
      EXPECT_NE(fs::status(path).permissions() & fs::perms::owner_exec, fs::perms::none)
          << doc << ":" << n << " runs " << rel << ", which is not executable";
      if (rel.size() > 3 && rel.compare(rel.size() - 3, 3, ".py") == 0)
        EXPECT_EQ(first_line(path), "#!/usr/bin/python3") << rel;
      else
        EXPECT_EQ(first_line(path).rfind("#!", 0), 0u) << rel;
    }
  }
  // export.py, quantize.py, the demo's generators and trainers, eval_detector.py.
  EXPECT_GE(scripts, 9);
  EXPECT_TRUE(seen.count("models/quantize.py"));
}

// The docs' MQTT example subscribes with mosquitto_sub.
TEST(Docs, SetupInstallsTheClientsTheDocsUse) {
  std::ifstream in(source_root() + "/scripts/setup.sh");
  const std::string setup{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  bool docs_use_sub = false;
  for (const auto& doc : documentation_files()) {
    std::ifstream d(source_root() + "/" + doc);
    const std::string text{std::istreambuf_iterator<char>(d), std::istreambuf_iterator<char>()};
    docs_use_sub = docs_use_sub || text.find("mosquitto_sub") != std::string::npos;
  }
  ASSERT_TRUE(docs_use_sub);
  EXPECT_NE(setup.find(" mosquitto-clients"), std::string::npos);
}

// ---- bad numbers on the command line ----------------------------------------

TEST(SelfCheckErrors, OutOfRangeThreadsExitTwo) {
  for (const char* bad : {"-5", "abc", "2x", "", "1025", "99999999999999999999"}) {
    const Result r = run(selfcheck(std::string("--threads '") + bad + "'"));
    EXPECT_EQ(r.code, 2) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("error: --threads '" + std::string(bad) +
                         "' is out of range: give an integer from 0 to 1024"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("torchinfer self-check"), std::string::npos) << "ran anyway: " << r.out;
  }
  EXPECT_EQ(run(selfcheck("--threads")).code, 2);
}

TEST(SelfCheckErrors, LostReportIsAnError) {
  // Only stdout to the full device; errors still reach the test.
  const Result r = run("{ " + selfcheck("") + " > /dev/full; }");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("error: the report could not be written: No space left on device"),
            std::string::npos)
      << r.out;
}

TEST(DumpFramesErrors, OutOfRangeNumbersExitTwo) {
  const std::string base = tool("TORCHINFER_DUMP_FRAMES") + " --clip x.mkv --model " +
                           torchinfer::test::model_path("tiny_classifier.pt") + " --out " +
                           testing::TempDir() + "never.raw";
  for (const auto& [opt, value, range] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"--every", "0", "1 to 1000000"},
           {"--every", "-3", "1 to 1000000"},
           {"--every", "two", "1 to 1000000"},
           {"--max", "-1", "0 to 100000000"},
           {"--max", "5k", "0 to 100000000"}}) {
    const Result r = run(base + " " + opt + " " + value);
    EXPECT_EQ(r.code, 2) << opt << " " << value << ": " << r.out;
    EXPECT_NE(r.out.find("error: " + opt + " '" + value +
                         "' is out of range: give an integer from " + range),
              std::string::npos)
        << r.out;
  }
}

// --out on a FIFO nobody reads waited for a reader forever; `timeout`
// turns a hang back into a failure (exit 124).
TEST(DumpFramesErrors, OutOnAFifoNobodyReadsFailsNamingIt) {
  const std::string clip = testing::TempDir() + "dump_fifo_clip.avi";
  ASSERT_EQ(run("gst-launch-1.0 -q videotestsrc num-buffers=2 ! "
                "video/x-raw,width=64,height=48,framerate=30/1 ! jpegenc ! avimux ! filesink "
                "location=" +
                clip)
                .code,
            0);
  const std::string fifo = testing::TempDir() + "dump_fifo.raw";
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const Result r =
      run("timeout 120 " + tool("TORCHINFER_DUMP_FRAMES") + " --clip " + clip + " --model " +
          torchinfer::test::model_path("tiny_classifier.pt") + " --out " + fifo);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("error: --out '" + fifo +
                       "' is a FIFO (named pipe) that no process reads; start its reader first "
                       "or give the path of a file"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("wrote "), std::string::npos) << r.out;
  unlink(fifo.c_str());
}

TEST(DumpFramesErrors, FullDiskIsAnError) {
  const std::string clip = testing::TempDir() + "dump_full_clip.avi";
  ASSERT_EQ(run("gst-launch-1.0 -q videotestsrc num-buffers=2 ! "
                "video/x-raw,width=64,height=48,framerate=30/1 ! jpegenc ! avimux ! filesink "
                "location=" +
                clip)
                .code,
            0);
  const Result r = run(tool("TORCHINFER_DUMP_FRAMES") + " --clip " + clip + " --model " +
                       torchinfer::test::model_path("tiny_classifier.pt") + " --out /dev/full");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("error: cannot write /dev/full: No space left on device"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("wrote "), std::string::npos) << r.out;
}
