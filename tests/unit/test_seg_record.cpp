// A detection's mask in the JSON line (torchmetaconvert): area, grid, runs,
// and area_mm2 only with a calibration.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "export/frame_record.h"

using namespace torchinfer;
using nlohmann::json;

namespace {

FrameRecord with_mask() {
  FrameRecord r;
  r.width = 64;
  r.height = 48;
  DetectionRecord d;
  d.box.label = "scratch";
  d.box.x_min = 3.5;
  d.box.x_max = 6;
  d.box.y_min = 2;
  d.box.y_max = 4;
  Mask m;
  m.x = 3;
  m.y = 2;
  m.width = 3;
  m.height = 2;
  m.runs = {1, 2, 1, 2};
  m.area = 4;
  d.mask = m;
  r.detections.push_back(d);
  r.detections.push_back(DetectionRecord());  // a detection of another decoder
  return r;
}

}  // namespace

TEST(SegRecord, MaskHasAreaGridAndRuns) {
  const json j = json::parse(to_json_line(with_mask(), false, 0));
  const json& m = j["detections"][0]["mask"];
  EXPECT_EQ(m, json::parse(R"({"area": 4, "x": 3, "y": 2, "width": 3, "height": 2,
                               "rle": [1, 2, 1, 2]})"));
  EXPECT_FALSE(j["detections"][1].contains("mask"));
}

TEST(SegRecord, CalibrationAddsAreaInSquareMillimetres) {
  FrameRecord r = with_mask();
  r.mm_per_pixel = 0.5;
  const json j = json::parse(to_json_line(r, false, 0));
  EXPECT_DOUBLE_EQ(j["detections"][0]["mask"]["area_mm2"].get<double>(), 1.0);  // 4 x 0.25
  EXPECT_EQ(j["detections"][0]["mask"].begin().key(), "area");
  EXPECT_FALSE(j["detections"][1].contains("mask"));
}
