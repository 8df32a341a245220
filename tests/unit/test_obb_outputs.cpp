// Rotated boxes on the way out: the JSON "rotated_box" (degrees, clockwise
// in image coordinates, beside the axis-aligned "box") and torchoverlay's
// rotated outline.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "export/frame_record.h"
#include "overlay/draw.h"

using namespace torchinfer;
using json = nlohmann::json;

TEST(ObbJson, RotatedBoxBesideTheBox) {
  FrameRecord r;
  r.width = 640, r.height = 480;
  r.has_inference = true;
  DetectionRecord d;
  d.box.label = "bracket";
  d.box.x_min = 10, d.box.y_min = 20, d.box.x_max = 30, d.box.y_max = 40;
  d.box.rotated = RotatedBox{20, 30, 25, 5, -30.5};
  r.detections.push_back(d);
  d.box.rotated.reset();
  r.detections.push_back(d);
  const json j = json::parse(to_json_line(r, false, 0));
  const json& rb = j.at("detections").at(0).at("rotated_box");
  EXPECT_EQ(rb,
            json({{"cx", 20.0}, {"cy", 30.0}, {"width", 25.0}, {"height", 5.0}, {"angle", -30.5}}));
  EXPECT_EQ(j.at("detections").at(0).at("box").at("x_min"), 10.0);
  EXPECT_FALSE(j.at("detections").at(1).contains("rotated_box"));
}

TEST(ObbOverlay, DrawsTheRotatedOutlineNotItsBounds) {
  const int W = 120, H = 120;
  std::vector<std::uint8_t> px(W * H * 3, 0);
  OverlayImage img;
  img.format = PixelFormat::kRGB;
  img.width = W, img.height = H;
  img.planes[0] = px.data();
  img.strides[0] = W * 3;
  const RotatedBox rb{60, 60, 80, 20, 45};
  const Box b = rb.bounds();
  OverlayScene scene;
  OverlayBox ob;
  ob.x_min = b.x_min, ob.y_min = b.y_min, ob.x_max = b.x_max, ob.y_max = b.y_max;
  for (const auto& [x, y] : rb.corners()) ob.outline.emplace_back(x, y);
  scene.boxes.push_back(ob);
  Overlay().draw(scene, img);
  auto lit = [&](int x, int y) {
    const std::uint8_t* p = &px[(y * W + x) * 3];
    return p[0] || p[1] || p[2];
  };
  // Each corner of the rotated box is drawn; the bounds' far corner is not.
  for (const auto& [x, y] : rb.corners())
    EXPECT_TRUE(lit(static_cast<int>(std::lround(x)), static_cast<int>(std::lround(y))))
        << x << "," << y;
  EXPECT_FALSE(
      lit(static_cast<int>(std::ceil(b.x_max)) - 1, static_cast<int>(std::ceil(b.y_max)) - 1));
  EXPECT_FALSE(lit(60, 60));  // inside: an outline, not a fill
}
