// torchinfer-qa-line end to end: the detector-only rule, a clean stop on
// SIGINT, and the command-line errors.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <set>

#include "qa_run.h"

using nlohmann::json;
using namespace torchinfer::test;

namespace {

std::string app() {
  return qa_app();
}
std::string model() {
  return qa_model();
}
std::string clip() {
  return qa_clip();
}
using Output = QaOutput;
Output parse_output(const std::string& text) {
  return parse_qa_output(text);
}

}  // namespace

// The decisions against the clip's truth are in test_two_stage_demo.cpp.

// Without a classifier the detector's defect boxes on the part are the
// evidence and the threshold reaches the rule: at 0.9 a part is rejected
// exactly when a defect class reached 0.9 on it, and the clip's two weakest
// true defects (a missing hole at ~0.87 on part 9, a chip at ~0.70 on the
// last washer) no longer reject. Each part is still decided once.
// The same lines go to an MQTT broker (--mqtt-host): a real mosquitto and
// mosquitto_sub, which exits after the 14 lines of the run.
TEST(QaLine, DetectorOnlyThresholdDecidesFromTheBestViews) {
  const std::string port = std::to_string(free_port());
  Child broker({"/usr/sbin/mosquitto", "-v", "-p", port});
  ASSERT_NE(broker.wait_line(true, "running", 20), "") << broker.err();
  // Subscribed before the first decision.
  const std::unique_ptr<Child> subscriber =
      subscribed_mosquitto_sub(broker, port, {"-t", "line1/qa", "-q", "1", "-C", "14"});
  ASSERT_TRUE(subscriber);
  Child& sub = *subscriber;
  const Result r = run({app(), "--clip", clip(), "--model", model(), "--classifier", "none",
                        "--quiet", "--defect-threshold", "0.9", "--mqtt-host", "127.0.0.1",
                        "--mqtt-port", port, "--mqtt-topic", "line1/qa"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(sub.wait_exit(30), 0) << sub.err();
  std::string published;
  for (const auto& l : sub.out_lines()) published += l + "\n";
  EXPECT_EQ(published, r.out) << "every decision and the summary, in order";
  const Output o = parse_output(r.out);
  int rejected = 0;
  std::set<int> ids;
  for (const json& d : o.parts) {
    EXPECT_TRUE(ids.insert(d["part"].get<int>()).second) << d;
    EXPECT_EQ(d["evidence"]["rule"], "max") << d;
    EXPECT_FALSE(d.contains("code")) << "no --codes: " << d;
    std::vector<std::string> above;
    for (const auto& [label, c] : d["evidence"]["scores"].items())
      if (c.get<double>() >= 0.9) above.push_back(label);
    std::vector<std::string> listed;
    for (const json& f : d["defects"]) listed.push_back(f["class"]);
    std::sort(listed.begin(), listed.end());
    EXPECT_EQ(listed, above) << d;
    EXPECT_EQ(d["verdict"], above.empty() ? "pass" : "reject") << d;
    rejected += !above.empty();
  }
  EXPECT_EQ(o.summary["rejected"], rejected);
  EXPECT_EQ(rejected, 7) << "the missing hole at ~0.87 and the chip at ~0.70 pass";
  EXPECT_EQ(o.summary["passed"].get<int>() + rejected, 13);
  // torchnms suppress-contained drops the half-bracket boxes inside a
  // bracket before they become tracks (there were 2 without it).
  EXPECT_EQ(o.summary["duplicates"], 0) << "half-bracket boxes inside a bracket are not parts";
  EXPECT_FALSE(o.summary.contains("scores")) << "no --truth";
  EXPECT_FALSE(o.summary.contains("codes")) << "no --codes";
}

// SIGINT in the middle of the clip (played at its own pace): EOS drains the
// pipeline, the parts in view are decided, the counts printed, exit 0.
TEST(QaLine, SigintStopsCleanlyWithFinalCounts) {
  Child c({app(), "--model", model(), "--classifier", qa_classifier(), "--source",
           "filesrc location=" + clip() +
               " ! matroskademux ! jpegdec ! videoconvert ! video/x-raw,format=YUY2 ! "
               "identity sync=true"},
          {});
  // The first part leaves the view after ~2 s of the clip.
  ASSERT_NE(c.wait_line(false, "\"event\":\"part\"", 120), "") << c.err();
  c.signal(SIGINT);
  ASSERT_EQ(c.wait_exit(120), 0) << c.err();
  const std::string err = c.err();
  EXPECT_NE(err.find("qa-line: stopping: draining"), std::string::npos) << err;
  EXPECT_NE(err.find("qa-line: counts: "), std::string::npos) << err;
  EXPECT_NE(err.find("stopped by signal"), std::string::npos) << err;
  std::string text;
  for (const auto& l : c.out_lines()) text += l + "\n";
  const Output o = parse_output(text);
  EXPECT_EQ(o.summary["interrupted"], true);
  EXPECT_LT(o.summary["frames"].get<int>(), 300) << "stopped before the clip's end";
  EXPECT_GE(o.parts.size(), 2u) << "the first part, and the parts in view when stopped";
  int passed = 0, rejected = 0, incomplete = 0;
  for (const json& d : o.parts) {
    passed += d["verdict"] == "pass";
    rejected += d["verdict"] == "reject";
    incomplete += d["verdict"] == "incomplete";
  }
  EXPECT_EQ(o.summary["passed"], passed);
  EXPECT_EQ(o.summary["rejected"], rejected);
  EXPECT_EQ(o.summary["incomplete"], incomplete);
}

// A live camera that never ends stops on SIGINT too.
TEST(QaLine, SigintStopsALiveSource) {
  Child c({app(), "--model", model(), "--classifier", qa_classifier(), "--source",
           "videotestsrc is-live=true pattern=ball ! "
           "video/x-raw,format=YUY2,width=640,height=480,framerate=30/1"},
          {});
  ASSERT_NE(c.wait_line(true, "qa-line: analysing", 120), "") << c.err();
  c.signal(SIGINT);
  ASSERT_EQ(c.wait_exit(120), 0) << c.err();
  const auto lines = c.out_lines();
  ASSERT_FALSE(lines.empty());
  const json s = json::parse(lines.back());
  EXPECT_EQ(s["event"], "summary");
  EXPECT_EQ(s["interrupted"], true);
  EXPECT_GE(s["frames_inferred"].get<int>(), 1);
  EXPECT_NE(c.err().find("qa-line: counts: "), std::string::npos);
}

TEST(QaLineErrors, MissingModelIsTheElementsMessage) {
  const Result r = run(
      {app(), "--clip", clip(), "--model", "/nonexistent/m.pt", "--classifier", qa_classifier()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("qa-line: error from infer: Model file '/nonexistent/m.pt' not found"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "") << "no counts when nothing ran";
}

TEST(QaLineErrors, MissingClassifierIsTheElementsMessage) {
  const Result r =
      run({app(), "--clip", clip(), "--model", model(), "--classifier", "/nonexistent/c.pt"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("qa-line: error from classify: Model file '/nonexistent/c.pt' not found"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(QaLineErrors, MissingClipIsNamed) {
  const Result r = run({app(), "--clip", "/nonexistent/clip.mkv", "--model", model(),
                        "--classifier", qa_classifier()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("qa-line: clip /nonexistent/clip.mkv not found"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
}

// A source that fails once running: the element's message and its details.
TEST(QaLineErrors, SourceErrorIsTheElementsMessage) {
  const Result r = run({app(), "--model", model(), "--classifier", qa_classifier(), "--source",
                        "filesrc location=/nonexistent/clip.mkv ! matroskademux ! jpegdec ! "
                        "videoconvert"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("qa-line: error from filesrc0: Resource not found."), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("qa-line: details: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/nonexistent/clip.mkv"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(QaLineErrors, BadCommandLinesExitTwoWithAReason) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--defect-threshold", "1.5"}, "defect threshold must lie in 0..1"},
      {{"--defect-threshold", "-0.1"}, "defect threshold must lie in 0..1"},
      {{"--defect-threshold", "abc"}, "defect-threshold"},
      {{"--part-threshold", "7"}, "part threshold must lie in 0..1"},
      {{"--inference-interval", "0"}, "--inference-interval 0 is out of range"},
      {{"--reclassify-interval", "-2"}, "--reclassify-interval -2 is out of range"},
      {{"--tracking-type", "long-term"},
       "--tracking-type 'long-term': give short-term or zero-term"},
      {{"--defect-classes", "rust"}, "class 'rust' is not a label of " + qa_classifier()},
      {{"--classifier", "none", "--defect-classes", "rust"},
       "class 'rust' is not a label of " + model()},
      {{"--part-classes", "ok"}, "class 'ok' is not a label of " + model()},
      {{"--truth", "/nonexistent/truth.json"}, "/nonexistent/truth.json"},
      {{"--part-classes", "bracket,washer", "--defect-classes", "washer"},
       "class 'washer' is both a part and a defect class"},
      {{"--part-classes", ","}, "no part classes"},
      {{"--device", "/dev/video0"}, "give exactly one of --clip, --device, --source"},
      {{"stray"}, "unexpected argument 'stray'"},
      {{"--max-defect-area-mm2", "0.5"}, "--max-defect-area-mm2 needs --mm-per-pixel"},
      {{"--mm-per-pixel", "0.1"}, "give both, or neither"},
      {{"--max-defect-area-mm2", "0.5", "--mm-per-pixel", "0.1"}, "add --classifier none"},
      {{"--classifier", "none", "--max-defect-area-mm2", "0.5", "--mm-per-pixel", "0.1"},
       "gives no masks"},
  };
  for (const auto& [args, reason] : cases) {
    std::vector<std::string> argv = {app(),   "--clip",       clip(),         "--model",
                                     model(), "--classifier", qa_classifier()};
    argv.insert(argv.end(), args.begin(), args.end());
    const Result r = run(argv);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(reason), std::string::npos) << args[0] << ": " << r.err;
    EXPECT_EQ(r.out, "");
  }
  const Result none = run({app(), "--model", model(), "--classifier", qa_classifier()});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("give exactly one of"), std::string::npos) << none.err;
  const Result bad_launch = run({app(), "--source", "nosuchelement ! fakesink"});
  EXPECT_EQ(bad_launch.exit_code, 2);
  EXPECT_NE(bad_launch.err.find("cannot build the pipeline"), std::string::npos) << bad_launch.err;
}

// No broker: the run goes on, the lines the broker never got are counted
// and the exit status says so.
TEST(QaLineErrors, UndeliveredMqttLinesExitOne) {
  const Result r = run({app(), "--model", model(), "--classifier", qa_classifier(), "--source",
                        "videotestsrc num-buffers=5 ! video/x-raw,format=YUY2,width=640,height=480",
                        "--mqtt-host", "127.0.0.1", "--mqtt-port", std::to_string(free_port())});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("qa-line: warning: MQTT broker 127.0.0.1:"), std::string::npos) << r.err;
  const auto lines = json_lines(r.out);
  ASSERT_FALSE(lines.empty()) << "the output is still written: " << r.err;
  const std::string n = std::to_string(lines.size());
  EXPECT_NE(r.err.find(n + " of " + n + " lines not delivered to MQTT broker 127.0.0.1:"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(lines.back()["event"], "summary");
  const Result topic = run({app(), "--clip", clip(), "--model", model(), "--classifier",
                            qa_classifier(), "--mqtt-host", "127.0.0.1", "--mqtt-topic", "a/#"});
  EXPECT_EQ(topic.exit_code, 2) << topic.err;
  EXPECT_NE(topic.err.find("--mqtt-topic 'a/#'"), std::string::npos) << topic.err;
}

TEST(QaLineErrors, UnwritableOutputExitsOne) {
  const Result r = run({app(), "--clip", clip(), "--model", model(), "--classifier",
                        qa_classifier(), "--output", "/nonexistent/d.jsonl"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("qa-line: error: --output '/nonexistent/d.jsonl' cannot be opened for "
                       "writing: No such file or directory"),
            std::string::npos)
      << r.err;
}

// Each file the app writes, on a FIFO nobody reads: open() used to wait for
// a reader forever (the decisions and the video before the run, the
// snapshot after it); now the run fails naming the file, exit 1.
TEST(QaLineErrors, OutputsOnAFifoNobodyReadsFailTheRunNamingThem) {
  const std::string dir = testing::TempDir() + "qa_fifo";
  const std::string fifo_tail =
      "' is a FIFO (named pipe) that no process reads; start its reader first or give the path "
      "of a file";
  struct Case {
    std::string file, flag, message;
  };
  const std::vector<Case> cases = {
      {"decisions.jsonl", "--output", "qa-line: error: --output '"},
      {"annotated.mkv", "--out", "qa-line: error: annotated video '"},
      {"results.jsonl", "--out", "torchmetaconvert location '"},
      {"snapshot.png", "--out", "qa-line: error: snapshot '"},
  };
  for (const Case& c : cases) {
    const std::string out = dir + "/" + c.file;
    ASSERT_EQ(g_mkdir_with_parents(out.c_str(), 0755), 0);
    const std::string fifo = out + "/" + c.file;
    unlink(fifo.c_str());
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    Child run({app(), "--clip", clip(), "--model", model(), "--classifier", qa_classifier(),
               "--quiet", c.flag, c.flag == "--out" ? out : fifo});
    EXPECT_EQ(run.wait_exit(300), 1) << c.file << ": " << run.err();
    EXPECT_NE(run.err().find(c.message + fifo + fifo_tail), std::string::npos) << run.err();
    unlink(fifo.c_str());
  }
}

// A full disk loses every pass/reject line: that is an error, not a run
// that prints its counts and exits 0.
TEST(QaLineErrors, FullDiskIsAnErrorNotLostDecisions) {
  const Result r = run({app(), "--clip", clip(), "--model", model(), "--classifier",
                        qa_classifier(), "--quiet", "--output", "/dev/full"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("qa-line: error: cannot write decisions to /dev/full: No space left on "
                       "device; stopping"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("qa-line: error: decisions were lost (output not written); exit status 1"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
}

// A sidecar beside the model nested 100k levels deep (it used to crash the
// app before the pipeline ran): one line naming the file, exit 2.
TEST(QaLineErrors, HostileSidecarIsNamed) {
  const std::string dir = testing::TempDir() + "qa_hostile";
  g_mkdir_with_parents(dir.c_str(), 0755);
  const std::string m = dir + "/net.pt";
  {
    std::ifstream in(model(), std::ios::binary);
    std::ofstream(m, std::ios::binary) << in.rdbuf();
    std::ofstream(dir + "/net.json")
        << "{\"labels\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  }
  const Result r = run({app(), "--clip", clip(), "--model", m, "--classifier", qa_classifier()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(
      r.err.find("qa-line: model config '" + dir + "/net.json': nested deeper than 64 levels"),
      std::string::npos)
      << r.err;
}

namespace {

// `from` copied to `to` byte for byte.
void copy_file(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  std::ofstream out(to, std::ios::binary);
  out << in.rdbuf();
  ASSERT_TRUE(in && out) << from << " -> " << to;
}

// The clip's truth with `change` applied, written to a file of its own.
std::string changed_truth(const std::string& name, const std::function<void(json&)>& change) {
  json t = qa_truth();
  change(t);
  const std::string path = testing::TempDir() + name;
  std::ofstream(path) << t.dump();
  return path;
}

}  // namespace

// Paths are only values: a model, a classifier and an output folder whose
// names hold quotes, an apostrophe and spaces run the demo as the plain
// ones do, with the sidecars found as "<model>.pt.json" (the element's
// fallback) and their labels files beside them.
TEST(QaLine, PathsWithQuotesAndSpacesRunTheDemo) {
  const std::string dir = testing::TempDir() + "qa dir \"quoted\" it's";
  ASSERT_EQ(g_mkdir_with_parents(dir.c_str(), 0755), 0);
  const std::string demo = qa_root() + "/models/demo/";
  const std::string m = dir + "/parts \"detector\".pt", c = dir + "/defect 'classifier'.pt";
  copy_file(qa_model(), m);
  copy_file(demo + "parts_detector.json", m + ".json");
  copy_file(demo + "parts_detector.labels", dir + "/parts_detector.labels");
  copy_file(qa_classifier(), c);
  copy_file(demo + "defect_classifier.json", c + ".json");
  copy_file(demo + "defect_classifier.labels", dir + "/defect_classifier.labels");
  const std::string out = dir + "/out \"1\"";
  const Result r =
      run({app(), "--clip", clip(), "--model", m, "--classifier", c, "--quiet", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Output o = parse_output(r.out);
  EXPECT_EQ(o.parts.size(), 13u);
  EXPECT_EQ(o.summary["passed"], 4) << o.summary;
  EXPECT_EQ(o.summary["rejected"], 9) << o.summary;
  EXPECT_EQ(o.summary["incomplete"], 0) << o.summary;
  EXPECT_EQ(json_lines(read_file(out + "/results.jsonl")).size(), 300u);
  EXPECT_TRUE(g_file_test((out + "/annotated.mkv").c_str(), G_FILE_TEST_IS_REGULAR));
  // The labels came from the "<model>.pt.json" sidecars: a class neither
  // model has is named.
  const Result bad =
      run({app(), "--clip", clip(), "--model", m, "--classifier", c, "--part-classes", "ok"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("class 'ok' is not a label of " + m), std::string::npos) << bad.err;
}

// A detector given as --classifier would leave every part "incomplete"
// without a word: refused before anything runs, naming its task and where
// that comes from.
TEST(QaLineErrors, DetectorAsClassifierIsRefusedNamingItsTask) {
  const Result r = run({app(), "--clip", clip(), "--model", model(), "--classifier", model()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("qa-line: --classifier " + model() +
                       ": its task is 'detection' (model "
                       "config '" +
                       qa_root() + "/models/demo/parts_detector.json'), not classification"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
}

// 0 was the app's own "not given": as a value it is out of range like any
// other; an empty broker host would publish nothing.
TEST(QaLineErrors, ReclassifyIntervalOutOfRangeAndEmptyMqttHostAreUsageErrors) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--reclassify-interval", "0"}, "--reclassify-interval 0 is out of range"},
      {{"--reclassify-interval", "1001"}, "--reclassify-interval 1001 is out of range"},
      {{"--reclassify-interval", "2x"}, "--reclassify-interval '2x': give an integer"},
      {{"--reclassify-interval", ""}, "--reclassify-interval '': give an integer"},
      {{"--mqtt-host", ""}, "--mqtt-host '': give the broker's host name or address"},
  };
  for (const auto& [args, reason] : cases) {
    std::vector<std::string> argv = {app(),   "--clip",       clip(),         "--model",
                                     model(), "--classifier", qa_classifier()};
    argv.insert(argv.end(), args.begin(), args.end());
    const Result r = run(argv);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " '" << args[1] << "': " << r.err;
    EXPECT_NE(r.err.find(reason), std::string::npos) << args[1] << ": " << r.err;
    EXPECT_EQ(r.out, "");
  }
}

// The truth of another video is refused before the run.
TEST(QaLineErrors, TruthOfAnotherVideoIsRefusedBeforeTheRun) {
  const std::string truth =
      changed_truth("qa_other_video.json", [](json& t) { t["video"] = "other.mkv"; });
  const Result r = run({app(), "--clip", clip(), "--model", model(), "--classifier",
                        qa_classifier(), "--truth", truth});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("qa-line: truth file '" + truth + "' is the truth of video 'other.mkv' (" +
                       testing::TempDir() + "other.mkv), not of the clip '" + clip() +
                       "'; give the clip's own truth file"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
}

// A truth of the same name but another frame size or length: found on the
// first frame that differs, the run stops and nothing is scored.
TEST(QaLineErrors, TruthOfAnotherSizeOrLengthIsNotScored) {
  const std::string small = changed_truth("qa_small.truth.json", [](json& t) { t["width"] = 320; });
  const std::string shorter = changed_truth("qa_short.truth.json", [](json& t) {
    t["num_frames"] = 200;
    t["frames"].erase(t["frames"].begin() + 200, t["frames"].end());
  });
  const std::string longer = changed_truth("qa_long.truth.json", [](json& t) {
    t["num_frames"] = 301;
    t["frames"].push_back({{"frame", 300}, {"objects", json::array()}});
  });
  const std::vector<std::pair<std::string, std::string>> cases = {
      {small, "is for 320x480 frames, the clip's are 640x480; give the clip's own truth file"},
      {shorter, "has 200 frames, the clip has more; give the clip's own truth file"},
      {longer, "the clip ended after 300 frames, truth file '" + longer + "' has 301"},
  };
  for (const auto& [truth, reason] : cases) {
    const Result r = run({app(), "--clip", clip(), "--model", model(), "--classifier", "none",
                          "--quiet", "--truth", truth});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("qa-line: error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(reason), std::string::npos) << r.err;
    const auto lines = json_lines(r.out);
    ASSERT_FALSE(lines.empty()) << truth;
    EXPECT_EQ(lines.back()["event"], "summary");
    EXPECT_FALSE(lines.back().contains("scores")) << "nothing scored against another clip";
  }
}

// --anomaly takes only an anomaly model: a detector or a classifier would
// judge nothing and every part would pass; a model without a sidecar says
// no task. Refused before anything runs, naming the model and the fix; an
// empty path is a usage error like --mqtt-host ''.
TEST(QaLineErrors, AnomalyOptionTakesOnlyAnAnomalyModel) {
  const std::string root = qa_root();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {model(), "qa-line: --anomaly " + model() + ": its task is 'detection' (model config '" +
                    root + "/models/demo/parts_detector.json'), not anomaly"},
      {qa_classifier(), "qa-line: --anomaly " + qa_classifier() +
                            ": its task is 'classification' (model config '" + root +
                            "/models/demo/defect_classifier.json'), not anomaly"},
      {"/nonexistent/padim.pt",
       "qa-line: --anomaly /nonexistent/padim.pt: no sidecar (/nonexistent/padim.json) says its "
       "task"},
      {"", "qa-line: --anomaly '': give the anomaly model's file"},
  };
  for (const auto& [anomaly, reason] : cases) {
    const Result r = run({app(), "--clip", clip(), "--model", model(), "--anomaly", anomaly});
    EXPECT_EQ(r.exit_code, 2) << anomaly << ": " << r.err;
    EXPECT_NE(r.err.find(reason), std::string::npos) << anomaly << ": " << r.err;
    EXPECT_EQ(r.out, "");
  }
}

// An anomaly model whose file is corrupt fails the start with the
// element's message (exit 1), as a missing classifier does.
TEST(QaLineErrors, CorruptAnomalyModelIsTheElementsMessage) {
  const std::string dir = testing::TempDir() + "qa_bad_anomaly";
  g_mkdir_with_parents(dir.c_str(), 0755);
  std::ofstream(dir + "/padim.pt") << "not a TorchScript archive";
  std::ofstream(dir + "/padim.json") << read_file(qa_root() + "/models/demo/part_anomaly.json");
  const Result r = run({app(), "--clip", clip(), "--model", model(), "--classifier", "none",
                        "--anomaly", dir + "/padim.pt", "--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("qa-line: error from anomaly:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(dir + "/padim.pt"), std::string::npos) << r.err;
}
