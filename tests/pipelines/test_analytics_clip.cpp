// torchanalytics through the plugin on the demo line clip against its truth
// (models/demo/line.truth.json): a vertical gate at x = 320 counts each of
// the 12 parts whose centre crosses it once, all forward, at
// inference-interval 1 and 3; and torchnms suppress-contained leaves one
// box, and so one track, per part (the detector's nested half-part boxes).
#include <glib.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace {

using nlohmann::json;

std::string source_root() {
  const char* r = std::getenv("TORCHINFER_SOURCE_ROOT");
  return r ? r : ".";
}

std::string scratch(const std::string& name) {
  return testing::TempDir() + name;
}

// Runs the detector line on the clip; returns its JSON lines.
// fp32: the exact counts below are the fp32 detector's. precision=auto
// takes bf16 where it wins its timed rounds (AVX512-BF16/AMX CPUs, decided
// once per machine under whatever load there is), and the bf16 detector
// finds one more nested bracket box that suppression misses (8 tracks for
// the clip's 7 brackets, measured on a Xeon with AMX).
std::vector<json> run_line(const std::string& stages) {
  const std::string root = source_root();
  const std::string out = scratch("clip.jsonl");
  const std::string line = "gst-launch-1.0 -q filesrc location=" + root +
                           "/models/demo/line.mkv ! matroskademux ! jpegdec ! videoconvert ! "
                           "video/x-raw,format=YUY2 ! torchinfer model=" +
                           root + "/models/demo/parts_detector.pt precision=fp32 " + stages +
                           " ! torchmetaconvert location=" + out + " ! fakesink";
  gchar** argv = nullptr;
  EXPECT_TRUE(g_shell_parse_argv(line.c_str(), nullptr, &argv, nullptr));
  gint status = -1;
  gchar* err = nullptr;
  GError* error = nullptr;
  const bool ran = g_spawn_sync(nullptr, argv, nullptr, G_SPAWN_SEARCH_PATH, nullptr, nullptr,
                                nullptr, &err, &status, &error);
  g_strfreev(argv);
  EXPECT_TRUE(ran) << (error ? error->message : "");
  if (error) g_error_free(error);
  EXPECT_TRUE(g_spawn_check_wait_status(status, nullptr)) << line << "\n" << (err ? err : "");
  g_free(err);
  std::vector<json> lines;
  std::ifstream in(out);
  for (std::string l; std::getline(in, l);) lines.push_back(json::parse(l));
  return lines;
}

std::string gate_config() {
  const std::string path = scratch("gate.json");
  std::ofstream(path) << R"({"lines": [{"name": "gate", "points": [[320, 480], [320, 0]],
                                         "classes": ["bracket", "washer"]}]})";
  return path;
}

class GateOnTheClip : public testing::TestWithParam<int> {};

}  // namespace

TEST_P(GateOnTheClip, CountsTwelvePartsOnceEachForward) {
  const auto lines = run_line(
      "inference-interval=" + std::to_string(GetParam()) +
      " ! torchnms ! torchtrack ! torchanalytics reference-point=center config=" + gate_config());
  ASSERT_EQ(lines.size(), 300u);
  const json& gate = lines.back()["analytics"]["lines"]["gate"];
  EXPECT_EQ(gate["forward"], 12);
  EXPECT_EQ(gate["backward"], 0);
  EXPECT_EQ(gate["by_class"]["bracket"]["forward"], 7);  // truth: parts 0 2 4 6 7 9 11
  EXPECT_EQ(gate["by_class"]["washer"]["forward"], 5);   // truth: parts 1 3 5 8 10
  // Each crossing is a different track: no part counted twice.
  std::multiset<int> ids;
  for (const json& l : lines)
    if (l["analytics"].contains("events"))
      for (const json& e : l["analytics"]["events"]) ids.insert(e["id"].get<int>());
  EXPECT_EQ(ids.size(), 12u);
  EXPECT_EQ(std::set<int>(ids.begin(), ids.end()).size(), 12u);
}

INSTANTIATE_TEST_SUITE_P(Interval, GateOnTheClip, testing::Values(1, 3));

// The detector finds some brackets twice, a half-part box inside the whole;
// without suppression they become extra tracks (10 bracket tracks for the
// clip's 7 brackets), with the default suppress-contained none are left.
TEST(NestedBoxesOnTheClip, SuppressContainedLeavesOneTrackPerPart) {
  std::map<std::string, std::map<std::string, std::set<int>>> tracks;  // setting -> label -> ids
  std::map<std::string, int> nested;
  for (const std::string setting : {"suppress-contained=0", ""}) {
    for (const json& l : run_line("! torchnms " + setting + " ! torchtrack")) {
      const json& d = l["detections"];
      for (const json& x : d)
        if (x.contains("object_id")) tracks[setting][x["label"]].insert(x["object_id"].get<int>());
      for (std::size_t i = 0; i < d.size(); ++i)
        for (std::size_t k = 0; k < d.size(); ++k) {
          const json &s = d[i]["box"], &b = d[k]["box"];
          if (i == k || d[i]["label"] != d[k]["label"]) continue;
          const double sa = (s["x_max"].get<double>() - s["x_min"].get<double>()) *
                            (s["y_max"].get<double>() - s["y_min"].get<double>());
          const double w = std::min(s["x_max"].get<double>(), b["x_max"].get<double>()) -
                           std::max(s["x_min"].get<double>(), b["x_min"].get<double>());
          const double h = std::min(s["y_max"].get<double>(), b["y_max"].get<double>()) -
                           std::max(s["y_min"].get<double>(), b["y_min"].get<double>());
          const double ba = (b["x_max"].get<double>() - b["x_min"].get<double>()) *
                            (b["y_max"].get<double>() - b["y_min"].get<double>());
          if (sa < ba && w > 0 && h > 0 && w * h >= 0.9 * sa) nested[setting]++;
        }
    }
  }
  EXPECT_GT(nested["suppress-contained=0"], 0);
  EXPECT_EQ(nested[""], 0);
  EXPECT_EQ(tracks["suppress-contained=0"]["bracket"].size(), 10u);
  EXPECT_EQ(tracks[""]["bracket"].size(), 7u);  // truth: 7 brackets in view
  EXPECT_EQ(tracks[""]["washer"].size(), 6u);   // truth: 6 washers in view
}
