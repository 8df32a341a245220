// A camera's evidence through torchinfer-server (docs/server.md,
// "Evidence"): one event per new track of the camera's classes on the demo
// clip, each with a decodable snapshot, crop and clip served by REST;
// retention visible through REST and on disk; bad evidence bodies refused
// naming the field; a folder that vanishes is a WARNING, counted in the
// status and /metrics, and the camera keeps running.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <opencv2/imgcodecs.hpp>
#include <regex>
#include <set>

#include "../common/decode_clip.h"
#include "server_process.h"

using nlohmann::json;
using namespace torchinfer::test;
namespace fs = std::filesystem;

namespace {

const std::set<std::string> kClasses = {"bracket", "washer"};

json evidence_camera(const std::string& id, json evidence, bool loop) {
  return {{"id", id}, {"uri", clip_uri()}, {"track", true}, {"loop", loop}, {"evidence", evidence}};
}

// The first frame (pts) of every track of a kept class in the camera's JSON
// lines: the events the camera must have recorded, by track id.
std::map<long long, long long> tracks_in(const std::string& jsonl) {
  std::map<long long, long long> first;
  for (const json& line : json_lines(read_file(jsonl)))
    for (const json& d : line.value("detections", json::array()))
      if (d.contains("object_id") && kClasses.count(d["label"].get<std::string>()))
        first.emplace(d["object_id"].get<long long>(), line["pts"].get<long long>());
  return first;
}

// The box of `track` on the line at `pts` in the camera's JSON lines, at
// the crop's size (the region meta rounds the box to whole pixels).
cv::Rect box_at(const std::string& jsonl, long long track, long long pts, cv::Size size) {
  for (const json& line : json_lines(read_file(jsonl))) {
    if (line["pts"] != pts) continue;
    for (const json& d : line.value("detections", json::array()))
      if (d.value("object_id", -1LL) == track)
        return {static_cast<int>(std::lround(d["box"]["x_min"].get<double>())),
                static_cast<int>(std::lround(d["box"]["y_min"].get<double>())), size.width,
                size.height};
  }
  return {};
}

// Mean absolute differences (0..255, decode_clip.h): JPEG loss stays below
// kSameJpeg; parts move 12 px a frame, so the box one frame off, or a crop
// cut 12 px off, differs by more than kOtherPixels. Measured on the 4 kept
// events ("[ measured ]" lines): crop 1.3-1.6 (12 px off 18-32), snapshot
// against the clip 1.2-1.7 (a neighbouring frame 19-33).
constexpr double kSameJpeg = 4, kOtherPixels = 8;

// A served event's content: its crop is its snapshot's box (within a pixel
// of the box in the JSON lines: rounding), and its snapshot is the clip's
// frame at the event (`frames`: at pts, one before, one after).
void expect_content(const cv::Mat& snap, const cv::Mat& crop, const cv::Rect& box,
                    const std::vector<cv::Mat>& frames) {
  const cv::Rect in = undrawn(box);
  ASSERT_FALSE(in.empty()) << box;
  double crop_same = 255;
  cv::Point at;
  for (int dy = -1; dy <= 1; ++dy)
    for (int dx = -1; dx <= 1; ++dx) {
      const double d =
          mean_abs_diff(region(crop, in - box.tl()), region(snap, in + cv::Point(dx, dy)));
      if (d < crop_same) crop_same = d, at = cv::Point(dx, dy);
    }
  const cv::Rect shown = in + at;
  const cv::Point off(shown.x + shown.width + 12 <= snap.cols ? 12 : -12, 0);
  const double crop_off = mean_abs_diff(region(crop, in - box.tl()), region(snap, shown + off));
  // Levels fitted (decode_clip.h): the snapshot stretches the clip's
  // full-range frames as video range.
  const cv::Mat s = region(snap, shown);
  double gain = 0;
  const double same = mean_abs_diff_levels(s, region(frames[0], shown), &gain);
  const double neighbour = std::min(mean_abs_diff_levels(s, region(frames[1], shown)),
                                    mean_abs_diff_levels(s, region(frames[2], shown)));
  std::cout << "[ measured ] box " << box << ": crop " << crop_same << " (12 px off " << crop_off
            << "), snapshot against the clip " << same << " (gain " << gain << ", neighbour "
            << neighbour << ")\n";
  EXPECT_LT(crop_same, kSameJpeg);
  EXPECT_GT(crop_off, kOtherPixels) << "the check could not tell a misplaced crop";
  EXPECT_LT(same, kSameJpeg);
  EXPECT_GT(neighbour, kOtherPixels) << "the check could not tell a neighbouring frame";
}

// Frames of a Matroska clip decoded by GStreamer (GRAY8 640x480 frames
// into a file: its size says how many); -1 if it does not decode.
long long decoded_frames(const std::string& path, const std::string& scratch) {
  const std::string raw = scratch + "/decoded.gray";
  const Result r = run({"gst-launch-1.0", "-q", "filesrc", "location=" + path, "!", "decodebin",
                        "!", "videoconvert", "!", "video/x-raw,format=GRAY8,width=640,height=480",
                        "!", "filesink", "location=" + raw});
  if (r.exit_code != 0) return -1;
  std::error_code ec;
  const auto size = fs::file_size(raw, ec);
  return ec ? -1 : static_cast<long long>(size / (640 * 480));
}

class ServerEvidence : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The clip once (it ends after 10 s: every event's clip is written by
    // then), the newest 4 events kept.
    const json line = evidence_camera(
        "line",
        {{"classes", {"bracket", "washer"}}, {"pre_s", 1.0}, {"post_s", 0.5}, {"max_events", 4}},
        false);
    const json plain = {{"id", "plain"}, {"uri", clip_uri()}, {"loop", false}};
    server_ = new ServerProcess(json{{"streams", json::array({line, plain})}});
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(server_->ready()) << server_->child().err(); }

  // The "line" camera once its clip has ended and every kept event's files
  // are written.
  json ended_line() {
    json s;
    EXPECT_TRUE(eventually(
        [&] {
          s = server_->stream(http_, "line");
          if (s.is_null() || s["state"] != "ended") return false;
          for (const json& e : s["evidence"]["last_events"])
            if (!e["clip_written"].get<bool>()) return false;
          return true;
        },
        180))
        << s.dump() << server_->child().err();
    EXPECT_TRUE(frames_add_up(counts_of(s), Settled::kYes));
    return s;
  }
  std::string evidence_dir(const std::string& id) const {
    return server_->out_dir() + "/evidence/" + id;
  }

  static ServerProcess* server_;
  Http http_;
};

ServerProcess* ServerEvidence::server_ = nullptr;

}  // namespace

TEST_F(ServerEvidence, EachNewTrackOfTheClassesGetsDecodableFiles) {
  const json status = ended_line();
  const std::map<long long, long long> tracks = tracks_in(server_->out_dir() + "/line.jsonl");
  ASSERT_GE(tracks.size(), 12u);  // 13 parts on the clip, each a bracket or a washer
  const json ev = status["evidence"];
  EXPECT_EQ(ev["events"], tracks.size());
  EXPECT_EQ(ev["pruned"], tracks.size() - 4);
  EXPECT_EQ(ev["write_failures"], 0);
  EXPECT_EQ(ev["files"]["snapshot"], tracks.size());
  EXPECT_EQ(ev["files"]["clip"], tracks.size());
  EXPECT_EQ(ev["dir"], evidence_dir("line"));
  EXPECT_EQ(ev["events_url"], "/streams/line/events");
  // Every frame of the clip reached the ring's encoder or is counted lost on
  // the way; the first event (67 ms in) and the last (0.37 s before the end)
  // cannot have clips as long as asked.
  EXPECT_EQ(ev["ring_frames"]["encoded"].get<int>() + ev["ring_frames"]["lost_queue"].get<int>(),
            300);
  EXPECT_GE(ev["clips_short"].get<int>(), 2);

  const HttpReply r = http_.get(server_->url("/streams/line/events"));
  ASSERT_EQ(r.status, 200) << r.body;
  const json events = r.json()["events"];
  ASSERT_EQ(events.size(), 4u);
  std::uint64_t n = tracks.size();  // newest first: the last four numbers
  for (const json& e : events) {
    SCOPED_TRACE(e.dump());
    EXPECT_EQ(e["n"], n--);
    EXPECT_EQ(e["camera"], "line");
    const long long track = e["track_id"].get<long long>();
    ASSERT_TRUE(tracks.count(track));
    EXPECT_EQ(e["pts_ns"], tracks.at(track));  // the track's first frame
    EXPECT_TRUE(kClasses.count(e["label"].get<std::string>()));
    EXPECT_EQ(e["reason"], "class:" + e["label"].get<std::string>());
    const std::string base = "/streams/line/events/" + std::to_string(e["n"].get<int>());
    EXPECT_EQ(e["snapshot_url"], base + "/snapshot.jpg");
    EXPECT_EQ(e["clip_url"], base + "/clip.mkv");

    const HttpReply snap = http_.get(server_->url(base + "/snapshot.jpg"));
    ASSERT_EQ(snap.status, 200) << snap.body;
    EXPECT_EQ(snap.content_type, "image/jpeg");
    const cv::Mat img =
        cv::imdecode(std::vector<uchar>(snap.body.begin(), snap.body.end()), cv::IMREAD_COLOR);
    EXPECT_EQ(img.cols, 640);
    EXPECT_EQ(img.rows, 480);
    const HttpReply crop = http_.get(server_->url(base + "/crop.jpg"));
    ASSERT_EQ(crop.status, 200) << crop.body;
    EXPECT_EQ(e["crop_url"], base + "/crop.jpg");
    const cv::Mat c =
        cv::imdecode(std::vector<uchar>(crop.body.begin(), crop.body.end()), cv::IMREAD_COLOR);
    EXPECT_GT(c.cols, 0);
    EXPECT_LT(c.cols, 640);
    const long long pts = e["pts_ns"].get<long long>();
    const cv::Rect box = box_at(server_->out_dir() + "/line.jsonl", track, pts, c.size());
    const std::vector<cv::Mat> at_event = decode_frames_at(
        source_root() + "/models/demo/line.mkv",
        {static_cast<GstClockTime>(pts),
         static_cast<GstClockTime>(pts >= 33333333 ? pts - 33333333 : pts + 66666666),
         static_cast<GstClockTime>(pts + 33333333)});
    expect_content(img, c, box, at_event);
    const HttpReply clip = http_.get(server_->url(base + "/clip.mkv"));
    ASSERT_EQ(clip.status, 200) << clip.body;
    EXPECT_EQ(clip.content_type, "video/x-matroska");
    EXPECT_EQ(clip.body.size(), fs::file_size(e["clip"].get<std::string>()));
    const std::string saved = server_->dir() + "/served.mkv";
    std::ofstream(saved, std::ios::binary) << clip.body;
    const long long frames = decoded_frames(saved, server_->dir());
    const double seconds = e["clip_seconds"].get<double>();
    EXPECT_GT(frames, 0);
    EXPECT_NEAR(frames, seconds * 30, 1.0);
    EXPECT_LE(seconds, 1.5 + 1.0 / 30 + 1e-6);  // pre_s + post_s at most (and a frame)
  }
}

TEST_F(ServerEvidence, RetentionShowsThroughRestAndOnDisk) {
  const json status = ended_line();
  const std::uint64_t newest = status["evidence"]["events"].get<std::uint64_t>();
  ASSERT_GT(newest, 4u);
  // On disk: the four newest events' files only (a record, a snapshot, a
  // clip, a crop where the box had one).
  std::set<std::uint64_t> on_disk;
  std::uint64_t bytes = 0;
  const std::regex name("line-([0-9]+)-(snapshot\\.jpg|crop\\.jpg|clip\\.mkv|event\\.json)");
  for (const auto& f : fs::directory_iterator(evidence_dir("line"))) {
    std::smatch m;
    const std::string file = f.path().filename();
    ASSERT_TRUE(std::regex_match(file, m, name)) << file;
    on_disk.insert(std::stoull(m[1]));
    bytes += f.file_size();
  }
  EXPECT_EQ(on_disk, (std::set<std::uint64_t>{newest - 3, newest - 2, newest - 1, newest}));
  EXPECT_EQ(status["evidence"]["bytes"], bytes);

  const HttpReply pruned = http_.get(server_->url("/streams/line/events/1/snapshot.jpg"));
  EXPECT_EQ(pruned.status, 404);
  EXPECT_EQ(pruned.json()["error"],
            "event 1 of stream 'line' is no longer kept: retention deleted it (max_events 4, "
            "max_bytes 1073741824)");
  const std::string next = std::to_string(newest + 1);
  const HttpReply unknown = http_.get(server_->url("/streams/line/events/" + next + "/clip.mkv"));
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.json()["error"], "no event " + next + " of stream 'line' yet");
  const std::string last = "/streams/line/events/" + std::to_string(newest);
  EXPECT_EQ(http_.get(server_->url(last + "/video.avi")).json()["error"],
            "no file 'video.avi': an event has snapshot.jpg, crop.jpg and clip.mkv");
  EXPECT_EQ(http_.get(server_->url("/streams/line/events/x1/clip.mkv")).json()["error"],
            "no event 'x1': events are numbered 1, 2, ...");
  EXPECT_EQ(http_.get(server_->url("/streams/line/events/1")).status, 404);
  EXPECT_EQ(http_.request("DELETE", server_->url(last + "/clip.mkv")).status, 405);
  const HttpReply plain = http_.get(server_->url("/streams/plain/events"));
  EXPECT_EQ(plain.status, 404);
  EXPECT_EQ(plain.json()["error"],
            "stream 'plain' keeps no evidence (add \"evidence\" to its settings)");
  EXPECT_EQ(http_.get(server_->url("/streams/nope/events")).json()["error"], "no stream 'nope'");

  // The metrics say the same.
  const std::string m = http_.get(server_->url("/metrics")).body;
  const std::string labels = "{stream=\"line\",model=\"parts\"}";
  EXPECT_NE(m.find("torchinfer_stream_evidence_events_total" + labels + " " +
                   std::to_string(newest) + "\n"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("torchinfer_stream_evidence_pruned_total" + labels + " " +
                   std::to_string(newest - 4) + "\n"),
            std::string::npos);
  EXPECT_NE(
      m.find("torchinfer_stream_evidence_bytes" + labels + " " + std::to_string(bytes) + "\n"),
      std::string::npos);
  EXPECT_NE(m.find("torchinfer_stream_evidence_write_failures_total" + labels + " 0\n"),
            std::string::npos);
  EXPECT_EQ(m.find("torchinfer_stream_evidence_events_total{stream=\"plain\""), std::string::npos);
}

TEST_F(ServerEvidence, BadEvidenceBodiesAreRefusedNamingTheField) {
  std::ofstream(server_->out_dir() + "/a-file") << "x";
  fs::create_directory(server_->dir() + "/elsewhere");
  fs::create_directory_symlink(server_->dir() + "/elsewhere", server_->out_dir() + "/a-link");
  struct Case {
    json evidence;
    bool track;
    std::string field, error;
  };
  const Case cases[] = {
      {json::object(), false, "evidence",
       "evidence: needs \"track\": true on this stream: an event is a new track of one of the "
       "classes, kept once per track"},
      {{{"pre_seconds", 2}},
       true,
       "evidence.pre_seconds",
       "evidence.pre_seconds: unknown field; the fields are classes, lines, dir, pre_s, post_s, "
       "max_events, max_bytes, ring_max_bytes"},
      {{{"pre_s", "2"}}, true, "evidence.pre_s", "evidence.pre_s: must be a number, not string"},
      {{{"post_s", 31}},
       true,
       "evidence.post_s",
       "evidence.post_s: out of range: give seconds from 0 to 30 (got 31)"},
      {{{"max_events", 0}},
       true,
       "evidence.max_events",
       "evidence.max_events: out of range: give an integer from 1 to 1000000 (got 0)"},
      {{{"classes", json::array()}},
       true,
       "evidence.classes",
       "evidence.classes: must be a list of 1 to 64 class labels (leave it out to keep evidence "
       "of every class)"},
      {"yes", true, "evidence", "evidence: must be a JSON object, not string"},
      {{{"dir", "/tmp/anywhere"}},
       true,
       "evidence.dir",
       "evidence.dir: a REST body names a folder under output_dir (a relative path, default "
       "evidence/<id>); absolute folders are for the config file"},
      {{{"dir", "../up"}},
       true,
       "evidence.dir",
       "evidence.dir: may not hold '..': name a folder under output_dir (relative) or an "
       "absolute one (config file only)"},
      {{{"dir", "a-file"}},
       true,
       "evidence.dir",
       "evidence.dir: evidence dir '" + server_->out_dir() +
           "/a-file' exists and is not a folder; name a folder (it is created if missing)"},
      {{{"dir", "a-file/sub"}},
       true,
       "evidence.dir",
       "evidence.dir: evidence dir '" + server_->out_dir() +
           "/a-file/sub' cannot be read (Not a directory); name a folder this process can write"},
      {{{"dir", "a-link"}},
       true,
       "evidence.dir",
       "evidence.dir: evidence dir '" + server_->out_dir() +
           "/a-link' is a symbolic link; name the folder it points to itself"},
  };
  for (const Case& c : cases) {
    json body = {{"id", "bad"}, {"uri", clip_uri()}, {"track", c.track}, {"evidence", c.evidence}};
    const HttpReply r = http_.request("POST", server_->url("/streams"), body.dump());
    EXPECT_EQ(r.status, 400) << body << " " << r.body;
    EXPECT_EQ(r.json()["field"], c.field) << r.body;
    EXPECT_EQ(r.json()["error"], c.error) << r.body;
  }
  EXPECT_EQ(server_->stream(http_, "bad"), json());
}

TEST_F(ServerEvidence, AFolderThatVanishesWarnsCountsAndTheCameraRuns) {
  const json body =
      evidence_camera("gone", {{"classes", {"bracket", "washer"}}, {"dir", "gone-ev"}}, true);
  const HttpReply added = http_.request("POST", server_->url("/streams"), body.dump());
  ASSERT_EQ(added.status, 201) << added.body;
  EXPECT_EQ(added.json()["config"]["evidence"]["dir"], "gone-ev");
  ASSERT_TRUE(fs::is_directory(server_->out_dir() + "/gone-ev"));
  fs::remove_all(server_->out_dir() + "/gone-ev");

  json s;
  ASSERT_TRUE(eventually(
      [&] {
        s = server_->stream(http_, "gone");
        return !s.is_null() && s["evidence"]["write_failures"].get<int>() >= 2;
      },
      120))
      << s.dump() << server_->child().err();
  EXPECT_EQ(s["state"], "running");
  EXPECT_EQ(s["evidence"]["files"]["snapshot"], 0);
  EXPECT_EQ(s["evidence"]["files"]["clip"], 0);
  EXPECT_NE(s["evidence"]["last_error"].get<std::string>().find(server_->out_dir() + "/gone-ev/"),
            std::string::npos)
      << s["evidence"];
  EXPECT_TRUE(eventually(
      [&] {
        return server_->child().err().find("torchinfer-server: stream gone: WARNING: evidence: ") !=
               std::string::npos;
      },
      10))
      << server_->child().err();
  // Nothing re-created the folder, and frames still flow.
  EXPECT_FALSE(fs::exists(server_->out_dir() + "/gone-ev"));
  const std::uint64_t out = s["frames"]["out"].get<std::uint64_t>();
  EXPECT_TRUE(eventually(
      [&] {
        return server_->stream(http_, "gone")["frames"]["out"].get<std::uint64_t>() > out + 30;
      },
      60));
  const std::string m = http_.get(server_->url("/metrics")).body;
  std::smatch hit;
  ASSERT_TRUE(std::regex_search(
      m, hit,
      std::regex(
          "torchinfer_stream_evidence_write_failures_total\\{stream=\"gone\",model=\"parts\"\\} "
          "([0-9]+)\n")))
      << m;
  EXPECT_GE(std::stoi(hit[1]), 2);
  EXPECT_EQ(http_.request("DELETE", server_->url("/streams/gone")).status, 200);
}

// A configured camera whose folder cannot be made (a file lies in its
// path; a REST body is refused for it) fails naming the folder, and goes
// cleanly: its torchinfer was released once too often when the build
// stopped after making it (GStreamer-CRITICAL "still has a parent").
TEST(ServerEvidenceStart, AnUnusableFolderFailsTheCameraNamingItAndItGoesCleanly) {
  char tmpl[] = "/tmp/torchinfer-evidence-blocked-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string out = std::string(tmpl) + "/out";
  fs::create_directories(out);
  std::ofstream(out + "/blocked") << "a file, not a folder\n";
  const json cam =
      evidence_camera("blocked", {{"classes", {"bracket"}}, {"dir", "blocked/ev"}}, true);
  ServerProcess server(json{{"output_dir", out}, {"streams", json::array({cam})}});
  ASSERT_TRUE(server.ready()) << server.child().err();
  Http http;
  json s;
  ASSERT_TRUE(eventually(
      [&] {
        s = server.stream(http, "blocked");
        return !s.is_null() && s["state"] == "failed";
      },
      60))
      << s.dump() << server.child().err();
  EXPECT_NE(s["last_error"].get<std::string>().find(out + "/blocked/ev"), std::string::npos) << s;
  EXPECT_NE(s["last_error"].get<std::string>().find("Not a directory"), std::string::npos) << s;
  ASSERT_EQ(http.request("DELETE", server.url("/streams/blocked")).status, 200);
  ASSERT_TRUE(
      eventually([&] { return http.get(server.url("/streams/blocked")).status == 404; }, 30));
  server.child().signal(SIGTERM);
  EXPECT_EQ(server.child().wait_exit(30), 0) << server.child().err();
  EXPECT_EQ(server.child().err().find("CRITICAL"), std::string::npos) << server.child().err();
  fs::remove_all(tmpl);
}

// A looped file starts its PTS at 0 again each time round; the events and
// the ring keep running time, so the events just before and after the wrap
// get clips of the length asked for, like the others.
TEST_F(ServerEvidence, ClipsOfALoopedFileSpanTheWrap) {
  const json body = evidence_camera(
      "loop", {{"classes", {"bracket", "washer"}}, {"pre_s", 1.0}, {"post_s", 0.5}}, true);
  ASSERT_EQ(http_.request("POST", server_->url("/streams"), body.dump()).status, 201);
  // The first time round holds 13 events (EachNewTrackOfTheClassesGetsDecodableFiles);
  // the 16th is well into the second.
  json events;
  ASSERT_TRUE(eventually(
      [&] {
        events = http_.get(server_->url("/streams/loop/events")).json()["events"];
        int written = 0;
        for (const json& e : events) written += e["clip_written"].get<bool>();
        return written >= 16;
      },
      120))
      << events.dump();
  EXPECT_EQ(http_.request("DELETE", server_->url("/streams/loop")).status, 200);
  std::set<std::uint64_t> written;
  for (const json& e : events) {
    if (!e["clip_written"].get<bool>()) continue;
    written.insert(e["n"].get<std::uint64_t>());
    const double seconds = e["clip_seconds"].get<double>();
    const long long pts = e["pts_ns"].get<long long>();
    SCOPED_TRACE(e.dump());
    // The very first event comes 67 ms into the stream: there is no second before it.
    const double expected = std::min(1.0, pts / 1e9) + 0.5;
    EXPECT_NEAR(seconds, expected, 0.07);
  }
  for (std::uint64_t n = 1; n <= 16; ++n) EXPECT_TRUE(written.count(n)) << n;
  // Running time goes on across the wrap: the numbers and the times rise together.
  for (std::size_t i = 1; i < events.size(); ++i)
    EXPECT_LT(events[i]["pts_ns"].get<long long>(), events[i - 1]["pts_ns"].get<long long>());
}

// "lines": an event is each crossing of the camera's gate by a part, as
// torchanalytics counts it (12 of the clip's 13 parts cross x = 320, all
// one way: 7 brackets and 5 washers, right to left of P1 -> P2, backward,
// as ServerAnalytics counts the same gate on the same clip), not each new
// track.
TEST_F(ServerEvidence, CrossingsOfTheListedLinesAreTheEvents) {
  json body = evidence_camera(
      "gated", {{"classes", {"bracket", "washer"}}, {"lines", {"gate"}}, {"max_events", 50}},
      false);
  body["lines"] = {{{"name", "gate"}, {"points", {{320, 0}, {320, 480}}}}};
  ASSERT_EQ(http_.request("POST", server_->url("/streams"), body.dump()).status, 201);
  json s;
  ASSERT_TRUE(eventually(
      [&] {
        s = server_->stream(http_, "gated");
        if (s.is_null() || s["state"] != "ended") return false;
        for (const json& e : s["evidence"]["last_events"])
          if (!e["clip_written"].get<bool>()) return false;
        return true;
      },
      120))
      << s.dump() << server_->child().err();
  EXPECT_TRUE(frames_add_up(counts_of(s), Settled::kYes));
  const json by_class = s["analytics"]["lines"]["gate"]["by_class"];
  EXPECT_EQ(by_class["bracket"], json({{"forward", 0}, {"backward", 7}})) << s["analytics"];
  EXPECT_EQ(by_class["washer"], json({{"forward", 0}, {"backward", 5}})) << s["analytics"];
  EXPECT_EQ(s["evidence"]["events"], 12) << s["analytics"];
  const json events = http_.get(server_->url("/streams/gated/events")).json()["events"];
  ASSERT_EQ(events.size(), 12u) << events;
  std::map<std::string, int> per_class;
  std::set<long long> tracks;
  for (const json& e : events) {
    SCOPED_TRACE(e.dump());
    EXPECT_EQ(e["reason"], "line:gate:backward");
    per_class[e["label"].get<std::string>()]++;
    EXPECT_TRUE(e["snapshot_written"].get<bool>());
    EXPECT_TRUE(e["crop_written"].get<bool>());
    tracks.insert(e["track_id"].get<long long>());
  }
  EXPECT_EQ(tracks.size(), events.size());  // each part once
  EXPECT_EQ(per_class, (std::map<std::string, int>{{"bracket", 7}, {"washer", 5}}));
  EXPECT_EQ(http_.request("DELETE", server_->url("/streams/gated")).status, 200);
}
