// attach_region_results called directly: each region's result goes to the ROI
// meta whose id the region carries (RegionOfInterest::roi_id), wherever that
// meta sits on the buffer; regions sharing an id keep the buffer's order.
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/model_config.h"
#include "element_helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "model/model_loader.h"
#include "torchinfer-results.h"

using namespace torchinfer;

namespace {

// channel_classifier.pt run on two 8x8 frames, red then blue: one batch
// output whose frame 0 is "red" and frame 1 "blue".
FrameInference red_then_blue(const std::vector<int>& roi_ids) {
  const std::string file = test::model("channel_classifier.pt");
  EngineOptions o;
  o.model_path = file;
  o.input_width = 8;
  o.input_height = 8;
  o.warmup_runs = 1;
  o.threads = 1;
  o.precision = Precision::kFp32;
  const auto model = load_model(o, resolve_model_config(file, "", {}), 2);
  std::vector<float> input(2 * 3 * 8 * 8, 0.f);
  std::fill(input.begin(), input.begin() + 64, 1.f);                     // frame 0, channel 0
  std::fill(input.begin() + 192 + 128, input.begin() + 192 + 192, 1.f);  // frame 1, channel 2
  const std::shared_ptr<const BatchOutput> out = model->run(input.data(), 2);
  FrameInference rec;
  rec.frame_width = rec.frame_height = 8;
  rec.region_mode = true;
  for (int i = 0; i < 2; ++i) {
    SlotResult s;
    s.result.output = out;
    s.result.model = model;
    s.result.index = i;
    s.delivered = true;
    rec.slots.push_back(s);
    RegionResult r;
    r.fate = RegionFate::kInferred;
    r.slot = i;
    r.roi_id = roi_ids[static_cast<std::size_t>(i)];
    rec.regions.push_back(r);
  }
  return rec;
}

GstBuffer* frame_with_rois(const std::vector<int>& ids) {
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, 8 * 8 * 3, nullptr);
  for (int id : ids) gst_buffer_add_video_region_of_interest_meta(buf, "part", 0, 0, 8, 8)->id = id;
  return buf;
}

// (id, label) of the buffer's ROI metas, in the buffer's order.
std::vector<std::pair<int, std::string>> labels_of(GstBuffer* buf) {
  std::vector<std::pair<int, std::string>> out;
  gpointer iter = nullptr;
  while (GstMeta* m = gst_buffer_iterate_meta_filtered(
             buf, &iter, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)) {
    auto* roi = reinterpret_cast<GstVideoRegionOfInterestMeta*>(m);
    const GstStructure* s = gst_torch_roi_get_classification(roi, nullptr);
    const gchar* label = s ? gst_structure_get_string(s, "label") : nullptr;
    out.emplace_back(roi->id, label ? label : "(none)");
  }
  return out;
}

}  // namespace

TEST(RoiAttach, EachRegionFindsItsMetaByIdNotByPlace) {
  // Regions read as ids 7 then 3; the buffer holds 3 first.
  const FrameInference rec = red_then_blue({7, 3});
  GstBuffer* buf = frame_with_rois({3, 7});
  EXPECT_TRUE(gst::attach_region_results(buf, rec, {"", "torchinfer0"}));
  EXPECT_EQ(labels_of(buf), (std::vector<std::pair<int, std::string>>{{3, "blue"}, {7, "red"}}));
  const std::string file = test::model("channel_classifier.pt");
  GstTorchTensorMeta* t = gst_buffer_get_torch_tensor_meta_for_roi(buf, 7, file.c_str());
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->batch_index, 0u);  // red's slot
  gst_buffer_unref(buf);
}

TEST(RoiAttach, RegionsSharingAnIdKeepTheBuffersOrder) {
  // GStreamer's own default id is 0 for every ROI.
  const FrameInference rec = red_then_blue({0, 0});
  GstBuffer* buf = frame_with_rois({0, 0});
  EXPECT_TRUE(gst::attach_region_results(buf, rec, {"", "torchinfer0"}));
  EXPECT_EQ(labels_of(buf), (std::vector<std::pair<int, std::string>>{{0, "red"}, {0, "blue"}}));
  gst_buffer_unref(buf);
}

TEST(RoiAttach, ARegionWhoseMetaIsGoneGetsNothing) {
  const FrameInference rec = red_then_blue({4, 9});
  GstBuffer* buf = frame_with_rois({9});
  EXPECT_TRUE(gst::attach_region_results(buf, rec, {"", "torchinfer0"}));
  EXPECT_EQ(labels_of(buf), (std::vector<std::pair<int, std::string>>{{9, "blue"}}));
  gst_buffer_unref(buf);
}
