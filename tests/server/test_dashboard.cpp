// The dashboard in a real headless Chromium, driven over chromedriver's W3C
// WebDriver API: the page shows the cameras with their live snapshots and
// figures, adds one from the form, shows a refused add's reason, removes one;
// a machine-vision camera's health and its Trigger button; an evidence
// camera's last events.
#include <gtest/gtest.h>

#include <regex>

#include "fake_camera.h"
#include "server_process.h"

using nlohmann::json;
using namespace torchinfer::test;

namespace {

const char* kElementKey = "element-6066-11e4-a52e-4f735466cecf";

class WebDriver {
 public:
  WebDriver(Http& http, int port, const std::string& profile_dir) : http_(http) {
    base_ = "http://127.0.0.1:" + std::to_string(port);
    driver_ = std::make_unique<Child>(std::vector<std::string>{
        "chromedriver", "--port=" + std::to_string(port), "--allowed-ips=127.0.0.1"});
    ready_ = eventually(
        [&] {
          const HttpReply r = http_.get(base_ + "/status");
          return r.status == 200 && r.json()["value"]["ready"] == true;
        },
        60);
    if (!ready_) return;
    const json caps = {{"capabilities",
                        {{"alwaysMatch",
                          {{"browserName", "chrome"},
                           {"goog:chromeOptions",
                            {{"binary", "/usr/bin/chromium"},
                             {"args",
                              {"--headless=new", "--no-sandbox", "--disable-gpu",
                               "--disable-dev-shm-usage", "--user-data-dir=" + profile_dir}}}}}}}}};
    const HttpReply r = http_.request("POST", base_ + "/session", caps.dump());
    session_ = r.json()["value"].value("sessionId", "");
    if (session_.empty()) error_ = r.body + r.error;
  }
  ~WebDriver() {
    if (!session_.empty()) http_.request("DELETE", base_ + "/session/" + session_);
  }
  bool ok() const { return ready_ && !session_.empty(); }
  std::string error() const { return error_ + driver_->err(); }

  json command(const std::string& method, const std::string& path,
               const json& body = json::object()) {
    const HttpReply r = http_.request(method, base_ + "/session/" + session_ + path,
                                      method == "GET" ? "" : body.dump());
    EXPECT_EQ(r.status, 200) << path << ": " << r.body << r.error;
    return r.json()["value"];
  }
  void go(const std::string& url) { command("POST", "/url", {{"url", url}}); }
  json script(const std::string& js) {
    return command("POST", "/execute/sync", {{"script", js}, {"args", json::array()}});
  }
  std::string element(const std::string& css) {
    return command("POST", "/element", {{"using", "css selector"}, {"value", css}})
        .value(kElementKey, "");
  }
  void type(const std::string& css, const std::string& text) {
    const std::string e = element(css);
    command("POST", "/element/" + e + "/clear");
    command("POST", "/element/" + e + "/value", {{"text", text}});
  }
  void click(const std::string& css) { command("POST", "/element/" + element(css) + "/click"); }

 private:
  Http& http_;
  std::string base_, session_, error_;
  bool ready_ = false;
  std::unique_ptr<Child> driver_;
};

std::vector<std::string> server_ids(Http& http, const ServerProcess& server) {
  std::vector<std::string> ids;
  const json list = http.get(server.url("/streams")).json();
  for (const auto& s : list["streams"]) ids.push_back(s["id"]);
  return ids;
}

const char* kCardIds =
    "return Array.from(document.querySelectorAll('.stream')).map(c => c.dataset.id);";

}  // namespace

TEST(Dashboard, ShowsAddsAndRemovesCameras) {
  ServerProcess server(json{{"streams",
                             {{{"id", "cam0"}, {"uri", clip_uri()}, {"restream", true}},
                              {{"id", "cam1"}, {"uri", clip_uri()}}}}});
  ASSERT_TRUE(server.ready()) << server.child().err();
  Http http;
  WebDriver wd(http, free_port(), server.dir() + "/chromium-profile");
  ASSERT_TRUE(wd.ok()) << wd.error();
  wd.go(server.url("/"));

  // Both cameras, each with its snapshot loaded (640x480 JPEG), its state
  // and figures, and the detector's classes.
  ASSERT_TRUE(eventually(
      [&] {
        return wd.script(kCardIds) == json({"cam0", "cam1"});
      },
      60))
      << wd.script(kCardIds);
  ASSERT_TRUE(eventually(
      [&] {
        return wd.script(
                   "return Array.from(document.querySelectorAll('.stream img')).every("
                   "i => i.complete && i.naturalWidth === 640 && i.naturalHeight === 480);") ==
               true;
      },
      60));
  ASSERT_TRUE(eventually(
      [&] {
        const json t =
            wd.script("return document.querySelector('.stream[data-id=\"cam0\"]').innerText;");
        const std::string s = t.is_string() ? t.get<std::string>() : "";
        return s.find("running") != std::string::npos && s.find("fps") != std::string::npos &&
               s.find("bracket") != std::string::npos;
      },
      60))
      << wd.script("return document.body.innerText;");
  // The card's frame counters add up: in = inferred + skipped + dropped +
  // in flight (issue 24, item 2).
  const json figures =
      wd.script("return document.querySelector('.stream[data-id=\"cam1\"] .figures').innerText;");
  std::smatch m;
  const std::string text = figures.is_string() ? figures.get<std::string>() : "";
  ASSERT_TRUE(
      std::regex_search(text, m,
                        std::regex("frames (\\d+) in = (\\d+) inferred \\+ (\\d+) skipped"
                                   "(?: \\([^)]*\\))? \\+ (\\d+) dropped \\+ (\\d+) in flight")))
      << text;
  EXPECT_EQ(std::stoull(m[1]),
            std::stoull(m[2]) + std::stoull(m[3]) + std::stoull(m[4]) + std::stoull(m[5]))
      << text;
  EXPECT_EQ(wd.script("return document.getElementById('add-model').value;"), "parts");
  // The re-stream's URL on the camera that has one, nothing on the other.
  EXPECT_EQ(wd.script("return document.querySelector('.stream[data-id=\"cam0\"] .rtsp')"
                      ".textContent;"),
            "RTSP: " + server.rtsp_url("cam0") + " (0 watching)");
  EXPECT_EQ(
      wd.script("return document.querySelector('.stream[data-id=\"cam1\"] .rtsp').textContent;"),
      "");

  // A refused add shows the server's reason and adds nothing.
  wd.type("#add-id", "bad id");
  wd.type("#add-uri", clip_uri());
  wd.click("#add-button");
  ASSERT_TRUE(eventually(
      [&] {
        const json m = wd.script("return document.getElementById('message').textContent;");
        return m.is_string() && m.get<std::string>().find("not a stream id") != std::string::npos;
      },
      30));
  EXPECT_EQ(server_ids(http, server), std::vector<std::string>({"cam0", "cam1"}));

  // Add from the form, re-stream ticked: it appears on the page and in the
  // server.
  wd.type("#add-id", "cam9");
  wd.click("#add-restream");
  wd.click("#add-button");
  ASSERT_TRUE(eventually(
      [&] {
        return wd.script(kCardIds) == json({"cam0", "cam1", "cam9"});
      },
      60))
      << wd.script("return document.body.innerText;");
  EXPECT_EQ(server_ids(http, server), std::vector<std::string>({"cam0", "cam1", "cam9"}));
  EXPECT_EQ(server.stream(http, "cam9")["rtsp_url"], server.rtsp_url("cam9"));
  ASSERT_TRUE(eventually(
      [&] {
        return wd.script(
                   "const i = document.querySelector('.stream[data-id=\"cam9\"] img');"
                   "return i.complete && i.naturalWidth === 640;") == true;
      },
      60));

  // Remove it with its button.
  wd.click(".stream[data-id=\"cam9\"] .remove");
  ASSERT_TRUE(eventually([&] { return wd.script(kCardIds) == json({"cam0", "cam1"}); }, 30));
  EXPECT_EQ(server_ids(http, server), std::vector<std::string>({"cam0", "cam1"}));
  EXPECT_EQ(wd.script("return document.getElementById('message').textContent;"), "");
}

// A software-triggered GigE Vision camera (Aravis' fake camera): its card
// names the camera and its format, and each click on Trigger is one more
// frame received and analysed, and its snapshot shows.
TEST(Dashboard, AMachineVisionCameraShowsItsHealthAndTakesTriggers) {
  FakeCamera fake("TIDASH");
  ASSERT_TRUE(fake.listening()) << kNoFakeCamera;
  ServerProcess server(json{{"streams",
                             {{{"id", "gige"},
                               {"uri", fake.uri()},
                               {"pixel_format", "Mono8"},
                               {"trigger", "software"}}}}});
  ASSERT_TRUE(server.ready()) << server.child().err();
  Http http;
  WebDriver wd(http, free_port(), server.dir() + "/chromium-profile");
  ASSERT_TRUE(wd.ok()) << wd.error();
  wd.go(server.url("/"));
  const char* kCamera =
      "return document.querySelector('.stream[data-id=\"gige\"] .camera').innerText;";
  ASSERT_TRUE(eventually(
      [&] {
        const json t = wd.script(kCamera);
        return t.is_string() && t.get<std::string>().find("camera " + fake.name() +
                                                          " (Mono8 512x512, software)") == 0;
      },
      60))
      << wd.script(kCamera) << server.stream(http, "gige");
  for (int i = 1; i <= 2; ++i) {
    wd.click(".stream[data-id=\"gige\"] .trigger");
    ASSERT_TRUE(eventually(
        [&] {
          const json t = wd.script(kCamera);
          const std::string s = t.is_string() ? t.get<std::string>() : "";
          return s.find(" " + std::to_string(i) + " frames received") != std::string::npos &&
                 s.find(" " + std::to_string(i) + " triggers") != std::string::npos;
        },
        30))
        << wd.script(kCamera);
  }
  EXPECT_NE(wd.script(kCamera).get<std::string>().find("0 lost"), std::string::npos);
  ASSERT_TRUE(eventually(
      [&] {
        return wd.script(
                   "const i = document.querySelector('.stream[data-id=\"gige\"] img');"
                   "return i.complete && i.naturalWidth === 512 && i.naturalHeight === 512;") ==
               true;
      },
      30));
  EXPECT_EQ(server.stream(http, "gige")["frames"]["inferred"], 2);
}

// A camera with evidence: its card counts the events and shows the last
// four as snapshot thumbnails, each linking the event's clip.
TEST(Dashboard, AnEvidenceCameraShowsItsLastEvents) {
  const json ev = {{"id", "ev"},
                   {"uri", clip_uri()},
                   {"loop", false},
                   {"track", true},
                   {"evidence", {{"classes", {"bracket", "washer"}}, {"max_events", 10}}}};
  ServerProcess server(json{{"streams", json::array({ev})}});
  ASSERT_TRUE(server.ready()) << server.child().err();
  Http http;
  json s;
  // The clip played once: every event's clip is written once it has ended.
  ASSERT_TRUE(eventually(
      [&] {
        s = server.stream(http, "ev");
        if (s.is_null() || s["state"] != "ended") return false;
        for (const json& e : s["evidence"]["last_events"])
          if (e["clip_url"].is_null()) return false;
        return true;
      },
      120))
      << s.dump() << server.child().err();
  EXPECT_TRUE(frames_add_up(counts_of(s), Settled::kYes));
  const json evidence = s["evidence"];
  ASSERT_EQ(evidence["last_events"].size(), 4u);
  WebDriver wd(http, free_port(), server.dir() + "/chromium-profile");
  ASSERT_TRUE(wd.ok()) << wd.error();
  wd.go(server.url("/"));
  const std::string expected =
      "evidence: " + evidence["events"].dump() + " events · 0 files lost" +
      (evidence["pruned"] > 0 ? " · " + evidence["pruned"].dump() + " pruned" : "");
  const char* kText =
      "return document.querySelector('.stream[data-id=\"ev\"] .evidence').innerText;";
  ASSERT_TRUE(eventually(
      [&] {
        const json t = wd.script(kText);
        return t.is_string() && t.get<std::string>().rfind(expected, 0) == 0;
      },
      60))
      << wd.script(kText) << " / " << expected;
  json want = json::array();
  for (const json& e : evidence["last_events"]) want.push_back(e["clip_url"]);
  EXPECT_EQ(wd.script("return Array.from(document.querySelectorAll("
                      "'.stream[data-id=\"ev\"] .evidence a')).map(a => a.getAttribute('href'));"),
            want);
  ASSERT_TRUE(eventually(
      [&] {
        return wd.script(
                   "const t = document.querySelectorAll('.stream[data-id=\"ev\"] .evidence "
                   "img'); return t.length === 4 && Array.from(t).every("
                   "i => i.complete && i.naturalWidth === 640 && i.naturalHeight === 480);") ==
               true;
      },
      30));
}

// A camera with a gate line: its card shows the counts as text (until now
// only drawn into the image), the same as /streams gives. The belt moves
// left to right, so the gate drawn bottom-up counts the clip's 12 parts
// that cross x = 320 forward (7 brackets, 5 washers; the truth's).
TEST(Dashboard, ACountingCameraShowsItsLineCountsAsText) {
  const json gate = {
      {"name", "gate"}, {"points", {{320, 480}, {320, 0}}}, {"classes", {"bracket", "washer"}}};
  const json cam = {{"id", "count"},
                    {"uri", clip_uri()},
                    {"loop", false},
                    {"track", true},
                    {"lines", json::array({gate})}};
  ServerProcess server(json{{"streams", json::array({cam})}});
  ASSERT_TRUE(server.ready()) << server.child().err();
  Http http;
  json s;
  ASSERT_TRUE(eventually(
      [&] {
        s = server.stream(http, "count");
        return !s.is_null() && s["state"] == "ended";
      },
      120))
      << s.dump() << server.child().err();
  const json& g = s["analytics"]["lines"]["gate"];
  EXPECT_EQ(g["forward"], 12) << s["analytics"];
  EXPECT_EQ(g["backward"], 0) << s["analytics"];
  WebDriver wd(http, free_port(), server.dir() + "/chromium-profile");
  ASSERT_TRUE(wd.ok()) << wd.error();
  wd.go(server.url("/"));
  const std::string expected = "gate: " + g["forward"].dump() + " forward, " +
                               g["backward"].dump() + " backward (bracket " +
                               g["by_class"]["bracket"]["forward"].dump() + "/" +
                               g["by_class"]["bracket"]["backward"].dump() + ", washer " +
                               g["by_class"]["washer"]["forward"].dump() + "/" +
                               g["by_class"]["washer"]["backward"].dump() + ")";
  EXPECT_EQ(expected, "gate: 12 forward, 0 backward (bracket 7/0, washer 5/0)");
  const char* kText =
      "return document.querySelector('.stream[data-id=\"count\"] .analytics').innerText;";
  ASSERT_TRUE(eventually([&] { return wd.script(kText) == expected; }, 60))
      << wd.script(kText) << " / " << expected;
}

// A camera losing every frame (50 of 1000 GVSP packets dropped: no 512x512
// frame complete) is not "running" in green: its card says stalled, in
// red, and why first on the camera line.
TEST(Dashboard, AStalledCameraSaysSoOnItsCard) {
  FakeCamera fake("TIDASHLOSS", /*lost_per_thousand=*/50);
  ASSERT_TRUE(fake.listening()) << kNoFakeCamera;
  ServerProcess server(
      json{{"streams", {{{"id", "gige"}, {"uri", fake.uri()}, {"pixel_format", "Mono8"}}}}});
  ASSERT_TRUE(server.ready()) << server.child().err();
  Http http;
  WebDriver wd(http, free_port(), server.dir() + "/chromium-profile");
  ASSERT_TRUE(wd.ok()) << wd.error();
  wd.go(server.url("/"));
  const char* kState =
      "const s = document.querySelector('.stream[data-id=\"gige\"] .state');"
      "return s ? [s.textContent, s.className, getComputedStyle(s).color] : null;";
  ASSERT_TRUE(eventually([&] { return wd.script(kState)[0] == "stalled"; }, 60))
      << wd.script(kState) << server.stream(http, "gige");
  EXPECT_EQ(wd.script(kState)[1], "state stalled");
  EXPECT_EQ(wd.script(kState)[2], "rgb(187, 0, 0)");
  const json line =
      wd.script("return document.querySelector('.stream[data-id=\"gige\"] .camera').innerText;");
  ASSERT_TRUE(line.is_string()) << line;
  EXPECT_EQ(line.get<std::string>().rfind("stalled: no complete frame for ", 0), 0u) << line;
  EXPECT_NE(line.get<std::string>().find(" · camera " + fake.name() + " (Mono8 512x512, free-run)"),
            std::string::npos)
      << line;
}
