/**
 * SECTION:element-torchanalytics
 *
 * Counts tracked objects crossing lines (tripwires) and entering, staying in
 * and leaving zones (polygons), per stream; put it after torchtrack. The
 * rules (direction, hysteresis, border, holes, track lifetime) are those of
 * src/analytics/analytics.h, documented in docs/elements.md.
 *
 *   ... ! torchnms ! torchtrack ! torchanalytics lines="gate:320,480,320,0" classes=bracket,washer
 * ! torchmetaconvert ! ...
 *
 * Each frame gets the cumulative counts of its stream as a custom meta
 * (GST_TORCH_ANALYTICS_META_NAME), each detection ROI the names of the zones
 * it is in; every crossing, entry and exit is an element message
 * ("torchanalytics-crossing", "torchanalytics-zone-entered",
 * "torchanalytics-zone-exited"). Every property may change while PLAYING.
 */
#include "gsttorchanalytics.h"

#include <gst/video/video.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "element-errors.h"
#include "gst/torchinfer/torchinfer-helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "torchanalytics-properties.h"

GST_DEBUG_CATEGORY_STATIC(gst_torchanalytics_debug);
#define GST_CAT_DEFAULT gst_torchanalytics_debug

using namespace torchinfer;
namespace an = torchinfer::gst::analytics;

namespace {

struct State {
  std::mutex lock;  // guards settings
  an::Settings settings;
  an::CountsBoard board;  // its own lock
  an::Status status{&board};
  // streaming thread only
  std::uint64_t applied = 0;  // settings generation in use
  bool fresh = true;          // nothing applied yet (start, new caps)
  AnalyticsConfig config;     // in pixels
  AnalyticsOptions options;
  std::map<std::string, StreamAnalytics> streams;  // by stream-id
  std::string current;                             // stream-id of the latest stream-start
  int width = 0, height = 0;
  int applied_width = 0, applied_height = 0;  // the frame size st.config is in
};

}  // namespace

struct _GstTorchAnalytics {
  GstBaseTransform parent;
  State* state;
};

G_DEFINE_TYPE(GstTorchAnalytics, gst_torchanalytics, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE(torchanalytics, "torchanalytics", GST_RANK_NONE,
                            GST_TYPE_TORCHANALYTICS);

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS("video/x-raw(ANY); video/x-bayer"));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS("video/x-raw(ANY); video/x-bayer"));

static void gst_torchanalytics_set_property(GObject* object, guint prop_id, const GValue* value,
                                            GParamSpec* pspec) {
  auto* self = GST_TORCHANALYTICS(object);
  const bool running = gst::element_running(GST_ELEMENT(object));
  std::lock_guard<std::mutex> lock(self->state->lock);
  an::properties().set(self->state->settings, prop_id, value, pspec, running);
}

static void gst_torchanalytics_get_property(GObject* object, guint prop_id, GValue* value,
                                            GParamSpec* pspec) {
  auto* self = GST_TORCHANALYTICS(object);
  std::lock_guard<std::mutex> lock(self->state->lock);
  an::properties().get(self->state->settings, self->state->status, prop_id, value, pspec);
}

static gboolean gst_torchanalytics_start(GstBaseTransform* trans) {
  auto* self = GST_TORCHANALYTICS(trans);
  State& st = *self->state;
  std::string path;
  {
    std::lock_guard<std::mutex> lock(st.lock);
    path = st.settings.config;
  }
  AnalyticsConfig content;
  try {
    if (!path.empty()) content = read_analytics_file(path);
  } catch (const std::exception& e) {
    gst::post_exception(GST_ELEMENT(self), e, ErrorKind::kConfigInvalid,
                        "torchanalytics config: ", "fix the file or unset config");
    return FALSE;
  }
  std::lock_guard<std::mutex> lock(st.lock);
  if (st.settings.config == path) st.settings.config_content = std::move(content);
  st.settings.running = true;
  st.board.clear();
  st.streams.clear();
  st.current.clear();
  st.fresh = true;
  st.applied_width = st.applied_height = 0;
  return TRUE;
}

static gboolean gst_torchanalytics_stop(GstBaseTransform* trans) {
  State& st = *GST_TORCHANALYTICS(trans)->state;
  std::lock_guard<std::mutex> lock(st.lock);
  st.settings.running = false;
  st.streams.clear();
  return TRUE;
}

static gboolean gst_torchanalytics_set_caps(GstBaseTransform* trans, GstCaps* incaps, GstCaps*) {
  State& st = *GST_TORCHANALYTICS(trans)->state;
  GstVideoInfo info;
  if (!gst_video_info_from_caps(&info, incaps) || GST_VIDEO_INFO_WIDTH(&info) <= 0 ||
      GST_VIDEO_INFO_HEIGHT(&info) <= 0) {
    GST_ELEMENT_ERROR(trans, STREAM, FORMAT, ("torchanalytics needs video caps with a frame size."),
                      ("caps %" GST_PTR_FORMAT, incaps));
    return FALSE;
  }
  st.width = GST_VIDEO_INFO_WIDTH(&info);
  st.height = GST_VIDEO_INFO_HEIGHT(&info);
  st.fresh = true;  // normalised coordinates scale anew
  return TRUE;
}

// Takes changed settings into use at a frame boundary. A combination that
// cannot apply (a name in both the property and the file) keeps the
// previous one, with a warning.
static void apply_settings(GstTorchAnalytics* self) {
  State& st = *self->state;
  an::Settings s;
  {
    std::lock_guard<std::mutex> lock(st.lock);
    if (!st.fresh && st.settings.generation == st.applied) return;
    s = st.settings;
  }
  st.applied = s.generation;
  st.fresh = false;
  bool configured = true;
  try {
    st.config = an::effective_config(s, st.width, st.height);
  } catch (const std::exception& e) {
    configured = false;
    GST_ELEMENT_WARNING(self, RESOURCE, SETTINGS, ("%s", e.what()),
                        ("the previous lines and zones stay; rename one of them"));
  }
  st.options.hysteresis = s.hysteresis;
  st.options.max_age = static_cast<int>(s.max_age);
  st.options.reference = s.reference;
  // A new frame size scales the tracks and the normalised lines and zones
  // with it: in the user's 0..1 coordinates nothing changed, so the counts
  // stay.
  const bool resized = configured && st.applied_width > 0 && st.applied_height > 0 &&
                       (st.applied_width != st.width || st.applied_height != st.height);
  const double sx = resized ? double(st.width) / st.applied_width : 1;
  const double sy = resized ? double(st.height) / st.applied_height : 1;
  st.applied_width = st.width;
  st.applied_height = st.height;
  for (auto& [id, stream] : st.streams) {
    if (resized)
      stream.resize(st.config, sx, sy);
    else
      stream.set_config(st.config);
    stream.set_options(st.options);
  }
}

static gboolean gst_torchanalytics_sink_event(GstBaseTransform* trans, GstEvent* event) {
  State& st = *GST_TORCHANALYTICS(trans)->state;
  if (GST_EVENT_TYPE(event) == GST_EVENT_STREAM_START) {
    const gchar* id = nullptr;
    gst_event_parse_stream_start(event, &id);
    st.current = id ? id : "";
  }
  return GST_BASE_TRANSFORM_CLASS(gst_torchanalytics_parent_class)->sink_event(trans, event);
}

// The ROIs torchnms attached (with a "detection" param), as objects in pixels.
static std::vector<AnalyticsObject> objects_of(GstBuffer* buf, int w, int h,
                                               std::vector<GstVideoRegionOfInterestMeta*>& rois) {
  std::vector<AnalyticsObject> out;
  gst_torch::foreach_detection(buf,
                               [&](GstVideoRegionOfInterestMeta* roi, const GstTorchDetection& d) {
                                 AnalyticsObject o;
                                 o.label = d.label ? d.label : "";
                                 o.label_id = d.label_id;
                                 o.x_min = d.x_min * w;
                                 o.y_min = d.y_min * h;
                                 o.x_max = d.x_max * w;
                                 o.y_max = d.y_max * h;
                                 gint id = 0;
                                 if (gst_torch_roi_get_object_id(roi, &id, nullptr))
                                   o.track_id = id;
                                 out.push_back(std::move(o));
                                 rois.push_back(roi);
                               });
  return out;
}

static void add_zone_names(GstVideoRegionOfInterestMeta* roi, const std::vector<std::string>& z) {
  GValue list = G_VALUE_INIT, v = G_VALUE_INIT;
  gst_value_array_init(&list, z.size());
  for (const std::string& name : z) {
    g_value_init(&v, G_TYPE_STRING);
    g_value_set_string(&v, name.c_str());
    gst_value_array_append_and_take_value(&list, &v);
  }
  GstStructure* s = gst_structure_new_empty(GST_TORCH_ANALYTICS_ROI_STRUCTURE_NAME);
  gst_structure_take_value(s, "zones", &list);
  gst_video_region_of_interest_meta_add_param(roi, s);
}

static GstStructure* event_structure(const AnalyticsEvent& e, const std::string& stream_id) {
  const bool crossing = e.type == AnalyticsEventType::kCrossing;
  const char* name = crossing                                 ? "torchanalytics-crossing"
                     : e.type == AnalyticsEventType::kEntered ? "torchanalytics-zone-entered"
                                                              : "torchanalytics-zone-exited";
  GstStructure* s = gst_structure_new(
      name, crossing ? "line" : "zone", G_TYPE_STRING, e.name.c_str(), "id", G_TYPE_INT, e.track_id,
      "label", G_TYPE_STRING, e.label.c_str(), "label-id", G_TYPE_INT, e.label_id, "pts",
      G_TYPE_UINT64, e.pts_ns >= 0 ? guint64(e.pts_ns) : GST_CLOCK_TIME_NONE, "stream-id",
      G_TYPE_STRING, stream_id.c_str(), nullptr);
  if (crossing)
    gst_structure_set(s, "direction", G_TYPE_STRING, e.forward ? "forward" : "backward", nullptr);
  if (e.type == AnalyticsEventType::kExited)
    gst_structure_set(s, "dwell", G_TYPE_UINT64, guint64(e.dwell_ns), "reason", G_TYPE_STRING,
                      e.lost ? "lost" : "left", nullptr);
  return s;
}

static void append_structure(GValue* array, GstStructure* s) {
  GValue v = G_VALUE_INIT;
  g_value_init(&v, GST_TYPE_STRUCTURE);
  gst_value_set_structure(&v, s);
  gst_structure_free(s);
  gst_value_array_append_and_take_value(array, &v);
}

static void take_array(GstStructure* s, const char* field, GValue* array) {
  gst_structure_take_value(s, field, array);
}

static GstStructure* line_structure(const LineCounts& c) {
  GValue classes = G_VALUE_INIT;
  gst_value_array_init(&classes, c.by_class.size());
  for (const auto& [label, n] : c.by_class)
    append_structure(&classes, gst_structure_new("class", "label", G_TYPE_STRING, label.c_str(),
                                                 "forward", G_TYPE_UINT64, n.forward, "backward",
                                                 G_TYPE_UINT64, n.backward, nullptr));
  GstStructure* s =
      gst_structure_new("line", "name", G_TYPE_STRING, c.name.c_str(), "forward", G_TYPE_UINT64,
                        c.total.forward, "backward", G_TYPE_UINT64, c.total.backward, nullptr);
  take_array(s, "by-class", &classes);
  return s;
}

// Where the line or zone is, in frame pixels (x1, y1, x2, y2, ...), for
// drawing (torchoverlay) and for applications.
static void set_points(GstStructure* s, const std::vector<Point2>& points) {
  GValue a = G_VALUE_INIT, v = G_VALUE_INIT;
  gst_value_array_init(&a, 2 * points.size());
  for (const Point2& p : points)
    for (double c : {p.x, p.y}) {
      g_value_init(&v, G_TYPE_DOUBLE);
      g_value_set_double(&v, c);
      gst_value_array_append_and_take_value(&a, &v);
    }
  gst_structure_take_value(s, "points", &a);
}

static const GstStructure* attach_counts(GstBuffer* buf, const StreamAnalytics& a,
                                         const AnalyticsConfig& where, const std::string& stream_id,
                                         const std::vector<GstStructure*>& events) {
  GstCustomMeta* cm = gst_buffer_add_custom_meta(buf, GST_TORCH_ANALYTICS_META_NAME);
  if (!cm) return nullptr;
  GstStructure* s = gst_custom_meta_get_structure(cm);
  gst_structure_set_name(s, "torchanalytics");
  gst_structure_set(s, "stream-id", G_TYPE_STRING, stream_id.c_str(), nullptr);
  GValue lines = G_VALUE_INIT, zones = G_VALUE_INIT, evs = G_VALUE_INIT;
  gst_value_array_init(&lines, 0);
  const std::vector<LineCounts> lc = a.line_counts();
  for (std::size_t i = 0; i < lc.size(); ++i) {
    GstStructure* l = line_structure(lc[i]);
    if (i < where.lines.size()) set_points(l, {where.lines[i].p1, where.lines[i].p2});
    append_structure(&lines, l);
  }
  gst_value_array_init(&zones, 0);
  const std::vector<ZoneCounts> zc = a.zone_counts();
  for (std::size_t i = 0; i < zc.size(); ++i) {
    const ZoneCounts& z = zc[i];
    GstStructure* zs = gst_structure_new("zone", "name", G_TYPE_STRING, z.name.c_str(), "inside",
                                         G_TYPE_UINT64, z.inside, "entered", G_TYPE_UINT64,
                                         z.entered, "exited", G_TYPE_UINT64, z.exited, nullptr);
    if (i < where.zones.size()) set_points(zs, where.zones[i].outline);
    append_structure(&zones, zs);
  }
  gst_value_array_init(&evs, events.size());
  for (GstStructure* e : events) append_structure(&evs, gst_structure_copy(e));
  take_array(s, "lines", &lines);
  take_array(s, "zones", &zones);
  take_array(s, "events", &evs);
  return s;
}

static StreamAnalytics& current_stream(State& st) {
  auto it = st.streams.find(st.current);
  if (it == st.streams.end()) it = st.streams.try_emplace(st.current, st.config, st.options).first;
  return it->second;
}

static void analyse(GstTorchAnalytics* self, GstBuffer* buf) {
  State& st = *self->state;
  apply_settings(self);
  StreamAnalytics& stream = current_stream(st);
  std::vector<GstVideoRegionOfInterestMeta*> rois;
  const std::vector<AnalyticsObject> objects = objects_of(buf, st.width, st.height, rois);
  const GstClockTime pts = GST_BUFFER_PTS(buf);
  const AnalyticsStep step =
      stream.update(objects, GST_CLOCK_TIME_IS_VALID(pts) ? std::int64_t(pts) : -1);
  for (std::size_t i = 0; i < rois.size(); ++i) add_zone_names(rois[i], step.zones[i]);
  std::vector<GstStructure*> events;
  for (const AnalyticsEvent& e : step.events) events.push_back(event_structure(e, st.current));
  const GstStructure* counts = attach_counts(buf, stream, st.config, st.current, events);
  if (counts) st.board.put(st.current, counts);
  for (GstStructure* s : events)
    gst_element_post_message(GST_ELEMENT(self), gst_message_new_element(GST_OBJECT(self), s));
}

static GstFlowReturn gst_torchanalytics_transform_ip(GstBaseTransform* trans, GstBuffer* buf) {
  auto* self = GST_TORCHANALYTICS(trans);
  try {
    analyse(self, buf);
  } catch (const std::exception& e) {
    gst::post_exception(GST_ELEMENT(self), e, ErrorKind::kRuntime, "Line/zone analytics failed: ");
    return GST_FLOW_ERROR;
  } catch (...) {
    gst::post_error(GST_ELEMENT(self), ErrorKind::kRuntime, "Line/zone analytics failed.");
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}

static void gst_torchanalytics_finalize(GObject* object) {
  auto* self = GST_TORCHANALYTICS(object);
  delete self->state;
  self->state = nullptr;
  G_OBJECT_CLASS(gst_torchanalytics_parent_class)->finalize(object);
}

static void gst_torchanalytics_class_init(GstTorchAnalyticsClass* klass) {
  auto* gobject_class = G_OBJECT_CLASS(klass);
  auto* element_class = GST_ELEMENT_CLASS(klass);
  auto* trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  gobject_class->set_property = gst_torchanalytics_set_property;
  gobject_class->get_property = gst_torchanalytics_get_property;
  gobject_class->finalize = gst_torchanalytics_finalize;
  an::install_properties(gobject_class);

  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "Torch line and zone analytics", "Filter/Analyzer/Video",
      "Counts tracked objects crossing lines and entering/leaving zones, per stream",
      "torchinfer developers");

  trans_class->start = GST_DEBUG_FUNCPTR(gst_torchanalytics_start);
  trans_class->stop = GST_DEBUG_FUNCPTR(gst_torchanalytics_stop);
  trans_class->set_caps = GST_DEBUG_FUNCPTR(gst_torchanalytics_set_caps);
  trans_class->transform_ip = GST_DEBUG_FUNCPTR(gst_torchanalytics_transform_ip);
  trans_class->sink_event = GST_DEBUG_FUNCPTR(gst_torchanalytics_sink_event);
  trans_class->passthrough_on_same_caps = FALSE;  // the buffer takes metas

  GST_DEBUG_CATEGORY_INIT(gst_torchanalytics_debug, "torchanalytics", 0,
                          "torchinfer line and zone analytics");
}

static void gst_torchanalytics_init(GstTorchAnalytics* self) {
  self->state = new State();
  gst_base_transform_set_in_place(GST_BASE_TRANSFORM(self), TRUE);
}
