#include "qa_pipeline.h"

#include <algorithm>
#include <string>
#include <vector>

#include "qa_anomaly.h"
#include "qa_frames.h"

namespace torchinfer::qa {

namespace {

// Adds elements to one pipeline; the first failure is kept in `why`.
class Builder {
 public:
  Builder(GstElement* pipeline, std::string* why) : pipeline_(pipeline), why_(why) {}

  GstElement* add(const char* factory, const char* name = nullptr) {
    GstElement* e = gst_element_factory_make(factory, name);
    if (!e) {
      fail(std::string("GStreamer element '") + factory +
           "' is not installed (torchinfer's: set GST_PLUGIN_PATH to the plugin folder)");
      return nullptr;
    }
    gst_bin_add(GST_BIN(pipeline_), e);
    return e;
  }
  // Elements linked in this order, each to the next.
  bool link(const std::vector<GstElement*>& chain) {
    for (std::size_t i = 0; i + 1 < chain.size(); ++i)
      if (!gst_element_link(chain[i], chain[i + 1]))
        return fail(std::string("cannot link ") + GST_ELEMENT_NAME(chain[i]) + " to " +
                    GST_ELEMENT_NAME(chain[i + 1]));
    return true;
  }
  bool fail(const std::string& why) {
    if (why_->empty()) *why_ = why;
    return false;
  }
  bool failed() const { return !why_->empty(); }
  GstElement* pipeline() const { return pipeline_; }

 private:
  GstElement* pipeline_;
  std::string* why_;
};

// Any property from its text form (numbers, enums by nick); strings are
// set with g_object_set, so that no text is parsed as GStreamer syntax.
void set_arg(GstElement* e, const char* name, const std::string& value) {
  gst_util_set_object_arg(G_OBJECT(e), name, value.c_str());
}

GstElement* caps_filter(Builder& b, const char* caps_text) {
  GstElement* f = b.add("capsfilter");
  if (!f) return nullptr;
  GstCaps* caps = gst_caps_from_string(caps_text);
  g_object_set(f, "caps", caps, nullptr);
  gst_caps_unref(caps);
  return f;
}

// matroskademux adds its pads once it has read the header; the first one
// the decoder takes (caps checked by the link: image/jpeg) is the video.
void link_demuxed_video(GstElement*, GstPad* pad, gpointer decoder) {
  GstPad* sink = gst_element_get_static_pad(GST_ELEMENT(decoder), "sink");
  if (!gst_pad_is_linked(sink)) gst_pad_link(pad, sink);
  gst_object_unref(sink);
}

// The MJPEG clip decoded to YUY2, as a camera sends it; the last element.
GstElement* clip_source(Builder& b, const std::string& clip) {
  GstElement* src = b.add("filesrc");
  GstElement* demux = b.add("matroskademux");
  GstElement* dec = b.add("jpegdec");
  GstElement* convert = b.add("videoconvert");
  GstElement* caps = caps_filter(b, "video/x-raw,format=YUY2");
  if (b.failed()) return nullptr;
  g_object_set(src, "location", clip.c_str(), nullptr);
  g_signal_connect(demux, "pad-added", G_CALLBACK(link_demuxed_video), dec);
  if (!b.link({src, demux}) || !b.link({dec, convert, caps})) return nullptr;
  return caps;
}

GstElement* device_source(Builder& b, const std::string& device) {
  GstElement* src = b.add("v4l2src");
  GstElement* caps = caps_filter(b, "video/x-raw,format=YUY2");
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
  if (!o.clip.empty()) return clip_source(b, o.clip);
  if (!o.device.empty()) return device_source(b, o.device);
  return fragment_source(b, o.source);
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

// detector ! torchnms ! torchtrack [! classifier on the part ROIs (by
// default each part classified as often as the detector runs)] [! anomaly
// model on the same ROIs].
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
  // --part-threshold are then tracked but not judged.
  g_object_set(nms, "confidence-threshold", std::min(rules.defect_threshold, o.part_threshold),
               nullptr);
  set_arg(track, "tracking-type", o.tracking_type);
  set_arg(track, "min-hits", std::to_string(min_hits(o.inference_interval)));
  std::vector<GstElement*> chain = {infer, nms, track};
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
  GstElement* bgr = caps_filter(b, "video/x-raw,format=BGR");
  GstElement* annotated = b.add("identity", "annotated");
  GstElement* jpeg = b.add("jpegenc");
  GstElement* mux = b.add("matroskamux");
  GstElement* file = b.add("fdsink");
  if (b.failed()) return {};
  g_object_set(json, "location", (o.out_dir + "/results.jsonl").c_str(), nullptr);
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
  GstElement* pipeline = GST_ELEMENT(gst_object_ref_sink(gst_pipeline_new("qa-line")));
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
