// EvidenceRecorder (pipelines/evidence/evidence_recorder.h) on small
// pipelines: the clip of an event decodes, with the frames and length of
// pre_s + post_s; snapshot and crop decode at the frame's and the box's
// size, from every raw format the QA app and the server see; losses (queue
// full, folder gone, no frames) are counted, never blocking.
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <iostream>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "../common/decode_clip.h"
#include "evidence/evidence_recorder.h"

namespace ev = torchinfer::evidence;
namespace fs = std::filesystem;
using torchinfer::EvidenceRecorder;
using torchinfer::RecorderOptions;
using torchinfer::test::decode_clip;
using torchinfer::test::decode_frames_at;
using torchinfer::test::Decoded;
using torchinfer::test::mean_abs_diff;
using torchinfer::test::mean_abs_diff_levels;
using torchinfer::test::region;
using torchinfer::test::undrawn;

namespace {

std::string scratch_dir(const std::string& name) {
  const std::string dir = testing::TempDir() + "evidence-recorder-" + name;
  fs::remove_all(dir);
  return dir;
}

std::shared_ptr<ev::EvidenceStore> make_store(const std::string& dir, double pre, double post) {
  ev::EvidenceSettings s;
  s.dir = dir;
  s.pre_s = pre;
  s.post_s = post;
  return std::make_shared<ev::EvidenceStore>(s, "cam");
}

// videotestsrc -> tee -> fakesink with the recorder on the tee; an event
// recorded on each frame listed in `events` (box `box`).
struct EventRun {
  std::vector<int> events;
  int fps = 30;
  // videotestsrc's pattern and options: "pinwheel horizontal-speed=16" scrolls
  // its spokes 16 px a frame, so that every frame and every place differs.
  std::string pattern = "ball";
  cv::Rect box{40, 30, 64, 48};
  std::vector<ev::EventRecord> records;
  EvidenceRecorder* recorder = nullptr;
  int frame = 0;
};

GstPadProbeReturn on_frame(GstPad* pad, GstPadProbeInfo* info, gpointer user) {
  auto* run = static_cast<EventRun*>(user);
  const int index = run->frame++;
  if (std::find(run->events.begin(), run->events.end(), index) == run->events.end())
    return GST_PAD_PROBE_OK;
  GstBuffer* buf = GST_PAD_PROBE_INFO_BUFFER(info);
  GstCaps* caps = gst_pad_get_current_caps(pad);
  GstVideoInfo vi;
  gst_video_info_from_caps(&vi, caps);
  gst_caps_unref(caps);
  ev::EventRecord e;
  e.camera = "cam";
  e.reason = "reject";
  e.pts_ns = static_cast<std::int64_t>(GST_BUFFER_PTS(buf));
  e.track_id = index;
  e.label = "bracket";
  e.verdict = "reject";
  run->records.push_back(run->recorder->record(e, buf, vi, run->box));
  return GST_PAD_PROBE_OK;
}

// Plays `frames` frames of 320x240 at 30 fps through the recorder, to EOS.
void play(EvidenceRecorder& rec, EventRun& run, int frames, const char* format = "I420",
          const std::function<void(GstElement*)>& during = {}) {
  run.recorder = &rec;
  const std::string line = "videotestsrc pattern=" + run.pattern +
                           " num-buffers=" + std::to_string(frames) +
                           " ! video/x-raw,format=" + format +
                           ",width=320,height=240,framerate=" + std::to_string(run.fps) +
                           "/1 ! tee name=t ! fakesink sync=false";
  GError* err = nullptr;
  GstElement* p = gst_parse_launch(line.c_str(), &err);
  ASSERT_NE(p, nullptr) << (err ? err->message : "");
  GstElement* tee = gst_bin_get_by_name(GST_BIN(p), "t");
  std::string why;
  ASSERT_TRUE(rec.attach(p, tee, &why)) << why;
  GstPad* sink = gst_element_get_static_pad(tee, "sink");
  gst_pad_add_probe(sink, GST_PAD_PROBE_TYPE_BUFFER, on_frame, &run, nullptr);
  gst_object_unref(sink);
  gst_object_unref(tee);
  ASSERT_NE(gst_element_set_state(p, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  if (during) during(p);
  GstBus* bus = gst_element_get_bus(p);
  GstMessage* m = gst_bus_timed_pop_filtered(
      bus, 60 * GST_SECOND, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(GST_MESSAGE_TYPE(m), GST_MESSAGE_EOS);
  gst_message_unref(m);
  gst_object_unref(bus);
  rec.finish();
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(p);
}

// The src pad of the recorder's queue (the only queue in these pipelines).
GstPad* branch_queue_src(GstElement* pipeline) {
  GstIterator* it = gst_bin_iterate_recurse(GST_BIN(pipeline));
  GValue v = G_VALUE_INIT;
  GstPad* pad = nullptr;
  while (!pad && gst_iterator_next(it, &v) == GST_ITERATOR_OK) {
    auto* e = GST_ELEMENT(g_value_get_object(&v));
    GstElementFactory* f = gst_element_get_factory(e);
    if (f && std::string(GST_OBJECT_NAME(f)) == "queue") pad = gst_element_get_static_pad(e, "src");
    g_value_reset(&v);
  }
  g_value_unset(&v);
  gst_iterator_free(it);
  return pad;
}

// Mean absolute differences (0..255, decode_clip.h): two JPEGs of the same
// pixels (snapshot and crop at quality 85, ring frames at 75) stay below
// kSameJpeg; the neighbouring frame or another place on the scrolling
// pinwheel is far above kOtherPixels. Measured ("[ measured ]" lines): crop
// 2.9 (16 px off 133, at the corner 118), snapshot against the clip 4.5
// (the frames before and after 100, 112).
constexpr double kSameJpeg = 8, kOtherPixels = 30;

cv::Size jpeg_size(const std::string& path) {
  const cv::Mat m = cv::imread(path, cv::IMREAD_COLOR);
  return m.empty() ? cv::Size(-1, -1) : m.size();
}

// A queue that never leaks in these tests (videotestsrc outruns the
// encoder): they count frames exactly.
RecorderOptions no_drops(const std::string& encoder = "jpeg") {
  RecorderOptions o;
  o.encoder = encoder;
  o.queue_frames = 0;
  o.queue_bytes = 0;  // unbounded
  return o;
}

}  // namespace

TEST(EvidenceRecorder, ClipHasPreAndPostSecondsAndDecodes) {
  const std::string dir = scratch_dir("clip");
  EvidenceRecorder rec(make_store(dir, 1.0, 0.5), no_drops());
  EventRun run;
  run.events = {60};  // pts 2.0 s
  play(rec, run, 120);
  ASSERT_EQ(run.records.size(), 1u);
  const auto& e = run.records[0];
  EXPECT_EQ(e.n, 1u);
  EXPECT_EQ(e.clip, dir + "/cam-1-clip.mkv");
  // Frames 30 (1.0 s) to 75 (2.5 s): 46 frames, 46/30 s.
  const Decoded d = decode_clip(e.clip);
  ASSERT_TRUE(d.ok) << d.error;
  EXPECT_EQ(d.frames, 46);
  EXPECT_EQ(d.first, 0u);
  EXPECT_NEAR((d.last - d.first) / 1e9, 45 / 30.0, 1e-3);
  const auto kept = rec.store().find(1);
  ASSERT_TRUE(kept.has_value());
  EXPECT_TRUE(kept->clip_written);
  EXPECT_NEAR(kept->clip_seconds, 46 / 30.0, 1e-3);
  const auto c = rec.counters();
  EXPECT_EQ(c.events, 1u);
  EXPECT_EQ(c.clips, 1u);
  EXPECT_EQ(c.write_failures, 0u);
  const auto l = rec.losses();
  EXPECT_EQ(l.queue_dropped, 0u);
  EXPECT_EQ(l.clips_short, 0u);
  EXPECT_EQ(l.frames_encoded, 120u);
}

// Content, not just sizes, on a pinwheel scrolling 16 px a frame: the crop is the
// snapshot's box (a crop cut 16 px off, or at the corner, differs by far
// more than JPEG loss), and the snapshot is the clip's frame at the event
// (the frames before and after differ by far more).
TEST(EvidenceRecorder, SnapshotIsTheFrameAndCropIsTheBox) {
  const std::string dir = scratch_dir("snapshot");
  EvidenceRecorder rec(make_store(dir, 0.5, 0.5), no_drops());
  EventRun run;
  run.events = {20};
  run.pattern = "pinwheel horizontal-speed=16";
  run.box = cv::Rect(100, 50, 60, 44);
  play(rec, run, 60);
  ASSERT_EQ(run.records.size(), 1u);
  EXPECT_EQ(jpeg_size(run.records[0].snapshot), cv::Size(320, 240));
  EXPECT_EQ(jpeg_size(run.records[0].crop), cv::Size(60, 44));
  const auto c = rec.counters();
  EXPECT_EQ(c.snapshots, 1u);
  EXPECT_EQ(c.crops, 1u);

  const cv::Mat snap = cv::imread(run.records[0].snapshot, cv::IMREAD_COLOR);
  const cv::Mat crop = cv::imread(run.records[0].crop, cv::IMREAD_COLOR);
  ASSERT_FALSE(snap.empty() || crop.empty());
  const cv::Rect in = undrawn(run.box);
  const cv::Mat mine = region(crop, in - run.box.tl());
  const double same = mean_abs_diff(mine, region(snap, in));
  const double shifted = mean_abs_diff(mine, region(snap, in + cv::Point(16, 0)));
  const double corner = mean_abs_diff(mine, region(snap, in - run.box.tl() + cv::Point(3, 16)));
  std::cout << "[ measured ] crop against the snapshot's box " << same << ", 16 px off " << shifted
            << ", at the corner " << corner << "\n";
  EXPECT_LT(same, kSameJpeg);
  EXPECT_GT(shifted, kOtherPixels) << "the check could not tell a misplaced crop";
  EXPECT_GT(corner, kOtherPixels) << "the check could not tell a misplaced crop";

  // The clip runs from frame 5 (0.5 s before the event): the event is at
  // 0.5 s into it.
  const std::string clip = run.records[0].clip;
  const auto frames =
      decode_frames_at(clip, {500 * GST_MSECOND, 467 * GST_MSECOND, 533 * GST_MSECOND});
  // The clip keeps video-range levels (decode_clip.h): compared after a
  // levels fit.
  double gain = 0;
  const double at = mean_abs_diff_levels(region(snap, in), region(frames[0], in), &gain);
  const double before = mean_abs_diff_levels(region(snap, in), region(frames[1], in));
  const double after = mean_abs_diff_levels(region(snap, in), region(frames[2], in));
  std::cout << "[ measured ] snapshot against the clip's frame at the event " << at << " (gain "
            << gain << "), one before " << before << ", one after " << after << "\n";
  EXPECT_LT(at, kSameJpeg);
  EXPECT_GT(before, kOtherPixels) << "the check could not tell a neighbouring frame";
  EXPECT_GT(after, kOtherPixels) << "the check could not tell a neighbouring frame";
}

TEST(EvidenceRecorder, CropIsCutToTheFrame) {
  const std::string dir = scratch_dir("crop-edge");
  EvidenceRecorder rec(make_store(dir, 0.2, 0.2), no_drops());
  EventRun run;
  run.events = {10};
  run.box = cv::Rect(300, 200, 60, 60);  // 20x40 of it inside 320x240
  play(rec, run, 30);
  ASSERT_EQ(run.records.size(), 1u);
  EXPECT_EQ(jpeg_size(run.records[0].crop), cv::Size(20, 40));
}

TEST(EvidenceRecorder, CropOutsideTheFrameIsCountedNotWritten) {
  const std::string dir = scratch_dir("crop-out");
  EvidenceRecorder rec(make_store(dir, 0.2, 0.2), no_drops());
  EventRun run;
  run.events = {10};
  run.box = cv::Rect(400, 300, 20, 20);
  play(rec, run, 30);
  const auto c = rec.counters();
  EXPECT_EQ(c.snapshots, 1u);
  EXPECT_EQ(c.crops, 0u);
  EXPECT_EQ(c.clips, 1u);
  EXPECT_EQ(c.write_failures, 1u);
  EXPECT_FALSE(fs::exists(run.records[0].crop));
}

TEST(EvidenceRecorder, EventsNearTheEndGetWhatTheRingHasAndCountShort) {
  const std::string dir = scratch_dir("short");
  EvidenceRecorder rec(make_store(dir, 1.0, 1.0), no_drops());
  EventRun run;
  run.events = {10, 85};  // 0.33 s: no 1 s before; 2.83 s: no 1 s after (ends at 3 s)
  play(rec, run, 90);
  ASSERT_EQ(run.records.size(), 2u);
  const Decoded first = decode_clip(run.records[0].clip);
  const Decoded second = decode_clip(run.records[1].clip);
  ASSERT_TRUE(first.ok && second.ok) << first.error << second.error;
  EXPECT_EQ(first.frames, 41);   // frames 0..40
  EXPECT_EQ(second.frames, 35);  // frames 55..89
  EXPECT_EQ(rec.losses().clips_short, 2u);
  EXPECT_EQ(rec.counters().clips, 2u);
}

TEST(EvidenceRecorder, SeveralEventsEachGetTheirOwnFiles) {
  const std::string dir = scratch_dir("several");
  EvidenceRecorder rec(make_store(dir, 0.3, 0.3), no_drops());
  EventRun run;
  run.events = {15, 30, 45};
  play(rec, run, 90);
  ASSERT_EQ(run.records.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(run.records[i].n, i + 1);
    const Decoded d = decode_clip(run.records[i].clip);
    EXPECT_TRUE(d.ok) << d.error;
    EXPECT_EQ(d.frames, 19);  // 0.3 s each side at 30 fps: 9 + 1 + 9
    EXPECT_EQ(jpeg_size(run.records[i].snapshot), cv::Size(320, 240));
  }
  EXPECT_EQ(rec.counters().clips, 3u);
}

TEST(EvidenceRecorder, H264ClipStartsAtTheKeyframeBefore) {
  const std::string dir = scratch_dir("h264");
  EvidenceRecorder rec(make_store(dir, 0.5, 0.5), no_drops("h264"));
  EventRun run;
  run.events = {50};  // 1.667 s: from 1.167 s (frame 35); keyframe every 30 frames: 30
  play(rec, run, 90);
  ASSERT_EQ(run.records.size(), 1u);
  ASSERT_EQ(rec.counters().clips, 1u)
      << rec.counters().last_error << " encoded " << rec.losses().frames_encoded << " ring "
      << rec.ring_frames();
  const Decoded d = decode_clip(run.records[0].clip);
  ASSERT_TRUE(d.ok) << d.error;
  EXPECT_EQ(d.frames, 36);  // frames 30..65
  EXPECT_EQ(rec.counters().clips, 1u) << rec.counters().last_error;
}

// A keyframe a second at any rate: at 10 fps the clip from 2.0 s starts on
// the keyframe at frame 20, not on one 30 frames apart (frame 0).
TEST(EvidenceRecorder, H264KeyframeEverySecondAtTheCamerasRate) {
  const std::string dir = scratch_dir("h264-10fps");
  EvidenceRecorder rec(make_store(dir, 0.5, 0.5), no_drops("h264"));
  EventRun run;
  run.fps = 10;
  run.events = {25};  // 2.5 s: from 2.0 s (frame 20) to 3.0 s (frame 30)
  play(rec, run, 40);
  ASSERT_EQ(rec.counters().clips, 1u) << rec.counters().last_error;
  const Decoded d = decode_clip(run.records[0].clip);
  ASSERT_TRUE(d.ok) << d.error;
  EXPECT_EQ(d.frames, 11);
}

TEST(EvidenceRecorder, FolderReplacedByAFileIsCountedAndNeverBlocks) {
  const std::string dir = scratch_dir("gone");
  auto store = make_store(dir, 0.3, 0.3);
  EvidenceRecorder rec(store, no_drops());
  // The folder is taken away under the running store (root ignores modes,
  // so a file in its place is what makes it unwritable).
  fs::remove_all(dir);
  {
    FILE* f = std::fopen(dir.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
  }
  EventRun run;
  run.events = {10, 20, 30};
  play(rec, run, 60);
  EXPECT_EQ(run.records.size(), 3u);
  const auto c = rec.counters();
  EXPECT_EQ(c.events, 3u);
  EXPECT_EQ(c.snapshots + c.crops + c.clips, 0u);
  EXPECT_EQ(c.write_failures, 9u);  // 3 events x snapshot, crop, clip
  EXPECT_NE(c.last_error.find(dir), std::string::npos) << c.last_error;
}

// The encoder's side blocked while the source runs: the queue leaks; every
// frame is either encoded or counted as dropped.
TEST(EvidenceRecorder, QueueDropsAreCounted) {
  const std::string dir = scratch_dir("drops");
  RecorderOptions o;
  o.queue_frames = 2;
  o.queue_bytes = 0;
  EvidenceRecorder rec(make_store(dir, 0.3, 0.3), o);
  EventRun run;
  play(rec, run, 60, "I420", [&](GstElement* p) {
    GstPad* out = branch_queue_src(p);
    ASSERT_NE(out, nullptr);
    const gulong id =
        gst_pad_add_probe(out, GST_PAD_PROBE_TYPE_BLOCK_DOWNSTREAM, nullptr, nullptr, nullptr);
    while (run.frame < 60) g_usleep(1000);
    gst_pad_remove_probe(out, id);
    gst_object_unref(out);
  });
  const auto l = rec.losses();
  EXPECT_EQ(l.queue_dropped + l.frames_encoded, 60u);
  EXPECT_GE(l.queue_dropped, 55u);
}

class EvidenceRecorderFormats : public testing::TestWithParam<const char*> {};

TEST_P(EvidenceRecorderFormats, SnapshotAndCropFromTheCameraFormat) {
  const std::string dir = scratch_dir(std::string("format-") + GetParam());
  EvidenceRecorder rec(make_store(dir, 0.2, 0.2), no_drops());
  EventRun run;
  run.events = {5};
  run.pattern = "pinwheel horizontal-speed=16";
  run.box = cv::Rect(10, 20, 30, 40);
  play(rec, run, 20, GetParam());
  ASSERT_EQ(run.records.size(), 1u);
  EXPECT_EQ(jpeg_size(run.records[0].snapshot), cv::Size(320, 240));
  EXPECT_EQ(jpeg_size(run.records[0].crop), cv::Size(30, 40));
  // The crop is the snapshot's box, converted alike from this format.
  const cv::Mat snap = cv::imread(run.records[0].snapshot, cv::IMREAD_COLOR);
  const cv::Mat crop = cv::imread(run.records[0].crop, cv::IMREAD_COLOR);
  ASSERT_FALSE(snap.empty() || crop.empty());
  const cv::Rect in = undrawn(run.box);
  const cv::Mat mine = region(crop, in - run.box.tl());
  EXPECT_LT(mean_abs_diff(mine, region(snap, in)), kSameJpeg);
  EXPECT_GT(mean_abs_diff(mine, region(snap, in + cv::Point(16, 0))), kOtherPixels);
  EXPECT_TRUE(decode_clip(run.records[0].clip).ok);
  EXPECT_EQ(rec.counters().write_failures, 0u);
}

INSTANTIATE_TEST_SUITE_P(Raw, EvidenceRecorderFormats,
                         testing::Values("I420", "YUY2", "NV12", "BGR", "RGB", "BGRx", "RGBx",
                                         "GRAY8"));

TEST(EvidenceRecorder, EventWithoutAFrameIsCounted) {
  const std::string dir = scratch_dir("no-frame");
  EvidenceRecorder rec(make_store(dir, 0.2, 0.2), no_drops());
  GstVideoInfo vi;
  gst_video_info_set_format(&vi, GST_VIDEO_FORMAT_I420, 64, 48);
  ev::EventRecord e;
  e.camera = "cam";
  e.pts_ns = 0;
  const auto r = rec.record(e, nullptr, vi, cv::Rect(0, 0, 8, 8));
  EXPECT_EQ(r.n, 1u);
  rec.finish();
  const auto c = rec.counters();
  // Snapshot and crop (no frame), clip (the ring never had a frame).
  EXPECT_EQ(c.write_failures, 3u);
  EXPECT_EQ(rec.losses().snapshots_dropped, 1u);
}

TEST(EvidenceRecorder, AttachToSomethingNotATeeFails) {
  const std::string dir = scratch_dir("attach");
  EvidenceRecorder rec(make_store(dir, 0.2, 0.2));
  GstElement* p = gst_pipeline_new(nullptr);
  GstElement* sink = gst_element_factory_make("fakesink", nullptr);
  gst_bin_add(GST_BIN(p), sink);
  std::string why;
  EXPECT_FALSE(rec.attach(p, sink, &why));
  EXPECT_FALSE(why.empty());
  gst_object_unref(p);
}
