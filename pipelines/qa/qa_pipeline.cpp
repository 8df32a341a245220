#include "qa/qa_pipeline.h"

#include <algorithm>
#include <string>
#include <vector>

#include "app/builder.h"
#include "parts/qa_frames.h"
#include "qa/qa_anomaly.h"

namespace torchinfer::qa {

namespace {

using app::Builder;
using app::set_arg;

GstElement* device_source(Builder& b, const std::string& device) {
  GstElement* src = b.add("v4l2src");
  GstElement* caps = b.caps("video/x-raw,format=YUY2");
  if (b.failed()) return nullptr;
  g_object_set(src, "device", device.c_str(), nullptr);
  return b.link({src, caps}) ? caps : nullptr;
}

// --source: the user's launch fragment, as one bin whose src pad is the
// fragment's last unlinked one. Only that pad is ghosted: a sink pad still
// waiting for a demuxer's (delayed link) must stay free.
GstElement* fragment_source(Builder& b, const std::string& fragment) {
  GError* err = nullptr;
  // Launch syntax takes caps only between two elements, and a fragment
  // usually ends in caps: an identity closes it.
  const std::string closed = fragment + " ! identity";
  GstElement* bin = gst_parse_bin_from_description(closed.c_str(), FALSE, &err);
  if (!bin || err) {
    b.fail(err ? err->message : "unknown");
    if (err) g_error_free(err);
    if (bin) gst_object_unref(bin);
    return nullptr;
  }
  GstPad* out = gst_bin_find_unlinked_pad(GST_BIN(bin), GST_PAD_SRC);
  if (!out) {
    gst_object_unref(bin);
    b.fail("--source '" + fragment + "' has no free src pad: end it in raw video");
    return nullptr;
  }
  gst_element_add_pad(bin, gst_ghost_pad_new("src", out));
  gst_object_unref(out);
  gst_bin_add(GST_BIN(b.pipeline()), bin);
  return bin;
}

GstElement* source(Builder& b, const Options& o) {
  if (!o.clip.empty()) return app::mjpeg_clip_as_yuy2(b, o.clip);
  if (!o.device.empty()) return device_source(b, o.device);
  return fragment_source(b, o.source);
}

// --codes: each part's code, read once per track inside the part boxes at
// the camera's resolution, on the streaming thread (every view's read is
// in its frame: the first successful one names the part).
GstElement* code_reader(Builder& b, const QaRules& rules) {
  GstElement* codes = b.add("torchcodes", kCodesElement);
  if (!codes) return nullptr;
  std::string parts;
  for (const auto& c : rules.part_classes) parts += (parts.empty() ? "" : ",") + c;
  g_object_set(codes, "object-class", parts.c_str(), nullptr);
  set_arg(codes, "full-frame", "never");
  return codes;
}

// A second-stage torchinfer on the part boxes, as often as --reclassify-interval.
void on_parts(GstElement* e, const Options& o, const QaRules& rules, const std::string& model,
              const char* instance) {
  std::string parts;
  for (const auto& c : rules.part_classes) parts += (parts.empty() ? "" : ",") + c;
  g_object_set(e, "model", model.c_str(), "model-instance-id", instance, "object-class",
               parts.c_str(), "object-padding", 0.1, nullptr);
  set_arg(e, "inference-region", "roi-list");
  set_arg(e, "reclassify-interval", std::to_string(o.reclassify_interval));
}

// --segmenter: a second full-frame model and its torchnms after the tracker
// (the defect boxes are not tracked), each torchnms decoding only its own
// model's result (model-instance-id). suppress-contained off: every defect
// mask counts, as in models/demo/eval_defect_seg.py.
bool add_segmenter(Builder& b, const Options& o, std::vector<GstElement*>& chain) {
  GstElement* infer = b.add("torchinfer", "segment");
  GstElement* nms = b.add("torchnms", "segment-nms");
  if (b.failed()) return false;
  g_object_set(infer, "model", o.segmenter.c_str(), "model-instance-id", kSegmenterId, nullptr);
  g_object_set(nms, "model-instance-id", kSegmenterId, "suppress-contained", 0.0, nullptr);
  chain.push_back(infer);
  chain.push_back(nms);
  return true;
}

// detector ! torchnms ! torchtrack [! segmenter ! torchnms] [! classifier
// on the part ROIs (by default each part classified as often as the
// detector runs)] [! anomaly model on the same ROIs].
std::vector<GstElement*> analysis(Builder& b, const Options& o, const QaRules& rules) {
  GstElement* infer = b.add("torchinfer", "infer");
  GstElement* nms = b.add("torchnms", "nms");
  GstElement* track = b.add("torchtrack", "track");
  GstElement* classify = o.has_classifier() ? b.add("torchinfer", kClassifierElement) : nullptr;
  GstElement* anomaly = o.has_anomaly() ? b.add("torchinfer", kAnomalyElement) : nullptr;
  if (b.failed()) return {};
  g_object_set(infer, "model", o.model.c_str(), "model-instance-id", kDetectorId, nullptr);
  set_arg(infer, "inference-interval", std::to_string(o.inference_interval));
  // torchnms keeps the weaker of the two thresholds; part boxes below
  // --part-threshold are then tracked but not judged. With --segmenter the
  // detector's defect boxes judge nothing: the parts' threshold alone.
  const double keep =
      o.has_segmenter() ? o.part_threshold : std::min(rules.defect_threshold, o.part_threshold);
  g_object_set(nms, "confidence-threshold", keep, "model-instance-id", kDetectorId, nullptr);
  set_arg(track, "tracking-type", o.tracking_type);
  set_arg(track, "min-hits", std::to_string(min_hits(o.inference_interval)));
  std::vector<GstElement*> chain = {infer, nms, track};
  if (o.has_segmenter() && !add_segmenter(b, o, chain)) return {};
  if (o.codes) {
    GstElement* codes = code_reader(b, rules);
    if (!codes) return {};
    chain.push_back(codes);
  }
  if (classify) {
    on_parts(classify, o, rules, o.classifier, "qa-classifier");
    chain.push_back(classify);
  }
  if (anomaly) {
    on_parts(anomaly, o, rules, o.anomaly, "qa-anomaly");
    chain.push_back(anomaly);
  }
  if (o.gate) {
    // The rule: a part is at the gate when its centre crosses it.
    GstElement* gate = b.add("torchanalytics", kGateElement);
    if (!gate) return {};
    g_object_set(gate, "lines", gate_lines(*o.gate).c_str(), nullptr);
    set_arg(gate, "reference-point", "center");
    chain.push_back(gate);
  }
  return chain;
}

// --out: per-frame JSON, the annotated video; else a sink as fast as the
// analysis.
std::vector<GstElement*> outputs(Builder& b, const Options& o, int video_fd) {
  if (o.out_dir.empty()) {
    GstElement* sink = b.add("fakesink");
    if (sink) g_object_set(sink, "sync", FALSE, nullptr);
    return {sink};
  }
  GstElement* json = b.add("torchmetaconvert");
  GstElement* overlay = b.add("torchoverlay");
  GstElement* convert = b.add("videoconvert");
  GstElement* bgr = b.caps("video/x-raw,format=BGR");
  GstElement* annotated = b.add("identity", "annotated");
  GstElement* jpeg = b.add("jpegenc");
  GstElement* mux = b.add("matroskamux");
  GstElement* file = b.add("fdsink");
  if (b.failed()) return {};
  g_object_set(json, "location", (o.out_dir + "/results.jsonl").c_str(), nullptr);
  if (o.mm_per_pixel > 0) g_object_set(json, "mm-per-pixel", o.mm_per_pixel, nullptr);
  g_object_set(overlay, "show-hud", TRUE, nullptr);
  set_arg(jpeg, "quality", "85");
  g_object_set(file, "fd", video_fd, nullptr);
  return {json, overlay, convert, bgr, annotated, jpeg, mux, file};
}

}  // namespace

int min_hits(int inference_interval) {
  return std::max(1, 3 / inference_interval);
}

GstElement* build_pipeline(const Options& o, const QaRules& rules, int video_fd, std::string* why) {
  GstElement* pipeline = app::new_pipeline("qa-line");
  Builder b(pipeline, why);
  std::vector<GstElement*> chain = {source(b, o)};
  for (GstElement* e : analysis(b, o, rules)) chain.push_back(e);
  chain.push_back(b.add("identity", "analysed"));
  if (o.evidence) chain.push_back(b.add("tee", kEvidenceTee));
  for (GstElement* e : outputs(b, o, video_fd)) chain.push_back(e);
  if (b.failed() || !b.link(chain)) {
    gst_object_unref(pipeline);
    return nullptr;
  }
  return pipeline;
}

}  // namespace torchinfer::qa
