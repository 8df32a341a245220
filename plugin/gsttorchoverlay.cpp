/**
 * SECTION:element-torchoverlay
 *
 * Draws the detections (region-of-interest metas), the classification and an
 * optional fps/latency line onto the video, in place, in the camera's own
 * format (RGB family, YUY2, UYVY, NV12, NV21, I420, YV12, GRAY8).
 *
 *   gst-launch-1.0 ... ! torchinfer model=det.pt ! torchnms ! torchoverlay ! autovideosink
 */
#include "gsttorchoverlay.h"

#include "element-errors.h"
#include "video-frame.h"

#include <gst/video/video.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>

#include "anomaly-map-view.h"
#include "common/rotated_box.h"
#include "gst/torchinfer/torchinfer-helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "mask-param.h"
#include "overlay/draw.h"
#include "torchoverlay-properties.h"

GST_DEBUG_CATEGORY_STATIC(gst_torchoverlay_debug);
#define GST_CAT_DEFAULT gst_torchoverlay_debug

using namespace torchinfer;

namespace overlay = torchinfer::gst::overlay;
using overlay::Settings;

namespace {

struct State {
  std::mutex lock;  // guards settings
  Settings settings;
  // streaming thread only
  Overlay overlay;
  std::optional<std::chrono::steady_clock::time_point> last_frame;
  double fps = 0;  // smoothed
  int frames = 0;  // this run
  bool seen_results = false, warned_no_results = false;
};

// Frames without any result before the element says so. Not 1: torchinfer
// may pass a frame without results when it is busy (drop-policy).
constexpr int kFramesBeforeNoResultsWarning = 10;

std::string tag_text(const std::string& label, double confidence, const Settings& s) {
  std::string t = s.show_labels ? label : "";
  if (s.show_confidence) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.2f", confidence);
    t += (t.empty() ? "" : " ") + std::string(buf);
  }
  return t;
}

const char* string_or_empty(const char* s) {
  return s ? s : "";
}

void add_boxes(GstBuffer* buf, int width, int height, const Settings& s, OverlayScene& scene) {
  gst_torch::foreach_roi(buf, [&](GstVideoRegionOfInterestMeta* roi) {
    OverlayBox b;
    GstTorchDetection d;
    std::string label;
    double confidence = -1;
    if (gst_torch_detection_from_roi(roi, &d)) {
      b.x_min = d.x_min * width;
      b.y_min = d.y_min * height;
      b.x_max = d.x_max * width;
      b.y_max = d.y_max * height;
      b.class_id = d.label_id;
      label = d.label;
      confidence = d.confidence;
    } else {  // another element's ROI: its pixel box and type
      b.x_min = roi->x;
      b.y_min = roi->y;
      b.x_max = roi->x + roi->w;
      b.y_max = roi->y + roi->h;
      label = roi->roi_type ? g_quark_to_string(roi->roi_type) : "";
      b.class_id = static_cast<int>(g_str_hash(label.c_str()) & 0x7fffffff);
    }
    if (confidence >= 0)
      b.text = tag_text(label, confidence, s);
    else if (s.show_labels)
      b.text = label;
    // torchtrack's id goes with the label ("#3 bolt 0.91"); its predicted
    // boxes (frames not inferred) are dashed, telling guesses from sightings.
    gint object_id = 0;
    gboolean predicted = FALSE;
    if (gst_torch_roi_get_object_id(roi, &object_id, &predicted)) {
      if (s.show_labels)
        b.text = "#" + std::to_string(object_id) + (b.text.empty() ? "" : " ") + b.text;
      b.dashed = predicted;
    }
    // Classifiers run on the region (torchinfer roi-list): "#3 bolt 0.90: worn 0.97".
    gpointer state = nullptr;
    while (const GstStructure* c = gst_torch_roi_iterate_classifications(roi, &state)) {
      const gchar* cls = gst_structure_get_string(c, "label");
      double conf = 0;
      if (!s.show_labels || !cls || !gst_structure_get_double(c, "confidence", &conf)) continue;
      b.text += (b.text.empty() ? "" : ": ") + tag_text(cls, conf, s);
    }
    // torchcodes' code of the part, under its box.
    if (const GstStructure* code = gst_torch_roi_get_code(roi); code && s.show_labels)
      b.caption = string_or_empty(gst_structure_get_string(code, "text"));
    // torchnms yolov8-seg: the object's mask, filled in its box's colour.
    if (auto mask = gst::read_mask_param(gst_torch_roi_get_mask(roi)))
      scene.masks.push_back({std::move(*mask), b.class_id});
    // torchnms yolov8-obb: the rotated outline instead of the box around it.
    GstTorchRotatedBox rb;
    if (gst_torch_roi_get_rotated_box(roi, &rb))
      for (const auto& [x, y] : RotatedBox{rb.cx, rb.cy, rb.width, rb.height, rb.angle}.corners())
        b.outline.emplace_back(x, y);
    scene.boxes.push_back(std::move(b));
  });
}

// The colour of the outlines around anomalous areas (palette entry 0, red).
constexpr int kAnomalyOutlineClass = 0;

// Heat maps of anomaly results (the frame's, each part's) with boxes around
// their anomalous areas, under the detection boxes.
void add_anomaly_maps(GstBuffer* buf, const Settings& s, OverlayScene& scene) {
  scene.heat_alpha = s.anomaly_map_alpha;
  for (const gst::AnomalyOnBuffer& a : gst::anomalies_of(buf)) {
    gboolean anomalous = FALSE;
    gst_structure_get_boolean(a.anomaly, "anomalous", &anomalous);
    if (!a.map || (!anomalous && !s.anomaly_map_normal)) continue;
    for (const AnomalyRegion& r : anomaly_regions(a.map->map, a.map->rule, a.map->where)) {
      OverlayBox b;
      b.x_min = r.x_min;
      b.y_min = r.y_min;
      b.x_max = r.x_max;
      b.y_max = r.y_max;
      b.class_id = kAnomalyOutlineClass;
      scene.boxes.push_back(std::move(b));
    }
    scene.heat_maps.push_back(*a.map);
  }
}

void add_classification(GstBuffer* buf, const Settings& s, OverlayScene& scene) {
  GstCustomMeta* cm = gst_buffer_get_custom_meta(buf, GST_TORCH_CLASSIFICATION_META_NAME);
  if (!cm) return;
  const GstStructure* st = gst_custom_meta_get_structure(cm);
  const gchar* label = gst_structure_get_string(st, "label");
  double confidence = 0;
  if (!label || !gst_structure_get_double(st, "confidence", &confidence)) return;
  Settings both = s;
  both.show_labels = true;
  scene.lines.push_back(tag_text(label, confidence, both));
}

// Doubles x1, y1, x2, y2, ... of a structure's "points" array.
std::vector<std::pair<double, double>> points_of(const GstStructure* s) {
  std::vector<std::pair<double, double>> out;
  const GValue* a = gst_structure_get_value(s, "points");
  if (!a || !GST_VALUE_HOLDS_ARRAY(a)) return out;
  for (guint i = 0; i + 1 < gst_value_array_get_size(a); i += 2) {
    const GValue* x = gst_value_array_get_value(a, i);
    const GValue* y = gst_value_array_get_value(a, i + 1);
    if (G_VALUE_HOLDS_DOUBLE(x) && G_VALUE_HOLDS_DOUBLE(y))
      out.emplace_back(g_value_get_double(x), g_value_get_double(y));
  }
  return out;
}

guint64 count_of(const GstStructure* s, const char* field) {
  guint64 v = 0;
  gst_structure_get_uint64(s, field, &v);
  return v;
}

// torchanalytics' lines and zones, drawn where they are, and their counts
// as text rows ("gate: 12 forward, 0 backward", "bay: 1 inside, 7 in, 6 out").
void add_analytics(GstBuffer* buf, OverlayScene& scene) {
  GstCustomMeta* cm = gst_buffer_get_custom_meta(buf, GST_TORCH_ANALYTICS_META_NAME);
  if (!cm) return;
  const GstStructure* st = gst_custom_meta_get_structure(cm);
  for (const char* kind : {"lines", "zones"}) {
    const GValue* a = gst_structure_get_value(st, kind);
    for (guint i = 0; a && GST_VALUE_HOLDS_ARRAY(a) && i < gst_value_array_get_size(a); ++i) {
      const GValue* v = gst_value_array_get_value(a, i);
      if (!GST_VALUE_HOLDS_STRUCTURE(v)) continue;
      const GstStructure* s = gst_value_get_structure(v);
      const gchar* name = gst_structure_get_string(s, "name");
      const bool zone = std::string(kind) == "zones";
      scene.shapes.push_back({points_of(s), zone, name ? name : ""});
      char text[160];
      if (zone)
        std::snprintf(text, sizeof text,
                      "%s: %" G_GUINT64_FORMAT " inside, %" G_GUINT64_FORMAT
                      " in, %" G_GUINT64_FORMAT " out",
                      name ? name : "?", count_of(s, "inside"), count_of(s, "entered"),
                      count_of(s, "exited"));
      else
        std::snprintf(text, sizeof text,
                      "%s: %" G_GUINT64_FORMAT " forward, %" G_GUINT64_FORMAT " backward",
                      name ? name : "?", count_of(s, "forward"), count_of(s, "backward"));
      scene.lines.push_back(text);
    }
  }
}

}  // namespace

struct _GstTorchOverlay {
  GstVideoFilter parent;
  State* state;
};

G_DEFINE_TYPE(GstTorchOverlay, gst_torchoverlay, GST_TYPE_VIDEO_FILTER);
GST_ELEMENT_REGISTER_DEFINE(torchoverlay, "torchoverlay", GST_RANK_NONE, GST_TYPE_TORCHOVERLAY);

static void gst_torchoverlay_set_property(GObject* object, guint prop_id, const GValue* value,
                                          GParamSpec* pspec) {
  auto* self = GST_TORCHOVERLAY(object);
  const bool running = gst::element_running(GST_ELEMENT(object));
  std::lock_guard<std::mutex> lock(self->state->lock);
  overlay::properties().set(self->state->settings, prop_id, value, pspec, running);
}

static void gst_torchoverlay_get_property(GObject* object, guint prop_id, GValue* value,
                                          GParamSpec* pspec) {
  auto* self = GST_TORCHOVERLAY(object);
  std::lock_guard<std::mutex> lock(self->state->lock);
  overlay::properties().get(self->state->settings, {}, prop_id, value, pspec);
}

static gboolean gst_torchoverlay_start(GstBaseTransform* trans) {
  auto* self = GST_TORCHOVERLAY(trans);
  self->state->last_frame.reset();
  self->state->fps = 0;
  self->state->frames = 0;
  self->state->seen_results = false;
  self->state->warned_no_results = false;
  return TRUE;
}

static bool has_results(GstBuffer* buf) {
  return gst_buffer_get_meta(buf, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE) ||
         gst_buffer_get_custom_meta(buf, GST_TORCH_CLASSIFICATION_META_NAME) ||
         gst_buffer_get_torch_tensor_meta(buf);
}

// A pipeline without torchinfer upstream (or with the results stripped on
// the way) would otherwise pass video untouched without a word: say so once
// per run, when the first frames (or a whole short stream) carried nothing.
static void warn_if_no_results(GstTorchOverlay* self, bool at_eos) {
  State& st = *self->state;
  if (st.seen_results || st.warned_no_results || st.frames == 0) return;
  if (!at_eos && st.frames < kFramesBeforeNoResultsWarning) return;
  st.warned_no_results = true;
  GST_ELEMENT_WARNING(
      self, STREAM, FORMAT,
      ("No torchinfer results on the first %d frame(s): torchoverlay draws nothing.", st.frames),
      ("torchoverlay draws the detections (ROI metas, e.g. from torchnms) and the "
       "classification that torchinfer attaches upstream; put it after them. "
       "Further frames without results are logged at debug level only"));
}

static void note_results(GstTorchOverlay* self, GstBuffer* buf) {
  State& st = *self->state;
  st.frames++;
  if (has_results(buf)) {
    st.seen_results = true;
    return;
  }
  GST_DEBUG_OBJECT(self, "no results on buffer %" GST_PTR_FORMAT, buf);
  warn_if_no_results(self, false);
}

static gboolean gst_torchoverlay_sink_event(GstBaseTransform* trans, GstEvent* event) {
  if (GST_EVENT_TYPE(event) == GST_EVENT_EOS) warn_if_no_results(GST_TORCHOVERLAY(trans), true);
  return GST_BASE_TRANSFORM_CLASS(gst_torchoverlay_parent_class)->sink_event(trans, event);
}

static std::string hud_line(State& st, GstBuffer* buf) {
  const auto now = std::chrono::steady_clock::now();
  if (st.last_frame) {
    const double dt = std::chrono::duration<double>(now - *st.last_frame).count();
    if (dt > 0) st.fps = st.fps > 0 ? 0.9 * st.fps + 0.1 / dt : 1.0 / dt;
  }
  st.last_frame = now;
  char line[128];
  int n = std::snprintf(line, sizeof line, "%.1f fps", st.fps);
  if (GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(buf))
    std::snprintf(line + n, sizeof line - n, " | preprocess %.1f ms | inference %.1f ms",
                  m->preprocess_ns / 1e6, m->inference_ns / 1e6);
  return line;
}

static GstFlowReturn gst_torchoverlay_transform_frame_ip(GstVideoFilter* filter,
                                                         GstVideoFrame* frame) {
  auto* self = GST_TORCHOVERLAY(filter);
  State& st = *self->state;
  note_results(self, frame->buffer);
  Settings s;
  {
    std::lock_guard<std::mutex> lock(st.lock);
    s = st.settings;
  }
  try {
    OverlayImage img;
    if (!gst::to_pixel_format(GST_VIDEO_FRAME_FORMAT(frame), &img.format)) {
      GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("torchoverlay cannot draw on this format."),
                        (nullptr));
      return GST_FLOW_NOT_NEGOTIATED;
    }
    img.width = GST_VIDEO_FRAME_WIDTH(frame);
    img.height = GST_VIDEO_FRAME_HEIGHT(frame);
    for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(frame) && p < 3; ++p) {
      img.planes[p] = static_cast<std::uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(frame, p));
      img.strides[p] = GST_VIDEO_FRAME_PLANE_STRIDE(frame, p);
    }
    const GstVideoColorimetry& c = frame->info.colorimetry;
    img.matrix = c.matrix == GST_VIDEO_COLOR_MATRIX_BT709    ? YuvMatrix::kBT709
                 : c.matrix == GST_VIDEO_COLOR_MATRIX_BT2020 ? YuvMatrix::kBT2020
                                                             : YuvMatrix::kBT601;
    img.full_range = c.range == GST_VIDEO_COLOR_RANGE_0_255;

    OverlayScene scene;
    if (s.show_anomaly_map) add_anomaly_maps(frame->buffer, s, scene);
    add_boxes(frame->buffer, img.width, img.height, s, scene);
    if (s.show_classification) add_classification(frame->buffer, s, scene);
    if (s.show_hud) scene.lines.push_back(hud_line(st, frame->buffer));
    add_analytics(frame->buffer, scene);
    st.overlay.draw(scene, img);
  } catch (const std::exception& e) {
    gst::post_exception(GST_ELEMENT(self), e, ErrorKind::kRuntime, "Drawing the overlay failed: ");
    return GST_FLOW_ERROR;
  } catch (...) {
    gst::post_error(GST_ELEMENT(self), ErrorKind::kRuntime, "Drawing the overlay failed.");
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}

static void gst_torchoverlay_finalize(GObject* object) {
  auto* self = GST_TORCHOVERLAY(object);
  delete self->state;
  self->state = nullptr;
  G_OBJECT_CLASS(gst_torchoverlay_parent_class)->finalize(object);
}

static void gst_torchoverlay_class_init(GstTorchOverlayClass* klass) {
  auto* gobject_class = G_OBJECT_CLASS(klass);
  auto* element_class = GST_ELEMENT_CLASS(klass);
  auto* trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  auto* filter_class = GST_VIDEO_FILTER_CLASS(klass);
  gobject_class->set_property = gst_torchoverlay_set_property;
  gobject_class->get_property = gst_torchoverlay_get_property;
  gobject_class->finalize = gst_torchoverlay_finalize;
  overlay::properties().install(gobject_class);

  GstCaps* caps = gst::drawable_video_caps();  // not Bayer or 16-bit: draw on a converted branch
  gst_element_class_add_pad_template(
      element_class, gst_pad_template_new("sink", GST_PAD_SINK, GST_PAD_ALWAYS, caps));
  gst_element_class_add_pad_template(
      element_class, gst_pad_template_new("src", GST_PAD_SRC, GST_PAD_ALWAYS, caps));
  gst_caps_unref(caps);
  gst_element_class_set_static_metadata(
      element_class, "Torch results overlay", "Filter/Effect/Video",
      "Draws torchinfer detections, classification and timing onto raw video in place",
      "torchinfer developers");

  trans_class->start = GST_DEBUG_FUNCPTR(gst_torchoverlay_start);
  trans_class->sink_event = GST_DEBUG_FUNCPTR(gst_torchoverlay_sink_event);
  filter_class->transform_frame_ip = GST_DEBUG_FUNCPTR(gst_torchoverlay_transform_frame_ip);

  GST_DEBUG_CATEGORY_INIT(gst_torchoverlay_debug, "torchoverlay", 0,
                          "draws torchinfer results on video");
}

static void gst_torchoverlay_init(GstTorchOverlay* self) {
  self->state = new State();
}
