/**
 * SECTION:element-torchpublish
 *
 * Publishes the JSON object torchmetaconvert writes for each frame (or only
 * for frames with detections or a changed classification) to an MQTT broker;
 * video passes through unchanged. The network is handled on a thread of its
 * own: a broker that is down or slow never stalls the video.
 *
 *   gst-launch-1.0 ... ! torchinfer model=net.pt ! torchpublish topic=line1/cam0 ! fakesink
 */
#include "gsttorchpublish.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "common/error.h"
#include "element-errors.h"
#include "export/event_filter.h"
#include "export/frame_record.h"
#include "export/mqtt_publisher.h"
#include "frame-record-reader.h"
#include "torchpublish-properties.h"

GST_DEBUG_CATEGORY_STATIC(gst_torchpublish_debug);
#define GST_CAT_DEFAULT gst_torchpublish_debug

using namespace torchinfer;

namespace publish = torchinfer::gst::publish;

namespace {

using Clock = std::chrono::steady_clock;

// The first occurrence at once, then at most one per `every`: trouble that
// lasts must not flood the bus, yet the running count keeps being reported.
class Throttle {
 public:
  explicit Throttle(Clock::duration every) : every_(every) {}
  bool due() {
    std::lock_guard<std::mutex> lk(lock_);
    const auto now = Clock::now();
    if (fired_ && now - last_ < every_) return false;
    fired_ = true;
    last_ = now;
    return true;
  }
  void reset() {
    std::lock_guard<std::mutex> lk(lock_);
    fired_ = false;
  }

 private:
  std::mutex lock_;
  const Clock::duration every_;
  bool fired_ = false;
  Clock::time_point last_{};
};

struct State {
  std::mutex lock;  // guards settings, publisher (the pointer) and status
  publish::Settings settings;
  publish::Status status;           // status.running is publisher.get()
  std::atomic<bool> warned{false};  // a connection problem was posted since the last connect
  std::atomic<guint64> refused{0};  // kPublishFailed events this run
  Throttle drop_warning{std::chrono::seconds(5)};
  Throttle failure_warning{std::chrono::seconds(5)};
  Throttle conflict_warning{std::chrono::seconds(30)};
  // streaming thread only
  gst::StreamContext stream;
  EventFilter filter;
  std::string topic;
  publish::Mode mode = publish::PUBLISH_MODE_FRAME;
  std::size_t max_queued = 0;
  MqttPublisher* out = nullptr;
  std::uint64_t dropped_seen = 0;
  std::uint64_t lost_reported = 0;  // failed + dropped + pending in the last summary
  Clock::time_point last_stats{};
  // Last, so it is destroyed first: its thread calls back into the fields above.
  std::unique_ptr<MqttPublisher> publisher;
};

}  // namespace

struct _GstTorchPublish {
  GstBaseTransform parent;
  State* state;
};

G_DEFINE_TYPE(GstTorchPublish, gst_torchpublish, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE(torchpublish, "torchpublish", GST_RANK_NONE, GST_TYPE_TORCHPUBLISH);

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS("video/x-raw(ANY); video/x-bayer"));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS("video/x-raw(ANY); video/x-bayer"));

static void gst_torchpublish_set_property(GObject* object, guint prop_id, const GValue* value,
                                          GParamSpec* pspec) {
  State& st = *GST_TORCHPUBLISH(object)->state;
  const bool running = gst::element_running(GST_ELEMENT(object));
  std::lock_guard<std::mutex> lock(st.lock);
  publish::properties().set(st.settings, prop_id, value, pspec, running);
}

static void gst_torchpublish_get_property(GObject* object, guint prop_id, GValue* value,
                                          GParamSpec* pspec) {
  State& st = *GST_TORCHPUBLISH(object)->state;
  std::lock_guard<std::mutex> lock(st.lock);
  publish::properties().get(st.settings, st.status, prop_id, value, pspec);
}

// Runs on the publisher's network thread. Posts one warning per episode of
// trouble (not one per retry) and logs the rest.
static void on_mqtt_event(GstTorchPublish* self, const std::string& where, MqttEvent e,
                          std::string detail) {
  State& st = *self->state;
  while (!detail.empty() && detail.back() == '.') detail.pop_back();  // libmosquitto's end in '.'
  switch (e) {
    case MqttEvent::kConnected:
      GST_INFO_OBJECT(self, "connected to MQTT broker %s", detail.c_str());
      st.warned = false;
      break;
    case MqttEvent::kConnectFailed:
      if (detail.find("rotocol version") != std::string::npos)
        detail += " (for a broker without MQTT 5 set protocol-version=3.1.1)";
      if (!st.warned.exchange(true))
        GST_ELEMENT_WARNING(self, RESOURCE, OPEN_WRITE,
                            ("Cannot connect to MQTT broker %s: %s. Retrying with back-off; "
                             "messages are queued meanwhile.",
                             where.c_str(), detail.c_str()),
                            (nullptr));
      else
        GST_DEBUG_OBJECT(self, "connection to %s failed again: %s", where.c_str(), detail.c_str());
      break;
    case MqttEvent::kConnectionLost:
      st.warned = true;
      GST_ELEMENT_WARNING(self, RESOURCE, WRITE,
                          ("Lost the connection to MQTT broker %s: %s. Reconnecting.",
                           where.c_str(), detail.c_str()),
                          (nullptr));
      break;
    case MqttEvent::kPublishFailed: {
      const guint64 refused = ++st.refused;
      if (st.failure_warning.due())
        GST_ELEMENT_WARNING(
            self, RESOURCE, WRITE,
            ("MQTT broker %s: %s (%" G_GUINT64_FORMAT " message(s) refused so far).", where.c_str(),
             detail.c_str(), refused),
            (nullptr));
      else
        GST_DEBUG_OBJECT(self, "%s", detail.c_str());
      break;
    }
    case MqttEvent::kClientIdConflict:
      st.warned = true;
      if (st.conflict_warning.due())
        GST_ELEMENT_WARNING(self, RESOURCE, WRITE,
                            ("Client id conflict on MQTT broker %s: %s. Two clients with one id "
                             "knock each other off the broker; give each element its own "
                             "client-id (or leave it unset for a unique one).",
                             where.c_str(), detail.c_str()),
                            ("still reconnecting with back-off"));
      else
        GST_DEBUG_OBJECT(self, "connection taken over again: %s", detail.c_str());
      break;
  }
}

static gboolean gst_torchpublish_start(GstBaseTransform* trans) {
  auto* self = GST_TORCHPUBLISH(trans);
  State& st = *self->state;
  publish::Settings s;
  {
    std::lock_guard<std::mutex> lock(st.lock);
    s = st.settings;
    st.status.last = MqttCounters();
  }
  if (s.topic.empty()) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("No MQTT topic: set the 'topic' property."),
                      (nullptr));
    return FALSE;
  }
  st.warned = false;
  st.drop_warning.reset();
  st.failure_warning.reset();
  st.conflict_warning.reset();
  st.refused = 0;
  st.dropped_seen = 0;
  st.lost_reported = 0;
  st.last_stats = Clock::now();
  st.stream.reset();
  st.filter.reset();
  st.topic = s.topic;
  st.mode = s.mode;
  st.max_queued = s.mqtt.max_queued;
  const std::string where = s.mqtt.host + ":" + std::to_string(s.mqtt.port);
  try {
    auto p = std::make_unique<MqttPublisher>(
        s.mqtt,
        [self, where](MqttEvent e, const std::string& d) { on_mqtt_event(self, where, e, d); });
    GST_INFO_OBJECT(self, "publishing to %s topic '%s' as client '%s'", where.c_str(),
                    s.topic.c_str(), p->client_id().c_str());
    std::lock_guard<std::mutex> lock(st.lock);
    st.out = p.get();
    st.status.running = p.get();
    st.publisher = std::move(p);
  } catch (const std::exception& e) {
    const auto* err = dynamic_cast<const Error*>(&e);
    const ErrorKind kind = err ? err->kind() : ErrorKind::kSetupFailed;
    const char* prefix = kind == ErrorKind::kNotFound ? ""
                         : kind == ErrorKind::kConfigInvalid || kind == ErrorKind::kInvalidArgument
                             ? "Invalid MQTT settings: "
                             : "Cannot start the MQTT client: ";
    gst::post_exception(GST_ELEMENT(self), e, ErrorKind::kSetupFailed, prefix);
    return FALSE;
  } catch (...) {
    gst::post_error(GST_ELEMENT(self), ErrorKind::kSetupFailed, "Cannot start the MQTT client.");
    return FALSE;
  }
  return TRUE;
}

static void post_stats(GstTorchPublish* self, const MqttCounters& c) {
  GstStructure* s = gst_structure_new(
      "torchpublish-stats", "published", G_TYPE_UINT64, guint64(c.published), "failed",
      G_TYPE_UINT64, guint64(c.failed), "dropped", G_TYPE_UINT64, guint64(c.dropped), "queued",
      G_TYPE_UINT, guint(c.queued), "in-flight", G_TYPE_UINT, guint(c.in_flight), "reconnects",
      G_TYPE_UINT64, guint64(c.reconnects), "connected", G_TYPE_BOOLEAN, gboolean(c.connected),
      nullptr);
  gst_element_post_message(GST_ELEMENT(self), gst_message_new_element(GST_OBJECT(self), s));
}

// One WARNING for everything not delivered, when anything was not (or is
// still waiting): the exact counts a line operator needs to judge the loss.
static void post_summary(GstTorchPublish* self, const MqttCounters& c, const char* when) {
  State& st = *self->state;
  const std::uint64_t pending = c.queued + c.in_flight;
  const std::uint64_t total = c.published + c.failed + c.dropped + pending;
  GST_ELEMENT_WARNING(
      self, RESOURCE, WRITE,
      ("MQTT topic '%s': %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
       " messages not delivered %s: %" G_GUINT64_FORMAT " published, %" G_GUINT64_FORMAT
       " failed, %" G_GUINT64_FORMAT " dropped, %" G_GUINT64_FORMAT " still queued.",
       st.topic.c_str(), guint64(c.failed + c.dropped + pending), guint64(total), when,
       guint64(c.published), guint64(c.failed), guint64(c.dropped), guint64(pending)),
      ("failed: sent but refused or lost with the connection; dropped: never sent (queue full "
       "while the broker was unreachable or slow, or still queued at stop)"));
  st.lost_reported = c.failed + c.dropped + pending;
}

// After each buffer: a warning when messages were dropped (throttled, with
// the running count) and the periodic stats message.
static void report_progress(GstTorchPublish* self) {
  State& st = *self->state;
  const MqttCounters c = st.out->counters();
  if (c.dropped > st.dropped_seen) {
    st.dropped_seen = c.dropped;
    if (st.drop_warning.due())
      GST_ELEMENT_WARNING(self, RESOURCE, WRITE,
                          ("MQTT topic '%s': %" G_GUINT64_FORMAT
                           " message(s) dropped so far: the queue (max-queued=%u) is full while "
                           "the broker is unreachable or slow; the oldest go first.",
                           st.topic.c_str(), guint64(c.dropped), guint(st.max_queued)),
                          (nullptr));
  }
  guint interval;
  {
    std::lock_guard<std::mutex> lock(st.lock);
    interval = st.settings.stats_interval_ms;
  }
  const auto now = Clock::now();
  if (interval > 0 && now - st.last_stats >= std::chrono::milliseconds(interval)) {
    st.last_stats = now;
    post_stats(self, c);
  }
}

static gboolean gst_torchpublish_stop(GstBaseTransform* trans) {
  auto* self = GST_TORCHPUBLISH(trans);
  State& st = *self->state;
  MqttPublisher* p;
  {
    std::lock_guard<std::mutex> lock(st.lock);
    p = st.publisher.get();
  }
  if (!p) return TRUE;
  try {
    p->stop();  // not under st.lock: counters stay readable while it flushes
  } catch (...) {
  }
  std::lock_guard<std::mutex> lock(st.lock);
  const MqttCounters& last = st.status.last = p->counters();
  st.out = nullptr;
  st.status.running = nullptr;
  st.publisher.reset();
  GST_INFO_OBJECT(self,
                  "stopped: %" G_GUINT64_FORMAT " published, %" G_GUINT64_FORMAT
                  " failed, %" G_GUINT64_FORMAT " dropped",
                  last.published, last.failed, last.dropped);
  // Only what the EOS summary did not already count.
  if (last.failed + last.dropped > st.lost_reported) post_summary(self, last, "at stop");
  return TRUE;
}

static gboolean gst_torchpublish_set_caps(GstBaseTransform* trans, GstCaps* incaps, GstCaps*) {
  GST_TORCHPUBLISH(trans)->state->stream.set_caps(incaps);
  return TRUE;
}

static gboolean gst_torchpublish_sink_event(GstBaseTransform* trans, GstEvent* event) {
  auto* self = GST_TORCHPUBLISH(trans);
  State& st = *self->state;
  st.stream.on_event(event);
  if (GST_EVENT_TYPE(event) == GST_EVENT_STREAM_START) st.filter.reset();
  if (GST_EVENT_TYPE(event) == GST_EVENT_EOS && st.out) {
    // The stream's final figures: wait (flush-timeout, only while connected)
    // for what is in flight, then count.
    st.out->flush();
    const MqttCounters c = st.out->counters();
    post_stats(self, c);
    if (c.failed + c.dropped + c.queued + c.in_flight > 0) post_summary(self, c, "at EOS");
  }
  return GST_BASE_TRANSFORM_CLASS(gst_torchpublish_parent_class)->sink_event(trans, event);
}

static bool wanted(publish::Mode mode, EventFilter& filter, const FrameRecord& r) {
  switch (mode) {
    case publish::PUBLISH_MODE_DETECTIONS:
      return filter.is_event(r);
    case publish::PUBLISH_MODE_EVENTS:
      return EventFilter::is_change(r);
    default:
      return true;
  }
}

static GstFlowReturn gst_torchpublish_transform_ip(GstBaseTransform* trans, GstBuffer* buf) {
  auto* self = GST_TORCHPUBLISH(trans);
  State& st = *self->state;
  if (!st.out) return GST_FLOW_OK;
  try {
    FrameRecord r = gst::read_frame_record(buf, st.stream, false);
    {
      std::lock_guard<std::mutex> lock(st.lock);
      gst::set_mm_per_pixel(r, st.settings.mm_per_pixel);
    }
    if (wanted(st.mode, st.filter, r)) st.out->publish(st.topic, to_json_line(r, false, 0));
    report_progress(self);
  } catch (const std::exception& e) {
    gst::post_exception(GST_ELEMENT(self), e, ErrorKind::kRuntime, "Could not publish results: ");
    return GST_FLOW_ERROR;
  } catch (...) {
    gst::post_error(GST_ELEMENT(self), ErrorKind::kRuntime, "Could not publish results.");
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}

static void gst_torchpublish_finalize(GObject* object) {
  auto* self = GST_TORCHPUBLISH(object);
  delete self->state;
  G_OBJECT_CLASS(gst_torchpublish_parent_class)->finalize(object);
}

static void gst_torchpublish_class_init(GstTorchPublishClass* klass) {
  auto* gobject_class = G_OBJECT_CLASS(klass);
  auto* element_class = GST_ELEMENT_CLASS(klass);
  auto* trans_class = GST_BASE_TRANSFORM_CLASS(klass);

  gobject_class->set_property = gst_torchpublish_set_property;
  gobject_class->get_property = gst_torchpublish_get_property;
  gobject_class->finalize = gst_torchpublish_finalize;
  publish::install_properties(gobject_class);

  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "Torch results to MQTT", "Filter/Analyzer/Video",
      "Publishes torchinfer results as one JSON message per frame to an MQTT broker",
      "torchinfer developers");

  trans_class->start = GST_DEBUG_FUNCPTR(gst_torchpublish_start);
  trans_class->stop = GST_DEBUG_FUNCPTR(gst_torchpublish_stop);
  trans_class->set_caps = GST_DEBUG_FUNCPTR(gst_torchpublish_set_caps);
  trans_class->sink_event = GST_DEBUG_FUNCPTR(gst_torchpublish_sink_event);
  trans_class->transform_ip = GST_DEBUG_FUNCPTR(gst_torchpublish_transform_ip);
  trans_class->transform_ip_on_passthrough = TRUE;

  GST_DEBUG_CATEGORY_INIT(gst_torchpublish_debug, "torchpublish", 0, "torchinfer results to MQTT");
}

static void gst_torchpublish_init(GstTorchPublish* self) {
  self->state = new State();
  gst_base_transform_set_passthrough(GST_BASE_TRANSFORM(self), TRUE);
}
