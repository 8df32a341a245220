// Tracking scores (CLEAR-MOT, IDF1), the clip truth file and the verdict
// scorer, on small sequences whose figures are worked out by hand below.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "common/error.h"
#include "eval/mot_metrics.h"
#include "eval/truth_file.h"
#include "eval/verdict_score.h"

using namespace torchinfer;

namespace {

// Boxes 10x10 on a row: A, B, C never overlap one another.
Box at(double x) {
  return {x, 0, x + 10, 10};
}
const Box kA = at(0), kB = at(100), kC = at(200);

TruthBox gt(int id, Box b, bool ignore = false, const std::string& label = "bracket") {
  return {id, label, b, ignore};
}
TrackedBox hyp(long long id, Box b, const std::string& label = "bracket") {
  return {id, label, b};
}

using Truth = std::vector<std::vector<TruthBox>>;
using Tracks = std::vector<std::vector<TrackedBox>>;

}  // namespace

TEST(MotMetrics, PerfectTracking) {
  const Truth truth(3, {gt(1, kA), gt(2, kB)});
  const Tracks tracks(3, {hyp(10, kA), hyp(20, kB)});
  const MotResult r = evaluate_mot(truth, tracks);
  EXPECT_EQ(r.frames, 3);
  EXPECT_EQ(r.truth_boxes, 6);
  EXPECT_EQ(r.matches, 6);
  EXPECT_EQ(r.misses + r.false_positives + r.id_switches, 0);
  EXPECT_DOUBLE_EQ(r.mota, 1.0);
  EXPECT_DOUBLE_EQ(r.motp, 1.0);
  EXPECT_DOUBLE_EQ(r.idf1, 1.0);
  EXPECT_EQ(r.idtp, 6);
  EXPECT_EQ(r.truth_ids, 2);
  EXPECT_EQ(r.track_ids, 2);
  EXPECT_EQ(r.count_error, 0);
  EXPECT_EQ(r.track_to_truth, (std::map<long long, int>{{10, 1}, {20, 2}}));
}

// Truth 1 in 4 frames, the track misses frame 2: MOTA = 1 - 1/4;
// IDTP 3 of 4 truth + 3 track boxes: IDF1 = 6/7.
TEST(MotMetrics, OneMiss) {
  const Truth truth(4, {gt(1, kA)});
  Tracks tracks(4, {hyp(10, kA)});
  tracks[2].clear();
  const MotResult r = evaluate_mot(truth, tracks);
  EXPECT_EQ(r.misses, 1);
  EXPECT_EQ(r.false_positives, 0);
  EXPECT_EQ(r.id_switches, 0);
  EXPECT_DOUBLE_EQ(r.mota, 0.75);
  EXPECT_EQ(r.idtp, 3);
  EXPECT_EQ(r.idfn, 1);
  EXPECT_EQ(r.idfp, 0);
  EXPECT_DOUBLE_EQ(r.idf1, 6.0 / 7.0);
  EXPECT_DOUBLE_EQ(r.idr, 0.75);
  EXPECT_DOUBLE_EQ(r.idp, 1.0);
}

// A phantom track box in frame 1: MOTA = 1 - 1/2; IDF1 = 2*2 / (2 + 3);
// the phantom is a second counted part.
TEST(MotMetrics, OneFalsePositive) {
  const Truth truth(2, {gt(1, kA)});
  Tracks tracks(2, {hyp(10, kA)});
  tracks[1].push_back(hyp(30, kC));
  const MotResult r = evaluate_mot(truth, tracks);
  EXPECT_EQ(r.false_positives, 1);
  EXPECT_EQ(r.misses, 0);
  EXPECT_DOUBLE_EQ(r.mota, 0.5);
  EXPECT_DOUBLE_EQ(r.idf1, 0.8);
  EXPECT_EQ(r.track_ids, 2);
  EXPECT_EQ(r.count_error, 1);
}

// The tracker hands the object to a new id half way: one switch, MOTA 3/4;
// only one of the two ids can be the object's: IDF1 = 2*2 / (4 + 4).
TEST(MotMetrics, OneIdSwitch) {
  const Truth truth(4, {gt(1, kA)});
  const Tracks tracks{{hyp(10, kA)}, {hyp(10, kA)}, {hyp(11, kA)}, {hyp(11, kA)}};
  const MotResult r = evaluate_mot(truth, tracks);
  EXPECT_EQ(r.id_switches, 1);
  EXPECT_EQ(r.misses + r.false_positives, 0);
  EXPECT_DOUBLE_EQ(r.mota, 0.75);
  EXPECT_EQ(r.idtp, 2);
  EXPECT_DOUBLE_EQ(r.idf1, 0.5);
  EXPECT_EQ(r.count_error, 1);
}

// Two objects whose ids swap after frame 1: two switches, MOTA 1 - 2/8;
// every id pair overlaps 2 frames: IDTP 4, IDF1 = 8/16.
TEST(MotMetrics, SwappedIds) {
  const Truth truth(4, {gt(1, kA), gt(2, kB)});
  const Tracks tracks{{hyp(10, kA), hyp(20, kB)},
                      {hyp(10, kA), hyp(20, kB)},
                      {hyp(20, kA), hyp(10, kB)},
                      {hyp(20, kA), hyp(10, kB)}};
  const MotResult r = evaluate_mot(truth, tracks);
  EXPECT_EQ(r.id_switches, 2);
  EXPECT_EQ(r.misses + r.false_positives, 0);
  EXPECT_DOUBLE_EQ(r.mota, 0.75);
  EXPECT_EQ(r.idtp, 4);
  EXPECT_DOUBLE_EQ(r.idf1, 0.5);
  EXPECT_EQ(r.count_error, 0);
}

// A track on an ignored object (mostly out of view) is neither a hit nor a
// false positive, and no track there is not a miss.
TEST(MotMetrics, IgnoredTruthCountsNowhere) {
  const Truth truth(2, {gt(1, kA), gt(2, kB, true)});
  const Tracks tracks{{hyp(10, kA), hyp(20, kB)}, {hyp(10, kA)}};
  const MotResult r = evaluate_mot(truth, tracks);
  EXPECT_EQ(r.truth_boxes, 2);
  EXPECT_EQ(r.track_boxes, 2);
  EXPECT_EQ(r.misses + r.false_positives + r.id_switches, 0);
  EXPECT_DOUBLE_EQ(r.mota, 1.0);
  EXPECT_DOUBLE_EQ(r.idf1, 1.0);
  EXPECT_EQ(r.truth_ids, 1);
  EXPECT_EQ(r.track_ids, 1);
  EXPECT_EQ(r.count_error, 0);
}

// CLEAR-MOT keeps a correspondence while it holds (IoU >= 0.5), even when a
// better-fitting track appears: that one is a false positive, not a switch.
// MOTP = (1 + 80/120) / 2.
TEST(MotMetrics, KeepsCorrespondenceWhileValid) {
  const Truth truth(2, {gt(1, kA)});
  const Tracks tracks{{hyp(10, kA)}, {hyp(10, at(2)), hyp(11, kA)}};
  const MotResult r = evaluate_mot(truth, tracks);
  EXPECT_EQ(r.id_switches, 0);
  EXPECT_EQ(r.false_positives, 1);
  EXPECT_DOUBLE_EQ(r.mota, 0.5);
  EXPECT_NEAR(r.motp, (1.0 + 80.0 / 120.0) / 2, 1e-12);
  EXPECT_EQ(r.track_majority.at(10), 1);
}

// Below the IoU threshold a box is a miss plus a false positive.
TEST(MotMetrics, OverlapBelowThresholdIsNoMatch) {
  const Truth truth(1, {gt(1, kA)});
  const Tracks tracks(1, {hyp(10, at(4))});  // IoU 60/140
  const MotResult r = evaluate_mot(truth, tracks);
  EXPECT_EQ(r.matches, 0);
  EXPECT_EQ(r.misses, 1);
  EXPECT_EQ(r.false_positives, 1);
  EXPECT_DOUBLE_EQ(r.mota, -1.0);
  EXPECT_DOUBLE_EQ(r.idf1, 0.0);
}

TEST(MotMetrics, LabelsSelectWhatIsScored) {
  // A defect box carries its part's id; only part classes are tracked.
  const Truth truth(1, {gt(1, kA), gt(1, at(2), false, "scratch")});
  const Tracks tracks(1, {hyp(10, kA), hyp(11, at(2), "scratch")});
  MotOptions parts;
  parts.labels = {"bracket", "washer"};
  const MotResult r = evaluate_mot(truth, tracks, parts);
  EXPECT_EQ(r.truth_boxes, 1);
  EXPECT_EQ(r.track_boxes, 1);
  EXPECT_DOUBLE_EQ(r.mota, 1.0);
  try {
    evaluate_mot(truth, tracks);
    FAIL() << "a truth id twice in one frame must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("frame 0: truth id 1 appears twice"), std::string::npos)
        << e.what();
  }
}

TEST(MotMetrics, RefusesBadInput) {
  const Truth truth(2);
  const Tracks tracks(3);
  try {
    evaluate_mot(truth, tracks);
    FAIL() << "frame counts differ";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("truth has 2 frames, the tracks 3"), std::string::npos);
  }
  MotOptions zero;
  zero.min_iou = 0;
  EXPECT_THROW(evaluate_mot(truth, Tracks(2), zero), Error);
  const Tracks twice(2, {hyp(5, kA), hyp(5, kB)});
  EXPECT_THROW(evaluate_mot(truth, twice), Error);
}

// Cross-checked with an independent Python implementation of the same
// definitions (the figures in the comments came from it, not from this code):
// three objects over six frames with a miss, a phantom, a switch and an
// ignored object entering.
TEST(MotMetrics, MixedSequenceMatchesReference) {
  Truth truth(6);
  Tracks tracks(6);
  for (int f = 0; f < 6; ++f) {
    truth[f] = {gt(1, at(f * 2)), gt(2, at(100 + f * 2))};
    if (f >= 3) truth[f].push_back(gt(3, kC, f < 5));  // ignored in frames 3, 4
    if (f != 1) tracks[f].push_back(hyp(10, at(f * 2 + 1)));
    tracks[f].push_back(hyp(f < 3 ? 20 : 21, at(100 + f * 2)));
    if (f >= 4) tracks[f].push_back(hyp(30, kC));
    if (f == 2) tracks[f].push_back(hyp(40, at(300)));
  }
  const MotResult r = evaluate_mot(truth, tracks);
  // Reference: gt 13, matches 12, misses 1, fp 1, switches 1,
  // MOTA 0.7692307692, MOTP 0.9242424242, IDTP 9, IDF1 9*2/(13+13) = 0.6923076923,
  // 3 truth ids, 5 track ids (models/demo/mot_reference.py).
  EXPECT_EQ(r.truth_boxes, 13);
  EXPECT_EQ(r.track_boxes, 13);
  EXPECT_EQ(r.misses, 1);
  EXPECT_EQ(r.false_positives, 1);
  EXPECT_EQ(r.id_switches, 1);
  EXPECT_NEAR(r.mota, 0.7692307692, 1e-9);
  EXPECT_EQ(r.idtp, 9);
  EXPECT_NEAR(r.idf1, 0.6923076923, 1e-9);
  EXPECT_NEAR(r.motp, 0.9242424242, 1e-9);
  EXPECT_EQ(r.truth_ids, 3);
  EXPECT_EQ(r.track_ids, 5);
}

namespace {

TruthPart part(int id, const std::string& verdict, bool defective) {
  TruthPart p;
  p.id = id;
  p.kind = "washer";
  p.label = "washer";
  p.defective = defective;
  if (defective) p.defects = {"chip"};
  p.verdict = verdict;
  if (!verdict.empty()) p.first_full = p.last_full = 0;
  return p;
}

}  // namespace

TEST(VerdictScore, PairsTracksByIdentityAndCountsWrongOnes) {
  // Parts 0..2 judged, part 3 never whole. Track 10 follows part 0, 20 part
  // 1, 31 and 30 part 2 in turn (30 is the IDF1 pair: longer).
  const std::vector<TruthPart> parts{part(0, "pass", false), part(1, "reject", true),
                                     part(2, "reject", true), part(3, "", false)};
  Truth truth(6);
  Tracks tracks(6);
  for (int f = 0; f < 6; ++f) {
    truth[f] = {gt(0, kA, false, "washer"), gt(1, kB, false, "washer"), gt(2, kC, false, "washer")};
    tracks[f] = {hyp(10, kA, "washer"), hyp(20, kB, "washer"), hyp(f < 2 ? 31 : 30, kC, "washer")};
  }
  const MotResult mot = evaluate_mot(truth, tracks);
  ASSERT_EQ(mot.track_to_truth.at(30), 2);
  const VerdictScore s =
      score_verdicts(parts, {{10, "pass"}, {20, "pass"}, {30, "reject"}, {31, "reject"}}, mot);
  EXPECT_EQ(s.judged, 3);
  EXPECT_EQ(s.correct, 2);
  EXPECT_DOUBLE_EQ(s.accuracy, 2.0 / 3.0);
  EXPECT_EQ(s.missing, 0);
  EXPECT_EQ(s.extra, 1);  // track 31: part 2 counted twice
  ASSERT_EQ(s.wrong.size(), 1u);
  EXPECT_EQ(s.wrong[0], "part 1 (washer, chip): truth reject, track 20 said pass");
  EXPECT_EQ(s.track_of_part.at(2), 30);
}

TEST(VerdictScore, PartWithoutVerdictIsMissing) {
  const std::vector<TruthPart> parts{part(0, "pass", false)};
  const Truth truth(2, {gt(0, kA, false, "washer")});
  const Tracks tracks(2, {hyp(7, kA, "washer")});
  const MotResult mot = evaluate_mot(truth, tracks);
  VerdictScore s = score_verdicts(parts, {{7, "incomplete"}}, mot);
  EXPECT_EQ(s.correct, 0);
  EXPECT_EQ(s.missing, 1);
  ASSERT_EQ(s.wrong.size(), 1u);
  EXPECT_EQ(s.wrong[0], "part 0 (washer): truth pass, track 7 gave no verdict");
  s = score_verdicts(parts, {}, evaluate_mot(truth, Tracks(2)));
  ASSERT_EQ(s.wrong.size(), 1u);
  EXPECT_EQ(s.wrong[0], "part 0 (washer): truth pass, no track followed it");
}

namespace {

std::string source_root() {
  const char* root = std::getenv("TORCHINFER_SOURCE_ROOT");
  return root ? root : ".";
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// A valid two-frame truth file; each bad-file test breaks one field.
std::string valid_truth() {
  return R"({"video": "x.mkv", "width": 640, "height": 480, "fps": 30, "num_frames": 2,
  "classes": ["bracket", "washer", "chip"],
  "parts": [{"id": 0, "kind": "washer", "class": "washer", "defective": true,
             "defects": ["chip"], "first_seen": 0, "last_seen": 1, "first_full": 1,
             "last_full": 1, "verdict": "reject"},
            {"id": 1, "kind": "bracket_l", "class": "bracket", "defective": false,
             "defects": [], "first_seen": null, "last_seen": null, "first_full": null,
             "last_full": null, "verdict": null}],
  "frames": [{"frame": 0, "objects": [{"class": "washer", "class_id": 1,
               "bbox": [0, 10, 50, 60], "part": 0, "ignore": true}]},
             {"frame": 1, "objects": [{"class": "washer", "class_id": 1,
               "bbox": [5, 10, 60, 60], "part": 0, "ignore": false},
              {"class": "chip", "class_id": 2, "bbox": [5, 10, 15, 20], "part": 0,
               "ignore": false}]}]})";
}

void expect_bad(const std::string& name, const std::string& text, const std::string& field,
                const std::string& what) {
  const std::string path = write_temp(name, text);
  try {
    read_truth_clip(path);
    FAIL() << name << ": accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfigInvalid) << name;
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(field), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST(TruthFile, ReadsAValidFile) {
  const TruthClip c = read_truth_clip(write_temp("truth_ok.json", valid_truth()));
  EXPECT_EQ(c.video, "x.mkv");
  EXPECT_EQ(c.num_frames, 2);
  ASSERT_EQ(c.parts.size(), 2u);
  EXPECT_EQ(c.parts[0].verdict, "reject");
  EXPECT_EQ(c.parts[0].defects, std::vector<std::string>{"chip"});
  EXPECT_EQ(c.parts[1].verdict, "");
  EXPECT_FALSE(c.parts[1].first_full.has_value());
  ASSERT_EQ(c.frames.size(), 2u);
  ASSERT_EQ(c.frames[1].size(), 2u);
  EXPECT_EQ(c.frames[1][1].label, "chip");
  EXPECT_EQ(c.frames[1][1].id, 0);
  EXPECT_TRUE(c.frames[0][0].ignore);
  EXPECT_DOUBLE_EQ(c.frames[1][0].box.x_max, 60.0);
}

// The shipped demo truth: 14 parts, 13 judged (4 pass, 9 reject), 300 frames.
TEST(TruthFile, ReadsTheDemoClipTruth) {
  const TruthClip c = read_truth_clip(source_root() + "/models/demo/line.truth.json");
  EXPECT_EQ(c.num_frames, 300);
  ASSERT_EQ(c.parts.size(), 14u);
  int pass = 0, reject = 0, unjudged = 0;
  for (const TruthPart& p : c.parts)
    (p.verdict == "pass" ? pass : p.verdict == "reject" ? reject : unjudged)++;
  EXPECT_EQ(pass, 4);
  EXPECT_EQ(reject, 9);
  EXPECT_EQ(unjudged, 1);
}

// The demo truth scored against tracks made from it: every part box not
// ignored, as track 100 + part id, except that part 3 is lost for frames
// 100-104 and part 5 changes id (to 205) from frame 150. Reference figures
// from models/demo/mot_reference.py on the same construction: 681 truth
// boxes, 676 track boxes, 5 misses, 0 false positives, 1 switch, MOTA
// 0.9911894273, IDTP 652, IDF1 0.9609432572, 13 truth ids, 14 track ids.
TEST(TruthFile, DemoTruthScoresAgainstPython) {
  const TruthClip c = read_truth_clip(source_root() + "/models/demo/line.truth.json");
  Tracks tracks(c.frames.size());
  for (std::size_t f = 0; f < c.frames.size(); ++f)
    for (const TruthBox& t : c.frames[f]) {
      if ((t.label != "bracket" && t.label != "washer") || t.ignore) continue;
      if (t.id == 3 && f >= 100 && f <= 104) continue;
      tracks[f].push_back(hyp(t.id == 5 && f >= 150 ? 205 : 100 + t.id, t.box, t.label));
    }
  MotOptions parts;
  parts.labels = {"bracket", "washer"};
  const MotResult r = evaluate_mot(c.frames, tracks, parts);
  EXPECT_EQ(r.truth_boxes, 681);
  EXPECT_EQ(r.track_boxes, 676);
  EXPECT_EQ(r.misses, 5);
  EXPECT_EQ(r.false_positives, 0);
  EXPECT_EQ(r.id_switches, 1);
  EXPECT_NEAR(r.mota, 0.9911894273, 1e-9);
  EXPECT_EQ(r.idtp, 652);
  EXPECT_NEAR(r.idf1, 0.9609432572, 1e-9);
  EXPECT_EQ(r.truth_ids, 13);
  EXPECT_EQ(r.track_ids, 14);
  EXPECT_EQ(r.count_error, 1);

  // Verdicts from the truth itself on the paired tracks: 13/13, and the
  // second id of part 5 is an extra verdict.
  std::map<long long, std::string> verdicts;
  for (const TruthPart& p : c.parts)
    if (!p.verdict.empty()) verdicts[100 + p.id] = p.verdict;
  verdicts[205] = "reject";
  const VerdictScore s = score_verdicts(c.parts, verdicts, r);
  EXPECT_EQ(s.judged, 13);
  EXPECT_EQ(s.correct, 13);
  EXPECT_EQ(s.extra, 1);
  EXPECT_TRUE(s.wrong.empty());
}

TEST(TruthFile, MissingFileIsNotFound) {
  try {
    read_truth_clip(::testing::TempDir() + "no_such_truth.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    EXPECT_NE(std::string(e.what()).find("no_such_truth.json"), std::string::npos) << e.what();
  }
}

TEST(TruthFile, RefusesBadFiles) {
  expect_bad("truth_notjson.json", "{\"parts\": [", "truth file", "not valid JSON");
  expect_bad("truth_array.json", "[1, 2]", "(top level)", "expected an object");
  expect_bad("truth_noparts.json", replaced(valid_truth(), "\"parts\"", "\"partz\""), ".parts",
             "missing");
  expect_bad("truth_defective.json",
             replaced(valid_truth(), "\"defective\": true", "\"defective\": \"yes\""),
             ".parts[0].defective", "expected true or false");
  expect_bad("truth_verdict.json",
             replaced(valid_truth(), "\"verdict\": \"reject\"", "\"verdict\": \"maybe\""),
             ".parts[0].verdict", "\"pass\", \"reject\" or null");
  expect_bad("truth_contradicts.json",
             replaced(valid_truth(), "\"verdict\": \"reject\"", "\"verdict\": \"pass\""),
             ".parts[0].verdict", "contradicts defective");
  expect_bad("truth_unjudged.json",
             replaced(valid_truth(), "\"verdict\": null", "\"verdict\": \"pass\""),
             ".parts[1].verdict", "never seen whole");
  expect_bad("truth_bbox.json", replaced(valid_truth(), "[0, 10, 50, 60]", "[0, 10, 50]"),
             ".frames[0].objects[0].bbox", "expected [x0, y0, x1, y1]");
  expect_bad("truth_bboxtype.json",
             replaced(valid_truth(), "[0, 10, 50, 60]", "[0, 10, \"50\", 60]"),
             ".frames[0].objects[0].bbox[2]", "expected a number");
  expect_bad(
      "truth_partid.json",
      replaced(valid_truth(), "\"part\": 0, \"ignore\": true", "\"part\": 7, \"ignore\": true"),
      ".frames[0].objects[0].part", "7 is outside 0..1");
  expect_bad("truth_frames.json", replaced(valid_truth(), "\"num_frames\": 2", "\"num_frames\": 3"),
             ".frames", "2 entries, num_frames says 3");
  expect_bad("truth_order.json", replaced(valid_truth(), "\"frame\": 1", "\"frame\": 0"),
             ".frames[1].frame", "frames in order");
  expect_bad("truth_fps.json", replaced(valid_truth(), "\"fps\": 30", "\"fps\": \"30\""), ".fps",
             "expected a number");
}
