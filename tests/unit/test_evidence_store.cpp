// The evidence store (pipelines/evidence/core/evidence_store.h): settings as hostile
// input, the folder's checks, numbering across runs, atomic writes,
// retention by count and by bytes, and write failures counted, never thrown.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "evidence/core/evidence_store.h"

namespace ev = torchinfer::evidence;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

class EvidenceStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/evidence-store-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(root_, fs::perms::owner_all, ec);
    fs::remove_all(root_, ec);
  }
  ev::EvidenceSettings settings(const std::string& sub = "ev") const {
    ev::EvidenceSettings s;
    s.dir = root_ + "/" + sub;
    return s;
  }
  std::set<std::string> names(const std::string& dir) const {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename());
    return out;
  }
  static std::string read(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }
  static bool put(ev::EvidenceStore& s, std::uint64_t n, const std::string& kind, std::size_t size,
                  char fill = 'x') {
    const std::vector<std::uint8_t> data(size, static_cast<std::uint8_t>(fill));
    return s.write(n, kind, data.data(), data.size(), kind == "clip" ? 2.5 : 0);
  }
  std::string root_;
};

std::string settings_error(const json& j, const std::string& path = "evidence") {
  try {
    ev::parse_evidence_settings(j, path);
  } catch (const torchinfer::FieldError& e) {
    return e.field() + " | " + e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST(EvidenceSettings, DefaultsAndEveryField) {
  const ev::EvidenceSettings d = ev::parse_evidence_settings(json::object(), "evidence");
  EXPECT_EQ(d.dir, "");
  EXPECT_DOUBLE_EQ(d.pre_s, 2.0);
  EXPECT_DOUBLE_EQ(d.post_s, 1.0);
  EXPECT_EQ(d.max_events, 1000u);
  EXPECT_EQ(d.max_bytes, 1ull << 30);
  EXPECT_EQ(d.ring_max_bytes, 64u << 20);
  const json j = {{"dir", "/var/evidence"}, {"pre_s", 0.5},       {"post_s", 0},
                  {"max_events", 7},        {"max_bytes", 50000}, {"ring_max_bytes", 1 << 20}};
  const ev::EvidenceSettings s = ev::parse_evidence_settings(j, "evidence");
  EXPECT_EQ(s.dir, "/var/evidence");
  EXPECT_DOUBLE_EQ(s.pre_s, 0.5);
  EXPECT_DOUBLE_EQ(s.post_s, 0.0);
  EXPECT_EQ(s.max_events, 7u);
  EXPECT_EQ(s.max_bytes, 50000u);
  EXPECT_EQ(s.ring_max_bytes, 1u << 20);
  EXPECT_EQ(ev::to_json(s), j);
}

TEST(EvidenceSettings, RefusesNamingTheField) {
  EXPECT_EQ(settings_error({{"pre_seconds", 1}}),
            "evidence.pre_seconds | evidence.pre_seconds: unknown field; the fields are dir, "
            "pre_s, post_s, max_events, max_bytes, ring_max_bytes");
  EXPECT_EQ(settings_error({{"pre_s", 31}}),
            "evidence.pre_s | evidence.pre_s: out of range: give seconds from 0 to 30 (got 31)");
  EXPECT_EQ(settings_error({{"post_s", -0.5}}),
            "evidence.post_s | evidence.post_s: out of range: give seconds from 0 to 30 (got "
            "-0.5)");
  EXPECT_EQ(settings_error({{"pre_s", "2"}}),
            "evidence.pre_s | evidence.pre_s: must be a number, not string");
  EXPECT_EQ(settings_error({{"max_events", 0}}),
            "evidence.max_events | evidence.max_events: out of range: give an integer from 1 "
            "to 1000000 (got 0)");
  EXPECT_EQ(settings_error({{"max_events", 2.5}}),
            "evidence.max_events | evidence.max_events: must be an integer, not number");
  EXPECT_EQ(settings_error({{"max_bytes", -1}}),
            "evidence.max_bytes | evidence.max_bytes: out of range: give an integer from 4096 "
            "to 1125899906842624 (got -1)");
  EXPECT_EQ(settings_error({{"ring_max_bytes", 1000}}),
            "evidence.ring_max_bytes | evidence.ring_max_bytes: out of range: give an integer "
            "from 65536 to 4294967296 (got 1000)");
  EXPECT_EQ(settings_error({{"dir", 5}}),
            "evidence.dir | evidence.dir: must be a string, not integer");
  EXPECT_EQ(settings_error({{"dir", ""}}),
            "evidence.dir | evidence.dir: give a folder's path of 1 to 4096 characters");
  EXPECT_EQ(settings_error({{"dir", "/tmp/a\nb"}}),
            "evidence.dir | evidence.dir: holds a control character");
  EXPECT_EQ(settings_error(json::array(), "streams[2].evidence"),
            "streams[2].evidence | streams[2].evidence: must be a JSON object, not array");
}

TEST_F(EvidenceStoreTest, DirIsCreatedWithMode0750) {
  ev::EvidenceSettings s = settings("a/b/c");
  ev::EvidenceStore store(s, "cam1");
  EXPECT_EQ(store.settings().dir, root_ + "/a/b/c");
  struct stat st;
  ASSERT_EQ(stat((root_ + "/a/b/c").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0750u);
  EXPECT_TRUE(names(root_ + "/a/b/c").empty());  // the write probe is gone
}

TEST_F(EvidenceStoreTest, RefusesADirThatIsAFileASymlinkOrUnderAFile) {
  std::ofstream(root_ + "/file") << "x";
  fs::create_directory(root_ + "/real");
  fs::create_directory_symlink(root_ + "/real", root_ + "/link");
  auto error_of = [&](const std::string& dir) -> std::string {
    ev::EvidenceSettings s;
    s.dir = dir;
    try {
      ev::EvidenceStore store(s, "cam");
    } catch (const torchinfer::Error& e) {
      EXPECT_EQ(e.kind(), torchinfer::ErrorKind::kConfigInvalid);
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_EQ(error_of(root_ + "/file"),
            "evidence dir '" + root_ +
                "/file' exists and is not a folder; name a folder (it is created if missing)");
  EXPECT_EQ(
      error_of(root_ + "/link"),
      "evidence dir '" + root_ + "/link' is a symbolic link; name the folder it points to itself");
  EXPECT_EQ(error_of(root_ + "/file/sub"),
            "evidence dir '" + root_ +
                "/file/sub' cannot be read (Not a directory); name a "
                "folder this process can write");
  EXPECT_EQ(error_of(root_ + "/file/sub/deeper"),
            "evidence dir '" + root_ +
                "/file/sub/deeper' cannot be read (Not a directory); "
                "name a folder this process can write");
  EXPECT_EQ(error_of(""), "evidence dir is empty: name a folder for the snapshots and clips");
  EXPECT_THROW(ev::EvidenceStore(settings(), "../up"), torchinfer::Error);
  EXPECT_THROW(ev::EvidenceStore(settings(), ""), torchinfer::Error);
}

TEST_F(EvidenceStoreTest, NumbersPathsAndAtomicFiles) {
  ev::EvidenceStore store(settings(), "cam1");
  ev::EventRecord in;
  in.reason = "class:defect";
  in.label = "defect";
  in.track_id = 12;
  in.pts_ns = 1'500'000'000;
  const ev::EventRecord a = store.begin(in);
  const ev::EventRecord b = store.begin(in);
  EXPECT_EQ(a.n, 1u);
  EXPECT_EQ(b.n, 2u);
  EXPECT_EQ(a.camera, "cam1");
  EXPECT_EQ(a.snapshot, root_ + "/ev/cam1-1-snapshot.jpg");
  EXPECT_EQ(a.crop, root_ + "/ev/cam1-1-crop.jpg");
  EXPECT_EQ(a.clip, root_ + "/ev/cam1-1-clip.mkv");
  EXPECT_GT(a.wall_ms, 1'600'000'000'000);
  // begin() writes nothing (it runs on the streaming thread).
  EXPECT_TRUE(names(root_ + "/ev").empty());

  ASSERT_TRUE(put(store, 1, "snapshot", 1000, 's'));
  ASSERT_TRUE(put(store, 1, "clip", 3000, 'c'));
  EXPECT_EQ(read(a.snapshot), std::string(1000, 's'));
  EXPECT_EQ(read(a.clip), std::string(3000, 'c'));
  // Only named files: no temp file is left behind.
  EXPECT_EQ(names(root_ + "/ev"),
            (std::set<std::string>{"cam1-1-snapshot.jpg", "cam1-1-clip.mkv", "cam1-1-event.json"}));
  const auto rec = store.find(1);
  ASSERT_TRUE(rec);
  EXPECT_TRUE(rec->snapshot_written);
  EXPECT_FALSE(rec->crop_written);
  EXPECT_TRUE(rec->clip_written);
  EXPECT_DOUBLE_EQ(rec->clip_seconds, 2.5);
  EXPECT_EQ(rec->bytes, 4000u);
  EXPECT_EQ(ev::to_json(ev::event_from_json(ev::to_json(*rec))), ev::to_json(*rec));
  EXPECT_THROW(ev::event_from_json({{"n", "one"}}), torchinfer::Error);
  // The record on disk is the record.
  const json on_disk = json::parse(read(root_ + "/ev/cam1-1-event.json"));
  EXPECT_EQ(on_disk, ev::to_json(*rec));
  const ev::EvidenceCounters c = store.counters();
  EXPECT_EQ(c.events, 2u);
  EXPECT_EQ(c.snapshots, 1u);
  EXPECT_EQ(c.crops, 0u);
  EXPECT_EQ(c.clips, 1u);
  EXPECT_EQ(c.write_failures, 0u);
  EXPECT_EQ(c.bytes_on_disk, 4000u + fs::file_size(root_ + "/ev/cam1-1-event.json"));
  const auto listed = store.list();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].n, 2u);
  EXPECT_EQ(listed[1].n, 1u);
  EXPECT_EQ(store.list(1).size(), 1u);
}

TEST_F(EvidenceStoreTest, NumberingContinuesAfterTheHighestOnDisk) {
  {
    ev::EvidenceStore store(settings(), "cam");
    for (int i = 0; i < 3; ++i) store.begin({});
    ASSERT_TRUE(put(store, 3, "snapshot", 100));
    ASSERT_TRUE(put(store, 1, "crop", 50));
  }
  // Another camera's files and names that only look alike do not count.
  std::ofstream(root_ + "/ev/cam-9-snapshot.jpg.bak") << "x";
  std::ofstream(root_ + "/ev/camx-40-snapshot.jpg") << "x";
  std::ofstream(root_ + "/ev/cam-a-7-clip.mkv") << "x";
  // A temp file of a run that died mid-write.
  std::ofstream(root_ + "/ev/.cam.tmp-1-1") << "half";
  std::ofstream(root_ + "/ev/.cam-3-clip.mkv.part") << "half a clip";
  std::ofstream(root_ + "/ev/.camx-3-clip.mkv.part") << "another camera's";
  ev::EvidenceStore again(settings(), "cam");
  EXPECT_FALSE(fs::exists(root_ + "/ev/.cam.tmp-1-1"));
  EXPECT_FALSE(fs::exists(root_ + "/ev/.cam-3-clip.mkv.part"));
  EXPECT_TRUE(fs::exists(root_ + "/ev/.camx-3-clip.mkv.part"));
  const auto listed = again.list();
  ASSERT_EQ(listed.size(), 2u);  // events 1 and 3 have files; 2 has none
  EXPECT_EQ(listed[0].n, 3u);
  EXPECT_TRUE(listed[0].snapshot_written);
  EXPECT_FALSE(listed[0].clip_written);
  EXPECT_EQ(listed[0].bytes, 100u);
  EXPECT_EQ(listed[1].n, 1u);
  EXPECT_TRUE(listed[1].crop_written);
  EXPECT_EQ(again.begin({}).n, 4u);
  EXPECT_EQ(again.state(2), ev::EventState::kPruned);
  EXPECT_EQ(again.state(3), ev::EventState::kKept);
  EXPECT_EQ(again.state(5), ev::EventState::kUnknown);
  EXPECT_EQ(again.counters().bytes_on_disk, 150u + fs::file_size(root_ + "/ev/cam-1-event.json") +
                                                fs::file_size(root_ + "/ev/cam-3-event.json"));
}

TEST_F(EvidenceStoreTest, RetentionByCountDeletesTheOldestEventsWholly) {
  ev::EvidenceSettings s = settings();
  s.max_events = 3;
  ev::EvidenceStore store(s, "cam");
  for (std::uint64_t n = 1; n <= 5; ++n) {
    ASSERT_EQ(store.begin({}).n, n);
    ASSERT_TRUE(put(store, n, "snapshot", 100));
    ASSERT_TRUE(put(store, n, "crop", 10));
    ASSERT_TRUE(put(store, n, "clip", 200));
  }
  std::set<std::string> expected;
  for (int n = 3; n <= 5; ++n)
    for (const char* k : {"snapshot.jpg", "crop.jpg", "clip.mkv", "event.json"})
      expected.insert("cam-" + std::to_string(n) + "-" + k);
  EXPECT_EQ(names(root_ + "/ev"), expected);
  const auto listed = store.list();
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_EQ(listed[0].n, 5u);
  EXPECT_EQ(listed[2].n, 3u);
  EXPECT_EQ(store.counters().pruned_events, 2u);
  EXPECT_EQ(store.state(1), ev::EventState::kPruned);
  EXPECT_FALSE(store.find(2));
  std::uint64_t on_disk = 0;
  for (const auto& e : fs::directory_iterator(root_ + "/ev")) on_disk += e.file_size();
  EXPECT_EQ(store.counters().bytes_on_disk, on_disk);
}

TEST_F(EvidenceStoreTest, RetentionByBytesKeepsTheNewestUnderTheLimit) {
  ev::EvidenceSettings s = settings();
  s.max_bytes = 10000;
  ev::EvidenceStore store(s, "cam");
  for (std::uint64_t n = 1; n <= 6; ++n) {
    store.begin({});
    ASSERT_TRUE(put(store, n, "snapshot", 3000));
  }
  // Each event is 3000 bytes and a record of about 400: two fit, a third
  // passes 10000.
  const auto listed = store.list();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].n, 6u);
  EXPECT_EQ(listed[1].n, 5u);
  EXPECT_EQ(store.counters().pruned_events, 4u);
  EXPECT_LE(store.counters().bytes_on_disk, 10000u);
  // A single event larger than the limit is kept (the newest always is).
  store.begin({});
  ASSERT_TRUE(put(store, 7, "clip", 20000));
  ASSERT_EQ(store.list().size(), 1u);
  EXPECT_EQ(store.list()[0].n, 7u);
  EXPECT_TRUE(fs::exists(root_ + "/ev/cam-7-clip.mkv"));
  // The deletions of the last prune happen on the next write.
  store.begin({});
  ASSERT_FALSE(fs::exists(root_ + "/ev/cam-8-event.json"));
  ASSERT_TRUE(put(store, 8, "snapshot", 10));
  EXPECT_FALSE(fs::exists(root_ + "/ev/cam-6-snapshot.jpg"));
  EXPECT_FALSE(fs::exists(root_ + "/ev/cam-5-event.json"));
}

TEST_F(EvidenceStoreTest, AFileForAPrunedEventIsDroppedNotCounted) {
  ev::EvidenceSettings s = settings();
  s.max_events = 1;
  ev::EvidenceStore store(s, "cam");
  store.begin({});
  store.begin({});  // prunes 1 before its clip lands
  EXPECT_FALSE(put(store, 1, "clip", 100));
  EXPECT_FALSE(fs::exists(root_ + "/ev/cam-1-clip.mkv"));
  EXPECT_EQ(store.counters().write_failures, 0u);
  EXPECT_EQ(store.counters().pruned_events, 1u);
  EXPECT_EQ(names(root_ + "/ev"), std::set<std::string>{});
}

TEST_F(EvidenceStoreTest, AFolderRemovedDuringTheRunIsCountedNeverThrown) {
  ev::EvidenceStore store(settings(), "cam");
  store.begin({});
  ASSERT_TRUE(put(store, 1, "snapshot", 100));
  fs::remove_all(root_ + "/ev");
  store.begin({});
  EXPECT_FALSE(put(store, 2, "snapshot", 100));
  EXPECT_FALSE(put(store, 2, "clip", 100));
  const ev::EvidenceCounters c = store.counters();
  EXPECT_EQ(c.write_failures, 2u);
  EXPECT_EQ(c.snapshots, 1u);
  EXPECT_EQ(c.last_error, root_ + "/ev/cam-2-clip.mkv: No such file or directory");
  const auto e = store.find(2);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->errors.at("snapshot"), root_ + "/ev/cam-2-snapshot.jpg: No such file or directory");
  EXPECT_FALSE(e->snapshot_written);
  // Not re-created: a folder that vanished (an unmounted disk) must not turn
  // into files on the root file system.
  EXPECT_FALSE(fs::exists(root_ + "/ev"));
}

TEST_F(EvidenceStoreTest, AFullDiskIsCountedAndSmallerFilesStillLand) {
  ev::EvidenceStore store(settings(), "cam");
  store.begin({});
  // RLIMIT_FSIZE stands in for a full disk: write() fails with EFBIG past
  // the limit (SIGXFSZ ignored, as a server would have to).
  struct sigaction ignore = {}, old = {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGXFSZ, &ignore, &old), 0);
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit small = saved;
  small.rlim_cur = 8192;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  const bool big = put(store, 1, "clip", 100000);
  const bool little = put(store, 1, "snapshot", 1000);
  setrlimit(RLIMIT_FSIZE, &saved);
  sigaction(SIGXFSZ, &old, nullptr);
  EXPECT_FALSE(big);
  EXPECT_TRUE(little);
  EXPECT_FALSE(fs::exists(root_ + "/ev/cam-1-clip.mkv"));
  const ev::EvidenceCounters c = store.counters();
  EXPECT_EQ(c.write_failures, 1u);
  EXPECT_EQ(c.clips, 0u);
  EXPECT_EQ(c.snapshots, 1u);
  EXPECT_EQ(c.last_error, root_ + "/ev/cam-1-clip.mkv: File too large");
  EXPECT_EQ(names(root_ + "/ev"),
            (std::set<std::string>{"cam-1-snapshot.jpg", "cam-1-event.json"}));
  EXPECT_EQ(store.find(1)->errors.at("clip"), c.last_error);
}

TEST_F(EvidenceStoreTest, AdoptRenamesIntoPlaceAndCountsAMissingFile) {
  ev::EvidenceStore store(settings(), "cam");
  store.begin({});
  const std::string muxed = root_ + "/muxed.mkv";
  std::ofstream(muxed) << std::string(777, 'm');
  ::chmod(muxed.c_str(), 0644);
  ASSERT_TRUE(store.adopt(1, "clip", muxed, 3.0));
  EXPECT_FALSE(fs::exists(muxed));
  EXPECT_EQ(read(root_ + "/ev/cam-1-clip.mkv"), std::string(777, 'm'));
  struct stat st;
  ASSERT_EQ(::stat((root_ + "/ev/cam-1-clip.mkv").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u) << "the muxer's mode stayed";
  EXPECT_DOUBLE_EQ(store.find(1)->clip_seconds, 3.0);
  EXPECT_FALSE(store.adopt(1, "crop", root_ + "/never-written.jpg"));
  EXPECT_EQ(store.counters().write_failures, 1u);
  EXPECT_EQ(store.counters().last_error, root_ + "/never-written.jpg: No such file or directory");
  EXPECT_FALSE(put(store, 1, "video", 10));
  EXPECT_EQ(store.counters().last_error, "unknown evidence kind 'video'");
  store.count_failure(1, "clip", "the encoder stopped");
  EXPECT_EQ(store.counters().write_failures, 3u);
  EXPECT_EQ(store.find(1)->errors.at("clip"), "the encoder stopped");
}

TEST_F(EvidenceStoreTest, ConcurrentWritersCountExactly) {
  ev::EvidenceSettings s = settings();
  s.max_events = 10;
  ev::EvidenceStore store(s, "cam");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        const std::uint64_t n = store.begin({}).n;
        put(store, n, "snapshot", 64);
      }
    });
  for (auto& t : threads) t.join();
  const ev::EvidenceCounters c = store.counters();
  EXPECT_EQ(c.events, 100u);
  EXPECT_EQ(c.pruned_events, 90u);
  EXPECT_EQ(c.write_failures, 0u);
  EXPECT_EQ(store.list(100).size(), 10u);
  EXPECT_EQ(store.list(100)[0].n, 100u);
}
