/**
 * SECTION:element-torchmetaconvert
 *
 * Writes one JSON object per frame (timestamps, classification, timing and
 * optionally the raw output tensors) to a file or stdout; video passes
 * through unchanged.
 *
 *   gst-launch-1.0 ... ! torchinfer model=net.pt ! torchmetaconvert location=out.jsonl ! fakesink
 */
#include "gsttorchmetaconvert.h"

#include <gst/video/video.h>

#include <cerrno>
#include <cstdio>
#include <mutex>
#include <string>

#include "common/file_check.h"
#include "element-errors.h"
#include "export/frame_record.h"
#include "frame-record-reader.h"
#include "torchmetaconvert-properties.h"

GST_DEBUG_CATEGORY_STATIC(gst_torchmetaconvert_debug);
#define GST_CAT_DEFAULT gst_torchmetaconvert_debug

using namespace torchinfer;

namespace metaconvert = torchinfer::gst::metaconvert;
using metaconvert::Settings;

namespace {

struct State {
  std::mutex lock;  // guards settings and status
  Settings settings;
  metaconvert::Status status;
  // streaming thread only
  FILE* out = nullptr;
  bool owns_out = false;
  gst::StreamContext stream;
};

}  // namespace

struct _GstTorchMetaConvert {
  GstBaseTransform parent;
  State* state;
};

G_DEFINE_TYPE(GstTorchMetaConvert, gst_torchmetaconvert, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE(torchmetaconvert, "torchmetaconvert", GST_RANK_NONE,
                            GST_TYPE_TORCHMETACONVERT);

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS("video/x-raw(ANY); video/x-bayer"));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS("video/x-raw(ANY); video/x-bayer"));

static void gst_torchmetaconvert_set_property(GObject* object, guint prop_id, const GValue* value,
                                              GParamSpec* pspec) {
  auto* self = GST_TORCHMETACONVERT(object);
  const bool running = gst::element_running(GST_ELEMENT(object));
  std::lock_guard<std::mutex> lock(self->state->lock);
  metaconvert::properties().set(self->state->settings, prop_id, value, pspec, running);
}

static void gst_torchmetaconvert_get_property(GObject* object, guint prop_id, GValue* value,
                                              GParamSpec* pspec) {
  auto* self = GST_TORCHMETACONVERT(object);
  std::lock_guard<std::mutex> lock(self->state->lock);
  metaconvert::properties().get(self->state->settings, self->state->status, prop_id, value, pspec);
}

static gboolean gst_torchmetaconvert_start(GstBaseTransform* trans) {
  auto* self = GST_TORCHMETACONVERT(trans);
  State& st = *self->state;
  std::string location;
  {
    std::lock_guard<std::mutex> lock(st.lock);
    location = st.settings.location;
    st.status.lines = 0;
  }
  st.stream.next_frame = 0;
  if (location.empty() || location == "-") {
    st.out = stdout;
    st.owns_out = false;
    return TRUE;
  }
  // Never blocks: a FIFO nobody reads yet would hold the state change forever.
  FILE* f = nullptr;
  try {
    f = torchinfer::open_output_stream(location, "torchmetaconvert location");
  } catch (const std::exception& e) {
    GST_ELEMENT_ERROR(self, RESOURCE, OPEN_WRITE, ("%s", e.what()),
                      ("torchmetaconvert location=%s", location.c_str()));
    return FALSE;
  }
  std::lock_guard<std::mutex> lock(st.lock);
  st.out = f;
  st.owns_out = true;
  return TRUE;
}

static std::string output_name(const std::string& location) {
  return location.empty() || location == "-" ? std::string("stdout") : "'" + location + "'";
}

// Lines already written are flushed one by one; what can still fail here is
// the close (NFS, quotas report late), and a lost result must not pass
// unnoticed.
static void post_write_error(GstTorchMetaConvert* self, const std::string& location, int err) {
  GST_ELEMENT_ERROR(self, RESOURCE, WRITE,
                    ("Could not write results to %s: %s; free space or choose another location.",
                     output_name(location).c_str(), g_strerror(err)),
                    ("torchmetaconvert location=%s", location.c_str()));
}

static gboolean gst_torchmetaconvert_stop(GstBaseTransform* trans) {
  auto* self = GST_TORCHMETACONVERT(trans);
  State& st = *self->state;
  std::unique_lock<std::mutex> lock(st.lock);
  bool ok = true;
  if (st.out) ok = st.owns_out ? std::fclose(st.out) == 0 : std::fflush(st.out) == 0;
  const int err = errno;
  st.out = nullptr;
  const std::string location = st.settings.location;
  lock.unlock();
  if (!ok) {
    post_write_error(self, location, err);
    return FALSE;
  }
  return TRUE;
}

static gboolean gst_torchmetaconvert_set_caps(GstBaseTransform* trans, GstCaps* incaps, GstCaps*) {
  auto* self = GST_TORCHMETACONVERT(trans);
  self->state->stream.set_caps(incaps);
  return TRUE;
}

static gboolean gst_torchmetaconvert_sink_event(GstBaseTransform* trans, GstEvent* event) {
  auto* self = GST_TORCHMETACONVERT(trans);
  State& st = *self->state;
  st.stream.on_event(event);
  // Before EOS reaches the sink: an application that stops at EOS must
  // already have seen the error of a last lost line.
  if (GST_EVENT_TYPE(event) == GST_EVENT_EOS && st.out &&
      (std::fflush(st.out) != 0 || std::ferror(st.out))) {
    const int err = errno;
    std::string location;
    {
      std::lock_guard<std::mutex> lock(st.lock);
      location = st.settings.location;
    }
    post_write_error(self, location, err);
    gst_event_unref(event);
    return FALSE;
  }
  return GST_BASE_TRANSFORM_CLASS(gst_torchmetaconvert_parent_class)->sink_event(trans, event);
}

static GstFlowReturn gst_torchmetaconvert_transform_ip(GstBaseTransform* trans, GstBuffer* buf) {
  auto* self = GST_TORCHMETACONVERT(trans);
  State& st = *self->state;
  Settings s;
  {
    std::lock_guard<std::mutex> lock(st.lock);
    s = st.settings;
  }
  try {
    FrameRecord r = gst::read_frame_record(buf, st.stream, s.include_tensors, s.anomaly_regions);
    gst::set_mm_per_pixel(r, s.mm_per_pixel);
    const std::string line = to_json_line(r, s.include_tensors, s.max_tensor_elements) + "\n";
    if (std::fwrite(line.data(), 1, line.size(), st.out) != line.size() ||
        std::fflush(st.out) != 0) {
      post_write_error(self, s.location, errno);
      return GST_FLOW_ERROR;
    }
    std::lock_guard<std::mutex> lock(st.lock);
    st.status.lines++;
  } catch (const std::exception& e) {
    gst::post_exception(GST_ELEMENT(self), e, ErrorKind::kRuntime,
                        "Could not convert results to JSON: ");
    return GST_FLOW_ERROR;
  } catch (...) {
    gst::post_error(GST_ELEMENT(self), ErrorKind::kRuntime, "Could not convert results to JSON.");
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}

static void gst_torchmetaconvert_finalize(GObject* object) {
  auto* self = GST_TORCHMETACONVERT(object);
  delete self->state;
  G_OBJECT_CLASS(gst_torchmetaconvert_parent_class)->finalize(object);
}

static void gst_torchmetaconvert_class_init(GstTorchMetaConvertClass* klass) {
  auto* gobject_class = G_OBJECT_CLASS(klass);
  auto* element_class = GST_ELEMENT_CLASS(klass);
  auto* trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  gobject_class->set_property = gst_torchmetaconvert_set_property;
  gobject_class->get_property = gst_torchmetaconvert_get_property;
  gobject_class->finalize = gst_torchmetaconvert_finalize;
  metaconvert::properties().install(gobject_class);

  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "Torch results to JSON", "Filter/Analyzer/Video",
      "Writes torchinfer results as one JSON object per frame", "torchinfer developers");

  trans_class->start = GST_DEBUG_FUNCPTR(gst_torchmetaconvert_start);
  trans_class->stop = GST_DEBUG_FUNCPTR(gst_torchmetaconvert_stop);
  trans_class->set_caps = GST_DEBUG_FUNCPTR(gst_torchmetaconvert_set_caps);
  trans_class->sink_event = GST_DEBUG_FUNCPTR(gst_torchmetaconvert_sink_event);
  trans_class->transform_ip = GST_DEBUG_FUNCPTR(gst_torchmetaconvert_transform_ip);
  trans_class->transform_ip_on_passthrough = TRUE;

  GST_DEBUG_CATEGORY_INIT(gst_torchmetaconvert_debug, "torchmetaconvert", 0,
                          "torchinfer results to JSON");
}

static void gst_torchmetaconvert_init(GstTorchMetaConvert* self) {
  self->state = new State();
  gst_base_transform_set_passthrough(GST_BASE_TRANSFORM(self), TRUE);
}
