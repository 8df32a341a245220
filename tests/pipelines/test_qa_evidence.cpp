// torchinfer-qa-line --evidence on the demo clip: every reject has a
// decodable snapshot (the frame it names), a crop of the part's box and a
// clip of the frames from pre_s before to post_s after its decision; the
// MQTT message carries the same paths. A full disk and an unusable folder
// lose evidence, never decisions: a WARNING with counts, every part still
// decided, exit status 3 (pipelines/README.md).
#include <gst/gst.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <opencv2/imgcodecs.hpp>
#include <set>

#include "../common/decode_clip.h"
#include "qa_run.h"

using nlohmann::json;
using namespace torchinfer::test;
namespace fs = std::filesystem;

namespace {

// line.mkv's frame k is at k/30 s, stored in whole milliseconds.
std::int64_t clip_pts(int k) {
  return std::llround(k * 1000.0 / 30) * 1000000;
}

// The clip frames of an event at `pts`: from pre before to post after, cut
// by the clip's 300 frames (every ring frame a JPEG: no keyframe to go back
// to).
int frames_between(std::int64_t pts, double pre, double post) {
  int n = 0;
  for (int k = 0; k < 300; ++k)
    n += clip_pts(k) >= pts - std::llround(pre * 1e9) &&
         clip_pts(k) <= pts + std::llround(post * 1e9);
  return n;
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

std::string scratch(const std::string& name) {
  const std::string dir = testing::TempDir() + "qa-evidence-" + name;
  fs::remove_all(dir);
  return dir;
}

// Runs the app through sh: `limits` are shell commands before exec (ulimit).
Result run_app(const std::vector<std::string>& args, const std::string& limits = "") {
  std::string line = limits + " exec";
  for (const auto& a : args) {
    gchar* q = g_shell_quote(a.c_str());
    line += std::string(" ") + q;
    g_free(q);
  }
  return run({"/bin/sh", "-c", line});
}

// A reject's snapshot and crop, with the box and frame the decision names.
struct Evidence {
  cv::Mat snapshot, crop;
  cv::Rect box;
  int frame = 0;
};

// Mean absolute differences (0..255, decode_clip.h): JPEG loss stays below
// kSameJpeg; parts move 12 px a frame, so the same box one frame off or a
// crop cut 12 px off differs by more than kOtherPixels. Measured on the 9
// rejects ("[ measured ]" lines): crop 1.1-1.7 (12 px off 13.5-28),
// snapshot against the clip 0.9-1.4 (a neighbouring frame 15-33).
constexpr double kSameJpeg = 4, kOtherPixels = 8;

// Content, not sizes: the crop is the snapshot's box, and the snapshot is
// the clip's frame it names, not its neighbours (one decoding pass for
// every reject).
void expect_content(const std::vector<Evidence>& evidence) {
  std::vector<GstClockTime> at;
  for (const Evidence& e : evidence)
    for (int k : {e.frame, std::max(e.frame - 1, 0), std::min(e.frame + 1, 299)})
      at.push_back(static_cast<GstClockTime>(clip_pts(k)));
  const std::vector<cv::Mat> frames = decode_frames_at(qa_clip(), at);
  for (std::size_t i = 0; i < evidence.size(); ++i) {
    const Evidence& e = evidence[i];
    SCOPED_TRACE("snapshot frame " + std::to_string(e.frame));
    const cv::Rect in = undrawn(e.box);
    ASSERT_FALSE(in.empty());
    const cv::Mat mine = region(e.crop, in - e.box.tl());
    const cv::Point off(in.x + in.width + 12 <= 640 ? 12 : -12, 0);
    const cv::Mat shown = region(e.snapshot, in);
    const double crop_same = mean_abs_diff(mine, shown);
    const double crop_off = mean_abs_diff(mine, region(e.snapshot, in + off));
    // Levels fitted (decode_clip.h): the snapshot stretches the clip's
    // full-range frames as video range.
    double gain = 0;
    const double at_frame = mean_abs_diff_levels(shown, region(frames[3 * i], in), &gain);
    double neighbour = 255;
    for (std::size_t k : {3 * i + 1, 3 * i + 2})
      if (at[k] != at[3 * i])
        neighbour = std::min(neighbour, mean_abs_diff_levels(shown, region(frames[k], in)));
    std::cout << "[ measured ] frame " << e.frame << ": crop " << crop_same << " (12 px off "
              << crop_off << "), snapshot against the clip " << at_frame << " (gain " << gain
              << ", neighbour " << neighbour << ")\n";
    EXPECT_LT(crop_same, kSameJpeg);
    EXPECT_GT(crop_off, kOtherPixels) << "the check could not tell a misplaced crop";
    EXPECT_LT(at_frame, kSameJpeg);
    EXPECT_GT(neighbour, kOtherPixels) << "the check could not tell a neighbouring frame";
  }
}

std::vector<std::string> base_args() {
  return {qa_app(),   "--clip",       qa_clip(),       "--model",
          qa_model(), "--classifier", qa_classifier(), "--quiet"};
}

}  // namespace

// The demo clip has 9 rejects: each one's three files, exactly; the MQTT
// broker gets the same lines.
TEST(QaLineEvidence, EveryRejectHasADecodableSnapshotCropAndClip) {
  const std::string dir = scratch("all");
  const std::string port = std::to_string(free_port());
  Child broker({"/usr/sbin/mosquitto", "-v", "-p", port});
  ASSERT_NE(broker.wait_line(true, "running", 20), "") << broker.err();
  // Subscribed before the first decision.
  const std::unique_ptr<Child> subscriber =
      subscribed_mosquitto_sub(broker, port, {"-t", "qa/evidence", "-q", "1", "-C", "14"});
  ASSERT_TRUE(subscriber);
  Child& sub = *subscriber;
  auto args = base_args();
  for (const char* a : {"--evidence", dir.c_str(), "--evidence-pre-s", "1", "--evidence-post-s",
                        "0.5", "--mqtt-host", "127.0.0.1", "--mqtt-topic", "qa/evidence"})
    args.push_back(a);
  args.push_back("--mqtt-port");
  args.push_back(port);
  const Result r = run_app(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("WARNING"), std::string::npos) << r.err;
  ASSERT_EQ(sub.wait_exit(30), 0) << sub.err();
  std::string published;
  for (const auto& l : sub.out_lines()) published += l + "\n";
  EXPECT_EQ(published, r.out) << "the MQTT messages carry the evidence paths too";

  const QaOutput o = parse_qa_output(r.out);
  ASSERT_EQ(o.parts.size(), 13u);
  int rejects = 0;
  std::set<std::string> files;
  std::vector<Evidence> evidence;
  for (const json& d : o.parts) {
    const json& e = d["evidence"];
    if (d["verdict"] != "reject") {
      EXPECT_FALSE(e.contains("snapshot")) << d;
      continue;
    }
    ++rejects;
    const std::string n = std::to_string(rejects);
    EXPECT_EQ(e["snapshot"], dir + "/qa-line-" + n + "-snapshot.jpg");
    EXPECT_EQ(e["crop"], dir + "/qa-line-" + n + "-crop.jpg");
    EXPECT_EQ(e["clip"], dir + "/qa-line-" + n + "-clip.mkv");
    for (const char* k : {"snapshot", "crop", "clip"}) files.insert(e[k].get<std::string>());
    // The snapshot is the whole frame, taken while the part was in view and
    // whole (2 px from every edge); the crop is the part's box in it.
    const cv::Mat snap = cv::imread(e["snapshot"].get<std::string>());
    ASSERT_FALSE(snap.empty()) << d;
    EXPECT_EQ(snap.cols, 640);
    EXPECT_EQ(snap.rows, 480);
    const int frame = e["snapshot_frame"];
    EXPECT_GE(frame, d["first_frame"].get<int>()) << d;
    EXPECT_LE(frame, d["last_frame"].get<int>()) << d;
    const json& box = e["crop_box"];
    EXPECT_GE(box["x"].get<int>(), 1) << d;
    EXPECT_GE(box["y"].get<int>(), 1) << d;
    EXPECT_LE(box["x"].get<int>() + box["width"].get<int>(), 639) << d;
    EXPECT_LE(box["y"].get<int>() + box["height"].get<int>(), 479) << d;
    const cv::Mat crop = cv::imread(e["crop"].get<std::string>());
    ASSERT_FALSE(crop.empty()) << d;
    EXPECT_EQ(crop.cols, box["width"].get<int>()) << d;
    EXPECT_EQ(crop.rows, box["height"].get<int>()) << d;
    evidence.push_back(
        {snap, crop, cv::Rect(box["x"], box["y"], box["width"], box["height"]), frame});
    // The clip: the frames from 1 s before to 0.5 s after the decision.
    const json rec = read_json(dir + "/qa-line-" + n + "-event.json");
    EXPECT_EQ(rec["track_id"], d["part"]);
    EXPECT_TRUE(rec["clip_written"].get<bool>()) << rec;
    const std::int64_t pts = rec["pts_ns"];
    EXPECT_EQ(pts, d["reason"] == "eos" ? clip_pts(299) : d["last_pts"].get<std::int64_t>()) << d;
    const Decoded clip = decode_clip(e["clip"]);
    ASSERT_TRUE(clip.ok) << e["clip"] << ": " << clip.error;
    const int expected = frames_between(pts, 1.0, 0.5);
    EXPECT_EQ(clip.frames, expected) << d;
    EXPECT_NEAR(rec["clip_seconds"].get<double>(), expected / 30.0, 0.002) << rec;
    EXPECT_EQ(clip.first, 0u);
  }
  EXPECT_EQ(rejects, 9);
  EXPECT_EQ(files.size(), 27u);
  expect_content(evidence);
  const json& s = o.summary["evidence"];
  EXPECT_EQ(s["rejects"], 9);
  EXPECT_EQ(s["events"], 9);
  EXPECT_EQ(s["snapshots"], 9);
  EXPECT_EQ(s["crops"], 9);
  EXPECT_EQ(s["clips"], 9);
  EXPECT_EQ(s["write_failures"], 0);
  EXPECT_EQ(s["queue_dropped"], 0);
  EXPECT_EQ(s["ring_evicted_early"], 0);
  EXPECT_EQ(s["frames_encoded"], 300);
  EXPECT_GT(s["ring_peak_bytes"].get<std::uint64_t>(), 0u);
  EXPECT_GT(s["best_frame_copies"].get<int>(), 0);
}

// RLIMIT_FSIZE of 1 KiB (SIGXFSZ ignored: writes fail with EFBIG), as a full
// disk: no evidence file fits, decisions (a pipe) still go out.
TEST(QaLineEvidence, FullDiskIsAWarningWithCountsAndExitThree) {
  const std::string dir = scratch("full");
  auto args = base_args();
  args.push_back("--evidence");
  args.push_back(dir);
  const Result r = run_app(args, "trap '' XFSZ; ulimit -f 2;");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  const QaOutput o = parse_qa_output(r.out);
  EXPECT_EQ(o.parts.size(), 13u) << "every part still decided";
  EXPECT_EQ(o.summary["rejected"], 9);
  const json& s = o.summary["evidence"];
  EXPECT_EQ(s["events"], 9);
  EXPECT_EQ(s["snapshots"].get<int>() + s["crops"].get<int>() + s["clips"].get<int>(), 0) << s;
  EXPECT_EQ(s["write_failures"], 27) << s;
  EXPECT_NE(s["last_error"].get<std::string>().find("File too large"), std::string::npos) << s;
  EXPECT_NE(r.err.find("qa-line: WARNING: evidence lost: 27 files not written (9 events: 0 "
                       "snapshots, 0 crops, 0 clips written), 0 frames dropped before the "
                       "encoder, 0 frames pushed out of the ring early; last error: "),
            std::string::npos)
      << r.err;
  for (const json& d : o.parts) {
    if (d["verdict"] == "reject") {
      EXPECT_FALSE(fs::exists(d["evidence"]["snapshot"].get<std::string>())) << d;
    }
  }
}

// A folder that cannot be made (its parent is a regular file; root ignores
// modes): a WARNING at the start, the line runs on, every reject counted.
TEST(QaLineEvidence, UnusableFolderIsAWarningAndTheLineRunsOn) {
  const std::string base = scratch("unusable");
  fs::create_directories(base);
  { std::ofstream(base + "/file") << "x"; }
  const std::string dir = base + "/file/evidence";
  auto args = base_args();
  args.push_back("--evidence");
  args.push_back(dir);
  const Result r = run_app(args);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("qa-line: WARNING: --evidence " + dir + ": "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the line runs on without evidence"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("qa-line: WARNING: evidence: 9 of 9 rejects have no evidence"),
            std::string::npos)
      << r.err;
  const QaOutput o = parse_qa_output(r.out);
  EXPECT_EQ(o.parts.size(), 13u);
  for (const json& d : o.parts) EXPECT_FALSE(d["evidence"].contains("snapshot")) << d;
  EXPECT_EQ(o.summary["evidence"]["unrecorded"], 9);
  EXPECT_EQ(o.summary["evidence"]["rejects"], 9);
}

TEST(QaLineEvidenceErrors, BadEvidenceOptionsExitTwo) {
  const std::string dir = scratch("bad");
  struct Case {
    std::vector<std::string> extra;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--evidence-pre-s", "1"}, "qa-line: --evidence-* options need --evidence DIR"},
      {{"--evidence", ""}, "qa-line: --evidence '': give the folder for the evidence files"},
      {{"--evidence", dir, "--evidence-pre-s", "31"},
       "error: --evidence-pre-s 31 is out of range: give a number from 0 to 30"},
      {{"--evidence", dir, "--evidence-post-s", "-1"},
       "error: --evidence-post-s -1 is out of range: give a number from 0 to 30"},
      {{"--evidence", dir, "--evidence-post-s", "nan"},
       "error: --evidence-post-s nan is out of range"},
      {{"--evidence", dir, "--evidence-pre-s", "2s"},
       "qa-line: --evidence-pre-s '2s': give seconds from 0 to 30"},
      {{"--evidence", dir, "--evidence-max-events", "0"},
       "error: --evidence-max-events 0 is out of range: give an integer from 1 to 1000000"},
      {{"--evidence", dir, "--evidence-max-bytes", "-5"},
       "error: --evidence-max-bytes -5 is out of range"},
      {{"--evidence", dir, "--evidence-encoder", "vp9"},
       "qa-line: --evidence-encoder 'vp9': give jpeg or h264"},
  };
  for (const auto& c : cases) {
    auto args = base_args();
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    const Result r = run(args);
    EXPECT_EQ(r.exit_code, 2) << c.message << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
  EXPECT_FALSE(fs::exists(dir)) << "nothing made for a refused command line";
}

// With --gate the decision, and so the clip's event, is the crossing: the 8
// rejects among the 12 parts that cross x = 320 each get their files; the
// part that never reaches it is not decided and keeps nothing.
TEST(QaLineEvidence, AtTheGateEachRejectHasItsFiles) {
  const std::string dir = scratch("gate");
  auto args = base_args();
  for (const char* a : {"--gate", "320,0,320,480", "--evidence", dir.c_str()}) args.push_back(a);
  const Result r = run_app(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const QaOutput o = parse_qa_output(r.out);
  ASSERT_EQ(o.parts.size(), 12u);
  int rejects = 0;
  for (const json& d : o.parts) {
    if (d["verdict"] != "reject") continue;
    ++rejects;
    const std::string n = std::to_string(rejects);
    EXPECT_EQ(d["evidence"]["clip"], dir + "/qa-line-" + n + "-clip.mkv") << d;
    const json rec = read_json(dir + "/qa-line-" + n + "-event.json");
    EXPECT_TRUE(rec["snapshot_written"].get<bool>() && rec["crop_written"].get<bool>() &&
                rec["clip_written"].get<bool>())
        << rec;
    // The crossing is mid-clip: a whole 2 s + 1 s clip (91 frames).
    EXPECT_EQ(decode_clip(d["evidence"]["clip"]).frames,
              frames_between(rec["pts_ns"].get<std::int64_t>(), 2.0, 1.0))
        << d;
  }
  EXPECT_EQ(rejects, 8);
  const json& s = o.summary["evidence"];
  EXPECT_EQ(s["events"], 8);
  EXPECT_EQ(s["snapshots"], 8);
  EXPECT_EQ(s["crops"], 8);
  EXPECT_EQ(s["clips"], 8);
  EXPECT_EQ(s["write_failures"], 0);
}
