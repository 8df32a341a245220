// The evidence folder opened once (pipelines/evidence/core/evidence_folder.h): a folder
// replaced by a symbolic link (or by another folder) after the start gets
// nothing written through the link, retention deletes nothing there, and
// every refused file is counted saying why. And an event's snapshot: a
// reject is drawn red with "#id class defect score" (snapshot_caption).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <set>

#include "evidence/core/evidence_store.h"
#include "evidence/core/jpeg_snapshot.h"

namespace ev = torchinfer::evidence;
namespace fs = std::filesystem;

namespace {

class EvidenceFolderSwap : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/evidence-folder-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    fs::create_directories(root_ + "/other");
    // A file of the same name as our first event's snapshot: retention
    // following the link would delete it.
    std::ofstream(root_ + "/other/cam-1-snapshot.jpg") << "not ours";
  }
  void TearDown() override { fs::remove_all(root_); }
  std::set<std::string> names(const std::string& dir) const {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename());
    return out;
  }
  static bool put(ev::EvidenceStore& s, std::uint64_t n, const std::string& kind) {
    const std::vector<std::uint8_t> data(100, 'x');
    return s.write(n, kind, data.data(), data.size());
  }
  std::string root_;
};

}  // namespace

TEST_F(EvidenceFolderSwap, ALinkSwappedInGetsNothingAndTheLossIsCounted) {
  ev::EvidenceSettings set;
  set.dir = root_ + "/ev";
  set.max_events = 1;
  ev::EvidenceStore store(set, "cam");
  ev::EventRecord e;
  ASSERT_EQ(store.begin(e).n, 1u);
  ASSERT_TRUE(put(store, 1, "snapshot"));
  // The folder moves away and a link to another folder takes its name.
  fs::rename(root_ + "/ev", root_ + "/moved");
  fs::create_directory_symlink(root_ + "/other", root_ + "/ev");

  ASSERT_EQ(store.begin(e).n, 2u);  // retention: event 1 goes
  EXPECT_FALSE(put(store, 2, "snapshot"));
  std::string temp;
  EXPECT_EQ(store.create_temp(2, "clip", &temp), -1);
  const ev::EvidenceCounters c = store.counters();
  EXPECT_EQ(c.snapshots, 1u);
  EXPECT_EQ(c.write_failures, 2u);
  EXPECT_EQ(c.pruned_events, 1u);
  EXPECT_EQ(c.last_error, root_ +
                              "/ev/cam-2-clip.mkv: the evidence folder was replaced by a "
                              "symbolic link since the start; files are not written through "
                              "it: put the folder back or restart with a folder");
  EXPECT_EQ(store.find(2)->errors.at("snapshot"),
            root_ +
                "/ev/cam-2-snapshot.jpg: the evidence folder was replaced by a symbolic link "
                "since the start; files are not written through it: put the folder back or "
                "restart with a folder");
  // Nothing written or deleted through the link; retention pruned event 1
  // in the folder it was written to, and event 2's record is there too.
  EXPECT_EQ(names(root_ + "/other"), std::set<std::string>{"cam-1-snapshot.jpg"});
  EXPECT_EQ(names(root_ + "/moved"), std::set<std::string>{"cam-2-event.json"});
}

TEST_F(EvidenceFolderSwap, AnotherFolderOfTheSameNameIsRefusedToo) {
  ev::EvidenceSettings set;
  set.dir = root_ + "/ev";
  ev::EvidenceStore store(set, "cam");
  ev::EventRecord e;
  store.begin(e);
  fs::rename(root_ + "/ev", root_ + "/moved");
  fs::create_directory(root_ + "/ev");
  EXPECT_FALSE(put(store, 1, "crop"));
  EXPECT_EQ(store.counters().write_failures, 1u);
  EXPECT_NE(store.counters().last_error.find("the evidence folder was replaced since the start"),
            std::string::npos)
      << store.counters().last_error;
  EXPECT_TRUE(names(root_ + "/ev").empty());
  // A folder that is gone is a counted loss as well.
  fs::remove(root_ + "/ev");
  EXPECT_FALSE(put(store, 1, "snapshot"));
  EXPECT_EQ(store.counters().last_error,
            root_ + "/ev/cam-1-snapshot.jpg: No such file or directory");
}

// While the folder stays, a file written through a descriptor lands under
// its name like any other.
TEST_F(EvidenceFolderSwap, ATempFileAdoptedGetsItsName) {
  ev::EvidenceSettings set;
  set.dir = root_ + "/ev";
  ev::EvidenceStore store(set, "cam");
  ev::EventRecord e;
  store.begin(e);
  std::string temp;
  const int fd = store.create_temp(1, "clip", &temp);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "clip!", 5), 5);
  close(fd);
  ASSERT_TRUE(store.adopt_temp(1, "clip", temp, 2.0));
  EXPECT_EQ(fs::file_size(root_ + "/ev/cam-1-clip.mkv"), 5u);
  EXPECT_EQ(store.find(1)->clip_seconds, 2.0);
  EXPECT_EQ(store.counters().clips, 1u);
  EXPECT_EQ(names(root_ + "/ev"), (std::set<std::string>{"cam-1-clip.mkv", "cam-1-event.json"}));
}

TEST(EvidenceSnapshot, CaptionNamesIdClassDefectAndScore) {
  ev::EventRecord e;
  e.track_id = 12;
  e.label = "washer";
  e.verdict = "reject";
  e.defect = "spot";
  e.defect_score = 0.9712;
  EXPECT_EQ(ev::snapshot_caption(e), "#12 washer spot 0.97");
  EXPECT_TRUE(ev::snapshot_alarm(e));
  e.defect = "";
  EXPECT_EQ(ev::snapshot_caption(e), "#12 washer reject");
  // A server camera's event: no verdict, green.
  ev::EventRecord s;
  s.track_id = 3;
  s.label = "bracket";
  EXPECT_EQ(ev::snapshot_caption(s), "#3 bracket");
  EXPECT_FALSE(ev::snapshot_alarm(s));
  // The defect survives the record's JSON (the -event.json files).
  e.defect = "anomaly";
  e.defect_score = 0.75;
  const ev::EventRecord back = ev::event_from_json(ev::to_json(e));
  EXPECT_EQ(back.defect, "anomaly");
  EXPECT_EQ(back.defect_score, 0.75);
  EXPECT_FALSE(ev::to_json(s).contains("defect"));
}

// The box of an alarm is red, any other green: read back from the JPEG.
TEST(EvidenceSnapshot, AnAlarmBoxIsDrawnRed) {
  // 1600 px wide: the box is drawn 4 px thick (1 px per 400), wider than
  // JPEG's 2x2 colour subsampling.
  std::vector<std::uint8_t> grey(1600 * 1200 * 3, 128);
  namespace srv = torchinfer::server;
  srv::RawImage img;
  img.format = srv::RawFormat::kBGR;
  img.width = 1600;
  img.height = 1200;
  img.planes[0] = grey.data();
  img.strides[0] = 1600 * 3;
  for (bool alarm : {true, false}) {
    srv::RawImage drawn = img;
    drawn.boxes.push_back({400, 300, 400, 400, "#1 washer spot 0.97", alarm});
    const std::vector<std::uint8_t> jpeg = srv::encode_jpeg(drawn, 95);
    const cv::Mat m = cv::imdecode(jpeg, cv::IMREAD_COLOR);
    ASSERT_FALSE(m.empty());
    const cv::Vec3b edge = m.at<cv::Vec3b>(500, 400);  // the box's left edge (BGR)
    if (alarm) {
      EXPECT_GT(edge[2], 200) << "red";
      EXPECT_LT(edge[1], 60);
      EXPECT_LT(edge[0], 60);
    } else {
      EXPECT_GT(edge[1], 200) << "green";
      EXPECT_LT(edge[2], 60);
    }
    EXPECT_NEAR(m.at<cv::Vec3b>(500, 600)[1], 128, 6) << "inside the box: untouched";
  }
}
