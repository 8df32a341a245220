// torchinfer-server as one of many (docs/deployment.md "Many boxes"): two
// shards of one 8-camera config split it without overlap or gap, refuse
// each other's cameras (421) unless pinned, label their metrics, and answer
// the probes; the metric names the alert rules and the Grafana dashboard
// use are all in a real scrape; a camera's MQTT results keep their topic on
// its shard and are counted. Bad shard settings stop the server at start.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "raw_http.h"
#include "server/core/shard.h"
#include "server/core/shard_plan.h"
#include "server_process.h"

using nlohmann::json;
using namespace torchinfer::test;

namespace {

// Light cameras: every fifth frame inferred, no JSON files.
json eight_cameras() {
  json streams = json::array();
  for (int i = 0; i < 8; ++i)
    streams.push_back({{"id", "cam" + std::to_string(i)},
                       {"uri", clip_uri()},
                       {"inference_interval", 5},
                       {"json", false}});
  return {{"shards", 2}, {"ready_grace_s", 60}, {"streams", streams}};
}

std::set<std::string> as_set(const json& list) {
  std::set<std::string> out;
  for (const auto& v : list) out.insert(v.get<std::string>());
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class TwoShards : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    shard_[0] = new ServerProcess(eight_cameras(), "", {"--shard", "0/2"});
    // The pod's name, as Kubernetes gives it to a StatefulSet's second pod.
    shard_[1] = new ServerProcess(eight_cameras(), "", {"--shard-from-hostname"},
                                  {"env", "HOSTNAME=torchinfer-1"});
  }
  static void TearDownTestSuite() {
    for (auto*& s : shard_) {
      delete s;
      s = nullptr;
    }
  }
  void SetUp() override {
    for (auto* s : shard_) ASSERT_TRUE(s->ready()) << s->child().err();
  }
  json get(int k, const std::string& path) { return http_.get(shard_[k]->url(path)).json(); }
  HttpReply post(int k, const json& body) {
    return http_.request("POST", shard_[k]->url("/streams"), body.dump());
  }
  // libsoup's client sends a request again, on a new connection and
  // without its body, when answered 421: the refusal is read off the wire.
  static HttpReply raw_post(int k, const json& body) {
    const std::string text = body.dump();
    const std::string got =
        raw_exchange(shard_[k]->port(),
                     "POST /streams HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                     "application/json\r\nContent-Length: " +
                         std::to_string(text.size()) + "\r\nConnection: close\r\n\r\n" + text);
    HttpReply r;
    if (got.rfind("HTTP/1.1 ", 0) == 0) r.status = std::stoi(got.substr(9, 3));
    const std::size_t start = got.find("\r\n\r\n");
    if (start != std::string::npos) r.body = got.substr(start + 4);
    return r;
  }
  bool ready(int k) { return http_.get(shard_[k]->url("/readyz")).status == 200; }

  static ServerProcess* shard_[2];
  Http http_;
};
ServerProcess* TwoShards::shard_[2] = {nullptr, nullptr};

TEST_F(TwoShards, SplitTheCamerasWithoutOverlapOrGap) {
  const json a = get(0, "/shard"), b = get(1, "/shard");
  EXPECT_EQ(a["index"], 0);
  EXPECT_EQ(b["index"], 1);
  EXPECT_EQ(a["count"], 2);
  EXPECT_EQ(b["count"], 2);
  // The split test_shard_plan.cpp pins: 4 and 4 (plain rendezvous gave 3 | 5).
  EXPECT_EQ(as_set(a["owned"]), (std::set<std::string>{"cam1", "cam2", "cam3", "cam5"}));
  EXPECT_EQ(as_set(b["owned"]), (std::set<std::string>{"cam0", "cam4", "cam6", "cam7"}));
  // Both split the same list, and say so.
  EXPECT_EQ(a["camera_list"], "87203b1b0f9fd357");
  EXPECT_EQ(b["camera_list"], "87203b1b0f9fd357");
  // GET /streams shows a shard's own cameras only.
  for (int k : {0, 1}) {
    std::set<std::string> listed;
    const json streams = get(k, "/streams");
    for (const auto& s : streams["streams"]) listed.insert(s["id"].get<std::string>());
    EXPECT_EQ(listed, as_set(get(k, "/shard")["owned"])) << "shard " << k;
  }
}

TEST_F(TwoShards, ProbesAnswerAndBothBecomeReady) {
  for (int k : {0, 1}) {
    EXPECT_EQ(http_.get(shard_[k]->url("/livez")).status, 200);
    const HttpReply s = http_.get(shard_[k]->url("/startupz"));
    EXPECT_EQ(s.status, 200);
    ASSERT_EQ(s.json()["models"].size(), 1u) << s.body;
    EXPECT_EQ(s.json()["models"][0]["id"], "parts");
    EXPECT_TRUE(eventually([&] { return ready(k); }, 120))
        << http_.get(shard_[k]->url("/readyz")).body;
    EXPECT_EQ(http_.request("POST", shard_[k]->url("/readyz")).status, 405);
  }
}

TEST_F(TwoShards, AnotherShardsCameraIsRefusedWithItsOwnerUnlessPinned) {
  const json cam = {{"id", "cam0"}, {"uri", clip_uri()}, {"json", false}};
  HttpReply r = raw_post(0, cam);
  ASSERT_EQ(r.status, 421) << r.body;
  EXPECT_EQ(r.json()["owner"], 1);
  EXPECT_EQ(r.json()["field"], "id");
  EXPECT_NE(r.json()["error"].get<std::string>().find("belongs to shard 1 of 2"),
            std::string::npos);
  json bad_pin = cam;
  bad_pin["pin"] = "yes";
  r = post(0, bad_pin);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json()["field"], "pin");
  json pinned = cam;
  pinned["id"] = "cam9";  // shard 1's too; cam0 runs there already
  ASSERT_NE(torchinfer::server::owner_shard("cam9", 2), 0);
  EXPECT_EQ(raw_post(0, {{"id", "cam9"}, {"uri", clip_uri()}}).status, 421);
  pinned["pin"] = true;
  r = post(0, pinned);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_FALSE(r.json()["config"].contains("pin"));
  const json s = get(0, "/shard");
  EXPECT_EQ(as_set(s["pinned"]), std::set<std::string>{"cam9"});
  EXPECT_EQ(as_set(s["owned"]), (std::set<std::string>{"cam1", "cam2", "cam3", "cam5"}));
  EXPECT_EQ(http_.request("DELETE", shard_[0]->url("/streams/cam9")).status, 200);
  // An id this shard owns needs no pin.
  r = post(1, {{"id", "cam8"}, {"uri", clip_uri()}, {"json", false}});
  ASSERT_EQ(torchinfer::server::owner_shard("cam8", 2), 1);
  EXPECT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(http_.request("DELETE", shard_[1]->url("/streams/cam8")).status, 200);
}

TEST_F(TwoShards, AFailedCameraMakesItsShardUnreadyWithTheReason) {
  ASSERT_TRUE(eventually([&] { return ready(0); }, 120));
  const json broken = {{"id", "broken"}, {"uri", "file:///nonexistent/clip.mkv"}, {"pin", true}};
  ASSERT_EQ(post(0, broken).status, 201);
  HttpReply r;
  ASSERT_TRUE(eventually(
      [&] {
        r = http_.get(shard_[0]->url("/readyz"));
        return r.status == 503;
      },
      30));
  ASSERT_EQ(r.json()["reasons"].size(), 1u) << r.body;
  EXPECT_EQ(r.json()["reasons"][0]["stream"], "broken");
  EXPECT_EQ(r.json()["reasons"][0]["state"], "failed");
  EXPECT_EQ(http_.request("DELETE", shard_[0]->url("/streams/broken")).status, 200);
  EXPECT_TRUE(eventually([&] { return ready(0); }, 30));
  EXPECT_TRUE(ready(1));  // the other shard never noticed
}

TEST_F(TwoShards, EverySampleCarriesTheShardLabelAndPassesPromtool) {
  for (int k : {0, 1}) {
    const HttpReply r = http_.get(shard_[k]->url("/metrics"));
    ASSERT_EQ(r.status, 200);
    std::istringstream lines(r.body);
    int samples = 0;
    const std::string label = "{shard=\"" + std::to_string(k) + "\"";
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line[0] == '#') continue;
      samples++;
      EXPECT_NE(line.find(label), std::string::npos) << line;
    }
    EXPECT_GT(samples, 50);
    EXPECT_NE(r.body.find("\ntorchinfer_shards{shard=\"" + std::to_string(k) + "\"} 2\n"),
              std::string::npos);
    EXPECT_NE(r.body.find("\ntorchinfer_shard_camera_list{shard=\"" + std::to_string(k) +
                          "\",camera_list=\"87203b1b0f9fd357\"} 1\n"),
              std::string::npos)
        << r.body;
    const std::string path = shard_[k]->dir() + "/metrics.txt";
    std::ofstream(path) << r.body;
    const Result check = run({"sh", "-c", "promtool check metrics < '" + path + "'"});
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
    EXPECT_EQ(check.out + check.err, "");
  }
}

// A shard given another camera list (cam4-11 where shard 0 has cam0-7)
// shows another hash: TorchinferShardsDisagree (rules_test.yml) fires on it.
TEST_F(TwoShards, AShardGivenAnotherCameraListShowsAnotherHash) {
  json other = eight_cameras();
  for (int i = 0; i < 8; ++i) other["streams"][i]["id"] = "cam" + std::to_string(i + 4);
  ServerProcess shifted(other, "", {"--shard", "1/2"});
  ASSERT_TRUE(shifted.ready()) << shifted.child().err();
  const json s = http_.get(shifted.url("/shard")).json();
  EXPECT_EQ(s["camera_list"], "0e7eb284c242e39d");
  EXPECT_NE(s["camera_list"], get(0, "/shard")["camera_list"]);
  EXPECT_NE(
      http_.get(shifted.url("/metrics"))
          .body.find(
              "\ntorchinfer_shard_camera_list{shard=\"1\",camera_list=\"0e7eb284c242e39d\"} 1\n"),
      std::string::npos);
}

// The alert rules and the dashboard use only series the server exports:
// every torchinfer_* / process_* name in them is a family in a real
// scrape (a summary's _sum and _count belong to it).
TEST_F(TwoShards, RulesAndDashboardUseOnlyExportedMetricNames) {
  const std::string scrape = http_.get(shard_[0]->url("/metrics")).body;
  std::set<std::string> families;
  const std::regex type_line("# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) ");
  for (std::sregex_iterator it(scrape.begin(), scrape.end(), type_line), end; it != end; ++it)
    families.insert((*it)[1]);
  ASSERT_GT(families.size(), 30u);
  const std::regex name("\\b((?:torchinfer|process)_[a-z0-9_]+)");
  for (const char* file : {"/deploy/prometheus/rules.yml", "/deploy/grafana/fleet.json"}) {
    const std::string text = read_text(source_root() + file);
    ASSERT_FALSE(text.empty()) << file;
    int used = 0;
    for (std::sregex_iterator it(text.begin(), text.end(), name), end; it != end; ++it) {
      std::string n = (*it)[1];
      used++;
      if (!families.count(n))
        for (const char* suffix : {"_sum", "_count"})
          if (n.size() > std::strlen(suffix) &&
              n.compare(n.size() - std::strlen(suffix), std::string::npos, suffix) == 0 &&
              families.count(n.substr(0, n.size() - std::strlen(suffix))))
            n = n.substr(0, n.size() - std::strlen(suffix));
      EXPECT_TRUE(families.count(n)) << file << " uses " << (*it)[1] << ", not exported";
    }
    EXPECT_GT(used, 5) << file;
  }
}

// MQTT results go to each camera's own topic from the shared config,
// whichever shard runs it, and the shard counts them for the publish-loss
// alert. A real mosquitto on a free port; mosquitto_sub reads the topic.
TEST(ShardMqtt, ACameraPublishesToItsConfiguredTopicFromItsShard) {
  const int broker_port = free_port();
  Child broker({"/usr/sbin/mosquitto", "-p", std::to_string(broker_port)});
  json config = eight_cameras();
  config["mqtt"] = {{"host", "127.0.0.1"}, {"port", broker_port}};
  config["streams"][0]["mqtt_topic"] = "plant/line1/cam0";  // cam0: shard 1's
  std::vector<std::string> ids;
  for (const auto& c : config["streams"]) ids.push_back(c["id"].get<std::string>());
  ASSERT_EQ(torchinfer::server::ShardPlan(ids, 2).owner("cam0"), 1);
  ServerProcess shard1(config, "", {"--shard", "1/2"});
  ASSERT_TRUE(shard1.ready()) << shard1.child().err();
  const Result sub = run({"mosquitto_sub", "-p", std::to_string(broker_port), "-t", "plant/#", "-v",
                          "-C", "3", "-W", "60"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  std::istringstream lines(sub.out);
  int n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    ASSERT_EQ(line.rfind("plant/line1/cam0 {", 0), 0u) << line;
    const json frame = json::parse(line.substr(line.find('{')));
    EXPECT_TRUE(frame.contains("frame")) << line;
  }
  EXPECT_EQ(n, 3);
  Http http;
  const std::string series =
      "torchinfer_stream_mqtt_messages_total{shard=\"1\",stream=\"cam0\",model=\"parts\","
      "result=\"";
  std::string metrics;
  EXPECT_TRUE(eventually(
      [&] {
        metrics = http.get(shard1.url("/metrics")).body;
        const std::size_t at = metrics.find(series + "published\"} ");
        return at != std::string::npos && std::stoull(metrics.substr(at + series.size() + 12)) >= 3;
      },
      30))
      << metrics;
  EXPECT_NE(metrics.find(series + "dropped\"} 0\n"), std::string::npos);
  EXPECT_NE(metrics.find(series + "failed\"} 0\n"), std::string::npos);
  // Cameras without a topic have no MQTT series.
  EXPECT_EQ(metrics.find("torchinfer_stream_mqtt_messages_total{shard=\"1\",stream=\"cam4\""),
            std::string::npos);
}

// Bad shard settings: exit 2 before any model loads, naming the setting.
void expect_refused_at_start(const json& config, const std::vector<std::string>& extra,
                             const std::map<std::string, std::string>& env,
                             const std::string& says) {
  char tmpl[] = "/tmp/torchinfer-fleet-test-XXXXXX";
  const std::string dir = g_mkdtemp(tmpl);
  json c = config;
  c["models"] = {{{"id", "parts"}, {"path", detector()}}};
  c["output_dir"] = dir + "/out";
  std::ofstream(dir + "/server.json") << c.dump();
  std::vector<std::string> argv{env_or("TORCHINFER_SERVER", "torchinfer-server"),
                                "--config",
                                dir + "/server.json",
                                "--listen",
                                "127.0.0.1:0",
                                "--rtsp-port",
                                "0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  const Result r = run(argv, env);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("loaded"), std::string::npos) << r.err;
  (void)std::system(("rm -rf '" + dir + "'").c_str());
}

TEST(ShardStart, BadShardSettingsStopTheServerNamingThem) {
  const json cams = eight_cameras();
  expect_refused_at_start(cams, {"--shard", "2/2"}, {}, "--shard: shard 2 of 2 does not exist");
  expect_refused_at_start(cams, {"--shard", "x"}, {}, "--shard: 'x' is not K/N");
  expect_refused_at_start(cams, {"--shard-from-hostname", "--shards", "0"},
                          {{"HOSTNAME", "torchinfer-0"}},
                          "--shards 0: give the count of shards, 1 to 1024");
  expect_refused_at_start(cams, {"--shard-from-hostname", "--shards", "-2"},
                          {{"HOSTNAME", "torchinfer-0"}},
                          "--shards -2: give the count of shards, 1 to 1024");
  expect_refused_at_start(cams, {}, {}, "shards (config): the config is split over 2 shards");
  expect_refused_at_start(cams, {"--shard-from-hostname"}, {{"HOSTNAME", "linebox"}},
                          "host name 'linebox' does not end in -N");
  expect_refused_at_start(cams, {"--shard-from-hostname"}, {{"HOSTNAME", "torchinfer-2"}},
                          "shard 2 of 2 does not exist");
  json one = cams;
  one.erase("shards");
  expect_refused_at_start(one, {"--shard-from-hostname"}, {{"HOSTNAME", "torchinfer-0"}},
                          "the shard count is not given");
  // A template's unset variable: it ran every camera on every box.
  expect_refused_at_start(one, {"--shard", ""}, {}, "--shard: empty: give K/N");
  expect_refused_at_start(cams, {"--shards", "3"}, {}, "--shards N (1 to 1024) goes with");
  one["shard"] = "0/3";
  one["shards"] = 2;
  expect_refused_at_start(one, {}, {}, "says 2 shards but \"shard\" says 3");
}

}  // namespace
