// torchcodes as a user runs it: gst-launch-1.0 on a raw YUY2 file of two
// rendered symbols, ! torchcodes ! torchmetaconvert, and the exact JSON.
#include <glib.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "code_symbols.h"

using namespace torchinfer::test;
using nlohmann::json;

namespace {

std::string temp_path(const std::string& name) {
  return testing::TempDir() + "torchcodes-" + std::to_string(getpid()) + "-" + name;
}

// Exit code of the command line (split on spaces), -1 if it did not exit.
int launch(const std::string& line, std::string* err) {
  gchar** argv = g_strsplit(line.c_str(), " ", -1);
  gchar* e = nullptr;
  gint status = 0;
  const gboolean ok = g_spawn_sync(nullptr, argv, nullptr, G_SPAWN_SEARCH_PATH, nullptr, nullptr,
                                   nullptr, &e, &status, nullptr);
  g_strfreev(argv);
  *err = e ? e : "";
  g_free(e);
  return ok && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace

TEST(TorchCodesLaunch, FullFrameCodesReachTorchmetaconvertsJson) {
  GreyCanvas c(640, 200);
  const GreyCanvas dm = render_symbol("DataMatrix", "SN-0001", 4);
  const GreyCanvas code128 = render_symbol("Code128", "LOT-42", 2);
  paste(c, dm, 40, 100 - dm.height / 2);
  paste(c, code128, 200, 100 - code128.height / 2);
  const std::vector<std::uint8_t> frame = to_yuy2(c);
  const std::string raw = temp_path("frame.yuy2"), out = temp_path("codes.jsonl");
  std::ofstream(raw, std::ios::binary)
      .write(reinterpret_cast<const char*>(frame.data()), std::streamsize(frame.size()));
  std::string err;
  ASSERT_EQ(launch("gst-launch-1.0 -q filesrc location=" + raw +
                       " blocksize=" + std::to_string(frame.size()) +
                       " ! rawvideoparse format=yuy2 width=640 height=200 framerate=30/1"
                       " ! torchcodes formats=DataMatrix,Code128"
                       " ! torchmetaconvert location=" +
                       out + " ! fakesink",
                   &err),
            0)
      << err;
  const std::vector<std::string> lines = lines_of(out);
  ASSERT_EQ(lines.size(), 1u);
  const json j = json::parse(lines[0]);
  EXPECT_EQ(j["frame"], 0);
  EXPECT_EQ(j["pts"], 0);
  EXPECT_EQ(j["width"], 640);
  EXPECT_FALSE(j.contains("detections"));
  const json& codes = j["codes"];
  ASSERT_EQ(codes.size(), 2u) << lines[0];
  // zxing-cpp's order: the 1D symbol first. The DataMatrix's box: the
  // symbol inside its 2-module quiet zone.
  const int dm_y = 100 - dm.height / 2;
  EXPECT_EQ(codes[1], json::parse(R"({"format": "DataMatrix", "text": "SN-0001", "box": {)"
                                  R"("x_min": 48.0, "x_max": )" +
                                  std::to_string(40 + dm.width - 8) +
                                  ", \"y_min\": " + std::to_string(dm_y + 8) +
                                  ", \"y_max\": " + std::to_string(dm_y + dm.height - 8) + "}}"));
  EXPECT_EQ(codes[0]["format"], "Code128");
  EXPECT_EQ(codes[0]["text"], "LOT-42");
  // A 1D symbol's box spans the rows it was read on (all of them here) and
  // its bars, which lie inside the 10-module quiet zones.
  const int c_y = 100 - code128.height / 2;
  const json& box = codes[0]["box"];
  EXPECT_EQ(box["y_min"], c_y);
  EXPECT_EQ(box["y_max"], c_y + code128.height - 1);
  EXPECT_GE(box["x_min"].get<double>(), 200);
  EXPECT_LE(box["x_min"].get<double>(), 220);
  EXPECT_GE(box["x_max"].get<double>(), 200 + code128.width - 20 - 1);
  EXPECT_LE(box["x_max"].get<double>(), 200 + code128.width);
  std::remove(raw.c_str());
  std::remove(out.c_str());
}

// The house rule for a refused value (plugin/property-table.h): a warning
// naming it, and the previous value (here: every format) stays.
TEST(TorchCodesLaunch, AnUnknownFormatOnTheCommandLineIsRefusedWithAWarning) {
  std::string err;
  EXPECT_EQ(launch("gst-launch-1.0 -q videotestsrc num-buffers=1 ! video/x-raw,format=GRAY8"
                   " ! torchcodes formats=DataMatrix,NoSuch ! fakesink",
                   &err),
            0);
  EXPECT_NE(err.find("property 'formats' refused 'DataMatrix,NoSuch'"), std::string::npos) << err;
  EXPECT_NE(err.find("nosuch"), std::string::npos) << err;
}
