/**
 * SECTION:element-torchcodes
 *
 * Reads DataMatrix, QR and 1D codes (zxing-cpp) straight from the luma
 * plane of YUY2, NV12, I420 or GRAY8 frames (no conversion, no copy of the
 * frame), inside each detection ROI (of the classes in object-class, grown
 * by padding), or over the whole frame (full-frame). Each ROI whose code is
 * known gets a "code" param; with torchtrack upstream a track's code is read
 * once and carried on its later ROIs until reread-interval frames pass. A
 * frame read whole gets the "codes" custom meta (gst/torchinfer/torchinfer-meta.h).
 *
 *   ... ! torchnms ! torchtrack ! torchcodes object-class=part ! torchmetaconvert ! ...
 *
 * The buffer's pixels are never touched. Reading runs on the streaming
 * thread, or with workers > 0 on a pool of threads that the streaming
 * thread waits for at most budget-ms a frame (docs/elements.md, torchcodes).
 */
#include "gsttorchcodes.h"

#include <gst/video/video.h>

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "codes/code_session.h"
#include "gst/torchinfer/torchinfer-helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "torchcodes-properties.h"

GST_DEBUG_CATEGORY_STATIC(gst_torchcodes_debug);
#define GST_CAT_DEFAULT gst_torchcodes_debug

using namespace torchinfer;
namespace codes = torchinfer::gst::codes;

namespace {

struct State {
  std::mutex lock;  // guards settings and status
  codes::Settings settings;
  codes::Status status;
  // streaming thread only
  std::unique_ptr<CodeSession> session;
  GstVideoInfo info;
  bool have_info = false;
  bool warned_unreadable = false;
};

}  // namespace

struct _GstTorchCodes {
  GstBaseTransform parent;
  State* state;
};

G_DEFINE_TYPE(GstTorchCodes, gst_torchcodes, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE(torchcodes, "torchcodes", GST_RANK_NONE, GST_TYPE_TORCHCODES);

#define CODES_CAPS "video/x-raw, format = (string) { YUY2, NV12, I420, GRAY8 }"
static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS(CODES_CAPS));
static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS(CODES_CAPS));

static void gst_torchcodes_set_property(GObject* object, guint prop_id, const GValue* value,
                                        GParamSpec* pspec) {
  auto* self = GST_TORCHCODES(object);
  const bool running = gst::element_running(GST_ELEMENT(object));
  std::lock_guard<std::mutex> lock(self->state->lock);
  codes::properties().set(self->state->settings, prop_id, value, pspec, running);
}

static void gst_torchcodes_get_property(GObject* object, guint prop_id, GValue* value,
                                        GParamSpec* pspec) {
  auto* self = GST_TORCHCODES(object);
  std::lock_guard<std::mutex> lock(self->state->lock);
  codes::properties().get(self->state->settings, self->state->status, prop_id, value, pspec);
}

static CodeSessionOptions session_options(const codes::Settings& s) {
  CodeSessionOptions o;
  o.reader.formats = s.formats;
  o.reader.padding = s.padding;
  o.reader.try_harder = s.try_harder;
  o.reader.try_rotate = s.try_rotate;
  o.reader.try_invert = s.try_invert;
  o.classes = split_labels(s.object_class);
  o.reread_interval = s.reread_interval;
  o.full_frame = s.full_frame == codes::GST_TORCHCODES_FULL_FRAME_NEVER ? FullFrameMode::kNever
                 : s.full_frame == codes::GST_TORCHCODES_FULL_FRAME_ALWAYS
                     ? FullFrameMode::kAlways
                     : FullFrameMode::kNoRegion;
  o.workers = s.workers;
  o.budget_ms = s.budget_ms;
  return o;
}

static gboolean gst_torchcodes_start(GstBaseTransform* trans) {
  auto* self = GST_TORCHCODES(trans);
  State& st = *self->state;
  codes::Settings s;
  {
    std::lock_guard<std::mutex> lock(st.lock);
    s = st.settings;
    st.status = {};
  }
  try {
    st.session = std::make_unique<CodeSession>(session_options(s));
  } catch (const std::exception& e) {  // formats are checked when set; this is a backstop
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("torchcodes: %s", e.what()),
                      ("set formats to zxing-cpp names, e.g. DataMatrix,QRCode"));
    return FALSE;
  }
  st.have_info = false;
  st.warned_unreadable = false;
  return TRUE;
}

static gboolean gst_torchcodes_stop(GstBaseTransform* trans) {
  GST_TORCHCODES(trans)->state->session.reset();
  return TRUE;
}

static gboolean gst_torchcodes_set_caps(GstBaseTransform* trans, GstCaps* incaps, GstCaps*) {
  State& st = *GST_TORCHCODES(trans)->state;
  st.have_info = gst_video_info_from_caps(&st.info, incaps) && GST_VIDEO_INFO_WIDTH(&st.info) > 0 &&
                 GST_VIDEO_INFO_HEIGHT(&st.info) > 0;
  if (!st.have_info) {
    GST_ELEMENT_ERROR(trans, STREAM, FORMAT, ("torchcodes needs video caps with a frame size."),
                      ("caps %" GST_PTR_FORMAT, incaps));
    return FALSE;
  }
  return TRUE;
}

// The Y samples of a mapped frame: plane 0, with the luma component's
// offset and pixel stride (YUY2: 0 and 2).
static LumaView luma_view(const GstVideoFrame& f) {
  LumaView v;
  const auto* comp = static_cast<const guint8*>(GST_VIDEO_FRAME_COMP_DATA(&f, 0));
  const auto* begin = static_cast<const guint8*>(f.map[0].data);
  v.data = comp;
  v.bytes = comp >= begin && comp <= begin + f.map[0].size ? begin + f.map[0].size - comp : 0;
  v.width = GST_VIDEO_FRAME_COMP_WIDTH(&f, 0);
  v.height = GST_VIDEO_FRAME_COMP_HEIGHT(&f, 0);
  v.pixel_stride = GST_VIDEO_FRAME_COMP_PSTRIDE(&f, 0);
  v.row_stride = GST_VIDEO_FRAME_COMP_STRIDE(&f, 0);
  return v;
}

// The frame's detection ROIs (with a "detection" param) and where each is
// as the session sees it.
static std::vector<GstVideoRegionOfInterestMeta*> detection_rois(GstBuffer* buf,
                                                                 std::vector<CodeRegion>* out) {
  std::vector<GstVideoRegionOfInterestMeta*> rois;
  gst_torch::foreach_roi(buf, [&](GstVideoRegionOfInterestMeta* roi) {
    if (!gst_video_region_of_interest_meta_get_param(roi, GST_TORCH_DETECTION_STRUCTURE_NAME))
      return;
    CodeRegion r;
    r.box = {double(roi->x), double(roi->y), double(roi->x) + roi->w, double(roi->y) + roi->h};
    r.label = g_quark_to_string(roi->roi_type);
    gint id = 0;
    if (gst_torch_roi_get_object_id(roi, &id, nullptr)) r.track = id;
    rois.push_back(roi);
    out->push_back(std::move(r));
  });
  return rois;
}

static GstStructure* code_structure(const CodeResult& c, guint64 frame) {
  return gst_structure_new(GST_TORCH_CODE_STRUCTURE_NAME, "format", G_TYPE_STRING, c.format.c_str(),
                           "text", G_TYPE_STRING, c.text.c_str(), "x_min", G_TYPE_DOUBLE,
                           c.box.x_min, "y_min", G_TYPE_DOUBLE, c.box.y_min, "x_max", G_TYPE_DOUBLE,
                           c.box.x_max, "y_max", G_TYPE_DOUBLE, c.box.y_max, "frame", G_TYPE_UINT64,
                           guint64(frame), nullptr);
}

static void attach_frame_codes(GstBuffer* buf, const std::vector<CodeResult>& found,
                               guint64 frame) {
  GstCustomMeta* m = gst_buffer_add_custom_meta(buf, GST_TORCH_CODES_META_NAME);
  if (!m) return;
  GstStructure* s = gst_custom_meta_get_structure(m);
  gst_structure_set_name(s, GST_TORCH_CODES_STRUCTURE_NAME);
  GValue list = G_VALUE_INIT;
  gst_value_array_init(&list, found.size());
  for (const CodeResult& c : found) {
    GValue v = G_VALUE_INIT;
    g_value_init(&v, GST_TYPE_STRUCTURE);
    g_value_take_boxed(&v, code_structure(c, frame));
    gst_value_array_append_and_take_value(&list, &v);
  }
  gst_structure_take_value(s, "codes", &list);
}

static void publish_totals(State& st) {
  const CodeTotals& t = st.session->totals();
  std::lock_guard<std::mutex> lock(st.lock);
  st.status = {t.read, t.failed, t.tried, t.skipped_known, t.late, t.deferred};
}

static void read_frame(GstTorchCodes* self, GstBuffer* buf) {
  State& st = *self->state;
  GstVideoFrame frame;
  if (!gst_video_frame_map(&frame, &st.info, buf, GST_MAP_READ)) {
    st.session->unreadable_frame();
    if (!st.warned_unreadable)
      GST_ELEMENT_WARNING(self, STREAM, FORMAT,
                          ("torchcodes cannot read a frame: the buffer is smaller than its caps "
                           "say; such frames pass without codes and count as failed reads."),
                          ("%" G_GSIZE_FORMAT " bytes, caps need %" G_GSIZE_FORMAT,
                           gst_buffer_get_size(buf), GST_VIDEO_INFO_SIZE(&st.info)));
    st.warned_unreadable = true;
    return;
  }
  std::vector<CodeRegion> regions;
  const std::vector<GstVideoRegionOfInterestMeta*> rois = detection_rois(buf, &regions);
  const FrameCodes found = st.session->process(luma_view(frame), regions);
  gst_video_frame_unmap(&frame);
  for (std::size_t i = 0; i < rois.size(); ++i)
    if (const auto& r = found.regions[i])
      gst_video_region_of_interest_meta_add_param(rois[i], code_structure(r->code, r->frame));
  if (found.full_frame) attach_frame_codes(buf, found.frame_codes, st.session->frames());
}

static GstFlowReturn gst_torchcodes_transform_ip(GstBaseTransform* trans, GstBuffer* buf) {
  auto* self = GST_TORCHCODES(trans);
  State& st = *self->state;
  if (!st.have_info || !st.session) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("torchcodes got a frame before its caps."),
                      (nullptr));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  try {
    read_frame(self, buf);
  } catch (const std::exception& e) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Reading codes failed: %s", e.what()), (nullptr));
    return GST_FLOW_ERROR;
  } catch (...) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Reading codes failed."), (nullptr));
    return GST_FLOW_ERROR;
  }
  publish_totals(st);
  return GST_FLOW_OK;
}

static void gst_torchcodes_finalize(GObject* object) {
  auto* self = GST_TORCHCODES(object);
  delete self->state;
  self->state = nullptr;
  G_OBJECT_CLASS(gst_torchcodes_parent_class)->finalize(object);
}

static void gst_torchcodes_class_init(GstTorchCodesClass* klass) {
  auto* gobject_class = G_OBJECT_CLASS(klass);
  auto* element_class = GST_ELEMENT_CLASS(klass);
  auto* trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  gobject_class->set_property = gst_torchcodes_set_property;
  gobject_class->get_property = gst_torchcodes_get_property;
  gobject_class->finalize = gst_torchcodes_finalize;
  codes::install_properties(gobject_class);

  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "Torch code reader", "Filter/Analyzer/Video",
      "Reads DataMatrix, QR and 1D codes (zxing-cpp) inside detection ROIs or the whole frame, "
      "once per track",
      "torchinfer developers");

  trans_class->start = GST_DEBUG_FUNCPTR(gst_torchcodes_start);
  trans_class->stop = GST_DEBUG_FUNCPTR(gst_torchcodes_stop);
  trans_class->set_caps = GST_DEBUG_FUNCPTR(gst_torchcodes_set_caps);
  trans_class->transform_ip = GST_DEBUG_FUNCPTR(gst_torchcodes_transform_ip);
  // Not passthrough: the buffer must be writable to take metas.
  trans_class->passthrough_on_same_caps = FALSE;

  GST_DEBUG_CATEGORY_INIT(gst_torchcodes_debug, "torchcodes", 0, "torchinfer code reading");
}

static void gst_torchcodes_init(GstTorchCodes* self) {
  self->state = new State();
  gst_video_info_init(&self->state->info);
  gst_base_transform_set_in_place(GST_BASE_TRANSFORM(self), TRUE);
}
