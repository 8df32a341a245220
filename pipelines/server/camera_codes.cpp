#include "camera_codes.h"

#include <gst/video/video.h>

#include <algorithm>

#include "gst/torchinfer/torchinfer-helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "lineio/line_output.h"

namespace torchinfer::server {

namespace {

// GET /streams/{id} keeps this many distinct codes.
constexpr std::size_t kRecentCodes = 32;

void set_arg(GstElement* e, const char* name, const std::string& value) {
  gst_util_set_object_arg(G_OBJECT(e), name, value.c_str());
}

void apply(GstElement* e, const CodesSpec& c) {
  if (!c.formats.empty()) g_object_set(e, "formats", c.formats.c_str(), nullptr);
  std::string classes;
  for (const auto& l : c.classes) classes += (classes.empty() ? "" : ",") + l;
  if (!classes.empty()) g_object_set(e, "object-class", classes.c_str(), nullptr);
  if (c.padding) g_object_set(e, "padding", *c.padding, nullptr);
  if (c.budget_ms) g_object_set(e, "budget-ms", *c.budget_ms, nullptr);
  if (c.workers) set_arg(e, "workers", std::to_string(*c.workers));
  if (c.reread_interval) set_arg(e, "reread-interval", std::to_string(*c.reread_interval));
  if (!c.full_frame.empty()) set_arg(e, "full-frame", c.full_frame);
}

std::uint64_t u64(GstElement* e, const char* name) {
  guint64 v = 0;
  g_object_get(e, name, &v, nullptr);
  return v;
}

// A "code" structure (torchinfer-meta.h) as JSON; `track` -1: none.
nlohmann::json code_json(const GstStructure* s, int track) {
  const char* format = gst_structure_get_string(s, "format");
  const char* text = gst_structure_get_string(s, "text");
  double box[4] = {0, 0, 0, 0};
  gst_structure_get_double(s, "x_min", &box[0]);
  gst_structure_get_double(s, "y_min", &box[1]);
  gst_structure_get_double(s, "x_max", &box[2]);
  gst_structure_get_double(s, "y_max", &box[3]);
  guint64 frame = 0;
  gst_structure_get_uint64(s, "frame", &frame);
  nlohmann::json j = {{"format", format ? format : ""},
                      {"text", text ? text : ""},
                      {"box", {box[0], box[1], box[2], box[3]}},
                      {"frame", frame}};
  if (track >= 0) j["track"] = track;
  return j;
}

// The codes on a frame: on its detections (their "code" param) and the
// whole frame's (GstTorchCodesMeta).
nlohmann::json frame_codes(GstBuffer* buf) {
  nlohmann::json out = nlohmann::json::array();
  gst_torch::foreach_roi(buf, [&](GstVideoRegionOfInterestMeta* roi) {
    const GstStructure* code =
        gst_video_region_of_interest_meta_get_param(roi, GST_TORCH_CODE_STRUCTURE_NAME);
    if (!code) return;
    gint track = -1;  // torchtrack's id, when the part is tracked
    if (!gst_torch_roi_get_object_id(roi, &track, nullptr)) track = -1;
    out.push_back(code_json(code, track));
  });
  GstCustomMeta* cm = gst_buffer_get_custom_meta(buf, GST_TORCH_CODES_META_NAME);
  const GValue* list =
      cm ? gst_structure_get_value(gst_custom_meta_get_structure(cm), "codes") : nullptr;
  for (guint i = 0; list && GST_VALUE_HOLDS_ARRAY(list) && i < gst_value_array_get_size(list);
       ++i) {
    const GValue* v = gst_value_array_get_value(list, i);
    if (GST_VALUE_HOLDS_STRUCTURE(v)) out.push_back(code_json(gst_value_get_structure(v), -1));
  }
  return out;
}

}  // namespace

std::unique_ptr<CameraCodes> CameraCodes::attach(const StreamSpec& spec, GstElement* pipeline,
                                                 std::vector<GstElement*>& chain,
                                                 std::string* why) {
  GstElement* e = gst_element_factory_make("torchcodes", "codes");
  if (!e) {
    *why =
        "GStreamer element 'torchcodes' is not installed (torchinfer's: set GST_PLUGIN_PATH "
        "to the plugin folder)";
    return nullptr;
  }
  apply(e, *spec.codes);
  gst_bin_add(GST_BIN(pipeline), e);
  chain.push_back(e);
  return std::make_unique<CameraCodes>(e);
}

CameraCodes::CameraCodes(GstElement* codes) : codes_(GST_ELEMENT(gst_object_ref(codes))) {
  GstPad* in = gst_element_get_static_pad(codes_, "sink");
  GstPad* out = gst_element_get_static_pad(codes_, "src");
  gst_pad_add_probe(in, GST_PAD_PROBE_TYPE_BUFFER, on_in, this, nullptr);
  gst_pad_add_probe(out, GST_PAD_PROBE_TYPE_BUFFER, on_out, this, nullptr);
  gst_object_unref(in);
  gst_object_unref(out);
}

CameraCodes::~CameraCodes() {
  gst_object_unref(codes_);
}

GstPadProbeReturn CameraCodes::on_in(GstPad*, GstPadProbeInfo*, gpointer user) {
  static_cast<CameraCodes*>(user)->entered_ns_ = steady_now_ns();
  return GST_PAD_PROBE_OK;
}

// torchcodes works in place on the streaming thread: from its sink pad to
// its src pad is its time on that thread.
GstPadProbeReturn CameraCodes::on_out(GstPad*, GstPadProbeInfo* info, gpointer user) {
  auto* self = static_cast<CameraCodes*>(user);
  if (self->entered_ns_ > 0) self->busy_ns_ += steady_now_ns() - self->entered_ns_;
  self->collect(GST_PAD_PROBE_INFO_BUFFER(info));
  return GST_PAD_PROBE_OK;
}

void CameraCodes::collect(GstBuffer* buf) {
  nlohmann::json found = frame_codes(buf);
  if (found.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& c : found) {
    // A track's known code rides on each of its boxes: one entry per code,
    // moved to the end when seen again.
    auto same = std::find_if(recent_.begin(), recent_.end(), [&](const nlohmann::json& r) {
      return r["format"] == c["format"] && r["text"] == c["text"];
    });
    if (same != recent_.end()) recent_.erase(same);
    recent_.push_back(c);
    if (recent_.size() > kRecentCodes) recent_.pop_front();
  }
  latest_ = std::move(found);
}

void CameraCodes::status(nlohmann::json& j) const {
  nlohmann::json c = {
      {"read", u64(codes_, "read")},          {"failed", u64(codes_, "failed")},
      {"tried", u64(codes_, "tried")},        {"skipped_known", u64(codes_, "skipped-known")},
      {"late", u64(codes_, "late")},          {"deferred", u64(codes_, "deferred")},
      {"read_seconds", busy_ns_.load() / 1e9}};
  std::lock_guard<std::mutex> lock(mu_);
  c["latest"] = latest_;
  c["recent"] = nlohmann::json(std::vector<nlohmann::json>(recent_.begin(), recent_.end()));
  j["codes"] = std::move(c);
}

void CameraCodes::figures(StreamFigures& f) const {
  f.codes = true;
  f.codes_read = u64(codes_, "read");
  f.codes_failed = u64(codes_, "failed");
  f.codes_tried = u64(codes_, "tried");
  f.codes_late = u64(codes_, "late");
  f.codes_read_seconds = busy_ns_.load() / 1e9;
}

}  // namespace torchinfer::server
