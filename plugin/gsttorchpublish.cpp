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

GST_DEBUG_CATEGORY_STATIC(gst_torchpublish_debug);
#define GST_CAT_DEFAULT gst_torchpublish_debug

using namespace torchinfer;

enum {
  PROP_0,
  PROP_HOST,
  PROP_PORT,
  PROP_TOPIC,
  PROP_QOS,
  PROP_RETAIN,
  PROP_CLIENT_ID,
  PROP_USERNAME,
  PROP_PASSWORD,
  PROP_TLS_CA_FILE,
  PROP_TLS_CERT_FILE,
  PROP_TLS_KEY_FILE,
  PROP_KEEPALIVE,
  PROP_MODE,
  PROP_MAX_QUEUED,
  PROP_RECONNECT_DELAY_MIN,
  PROP_RECONNECT_DELAY_MAX,
  PROP_FLUSH_TIMEOUT,
  PROP_PUBLISHED,
  PROP_FAILED,
  PROP_QUEUED,
  PROP_CONNECTED,
  PROP_RECONNECTS,
  PROP_DROPPED,
  PROP_STATS_INTERVAL,
  PROP_PROTOCOL_VERSION,
  PROP_MAX_MESSAGE_SIZE,
};

typedef enum { PUBLISH_MODE_FRAME, PUBLISH_MODE_DETECTIONS } GstTorchPublishMode;

#define GST_TYPE_TORCH_PUBLISH_MODE (gst_torch_publish_mode_get_type())
static GType gst_torch_publish_mode_get_type() {
  static GType type = 0;
  static const GEnumValue values[] = {
      {PUBLISH_MODE_FRAME, "One message per frame", "frame"},
      {PUBLISH_MODE_DETECTIONS,
       "Only frames whose own inference found detections or changed the top-1 class", "detections"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&type)) {
    GType t = g_enum_register_static("GstTorchPublishMode", values);
    g_once_init_leave(&type, t);
  }
  return type;
}

#define GST_TYPE_TORCH_PUBLISH_PROTOCOL (gst_torch_publish_protocol_get_type())
static GType gst_torch_publish_protocol_get_type() {
  static GType type = 0;
  static const GEnumValue values[] = {
      {static_cast<gint>(MqttProtocol::kV311), "MQTT 3.1.1", "3.1.1"},
      {static_cast<gint>(MqttProtocol::kV5), "MQTT 5 (the broker announces its limits)", "5"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&type)) {
    GType t = g_enum_register_static("GstTorchPublishProtocol", values);
    g_once_init_leave(&type, t);
  }
  return type;
}

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

struct Settings {
  MqttOptions mqtt;
  std::string topic;
  GstTorchPublishMode mode = PUBLISH_MODE_FRAME;
};

struct State {
  std::mutex lock;  // guards settings, publisher (the pointer) and last
  Settings settings;
  MqttCounters last;                // counters of the previous run, readable after stop
  std::atomic<bool> warned{false};  // a connection problem was posted since the last connect
  std::atomic<guint> stats_interval_ms{0};  // may change while running
  std::atomic<guint64> refused{0};          // kPublishFailed events this run
  Throttle drop_warning{std::chrono::seconds(5)};
  Throttle failure_warning{std::chrono::seconds(5)};
  Throttle conflict_warning{std::chrono::seconds(30)};
  // streaming thread only
  gst::StreamContext stream;
  EventFilter filter;
  std::string topic;
  GstTorchPublishMode mode = PUBLISH_MODE_FRAME;
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
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS("video/x-raw(ANY)"));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS("video/x-raw(ANY)"));

static void set_string(std::string& field, const GValue* value) {
  const gchar* v = g_value_get_string(value);
  field = v ? v : "";
}

static void gst_torchpublish_set_property(GObject* object, guint prop_id, const GValue* value,
                                          GParamSpec* pspec) {
  auto* self = GST_TORCHPUBLISH(object);
  if (prop_id == PROP_STATS_INTERVAL) {
    self->state->stats_interval_ms = g_value_get_uint(value);
    return;
  }
  std::lock_guard<std::mutex> lock(self->state->lock);
  if (self->state->publisher) {
    g_warning("torchpublish: '%s' cannot change while the element is running", pspec->name);
    return;
  }
  Settings& s = self->state->settings;
  MqttOptions& m = s.mqtt;
  switch (prop_id) {
    case PROP_HOST: {
      const gchar* v = g_value_get_string(value);
      if (!v || !*v) {
        g_warning("torchpublish: 'host' must not be empty; keeping '%s'", m.host.c_str());
        return;
      }
      m.host = v;
      break;
    }
    case PROP_PORT:
      m.port = g_value_get_int(value);
      break;
    case PROP_TOPIC: {
      const gchar* v = g_value_get_string(value);
      const std::string problem = mqtt_topic_problem(v ? v : "");
      if (!problem.empty()) {
        g_warning("torchpublish: invalid topic '%s': %s; keeping '%s'", v ? v : "", problem.c_str(),
                  s.topic.c_str());
        return;
      }
      s.topic = v;
      break;
    }
    case PROP_QOS:
      m.qos = g_value_get_int(value);
      break;
    case PROP_RETAIN:
      m.retain = g_value_get_boolean(value);
      break;
    case PROP_CLIENT_ID: {
      const gchar* v = g_value_get_string(value);
      if (v && (strlen(v) > 65535 || !g_utf8_validate(v, -1, nullptr))) {
        g_warning("torchpublish: 'client-id' must be UTF-8 of at most 65535 bytes");
        return;
      }
      set_string(m.client_id, value);
      break;
    }
    case PROP_USERNAME:
      set_string(m.username, value);
      break;
    case PROP_PASSWORD:
      set_string(m.password, value);
      break;
    case PROP_TLS_CA_FILE:
      set_string(m.tls_ca_file, value);
      break;
    case PROP_TLS_CERT_FILE:
      set_string(m.tls_cert_file, value);
      break;
    case PROP_TLS_KEY_FILE:
      set_string(m.tls_key_file, value);
      break;
    case PROP_KEEPALIVE:
      m.keepalive_s = g_value_get_int(value);
      break;
    case PROP_MODE:
      s.mode = static_cast<GstTorchPublishMode>(g_value_get_enum(value));
      break;
    case PROP_MAX_QUEUED:
      m.max_queued = g_value_get_uint(value);
      break;
    case PROP_RECONNECT_DELAY_MIN:
      m.reconnect_delay_min_s = g_value_get_int(value);
      break;
    case PROP_RECONNECT_DELAY_MAX:
      m.reconnect_delay_max_s = g_value_get_int(value);
      break;
    case PROP_FLUSH_TIMEOUT:
      m.flush_timeout_ms = g_value_get_int(value);
      break;
    case PROP_PROTOCOL_VERSION:
      m.protocol = static_cast<MqttProtocol>(g_value_get_enum(value));
      break;
    case PROP_MAX_MESSAGE_SIZE:
      m.max_message_size = g_value_get_uint(value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
}

static void set_optional_string(GValue* value, const std::string& s) {
  g_value_set_string(value, s.empty() ? nullptr : s.c_str());
}

static void gst_torchpublish_get_property(GObject* object, guint prop_id, GValue* value,
                                          GParamSpec* pspec) {
  auto* self = GST_TORCHPUBLISH(object);
  State& st = *self->state;
  std::lock_guard<std::mutex> lock(st.lock);
  const Settings& s = st.settings;
  const MqttOptions& m = s.mqtt;
  const MqttCounters c = st.publisher ? st.publisher->counters() : st.last;
  switch (prop_id) {
    case PROP_HOST:
      g_value_set_string(value, m.host.c_str());
      break;
    case PROP_PORT:
      g_value_set_int(value, m.port);
      break;
    case PROP_TOPIC:
      set_optional_string(value, s.topic);
      break;
    case PROP_QOS:
      g_value_set_int(value, m.qos);
      break;
    case PROP_RETAIN:
      g_value_set_boolean(value, m.retain);
      break;
    case PROP_CLIENT_ID:
      // While running: the id in use, generated when none was set.
      set_optional_string(value, st.publisher ? st.publisher->client_id() : m.client_id);
      break;
    case PROP_USERNAME:
      set_optional_string(value, m.username);
      break;
    case PROP_PASSWORD:
      set_optional_string(value, m.password);
      break;
    case PROP_TLS_CA_FILE:
      set_optional_string(value, m.tls_ca_file);
      break;
    case PROP_TLS_CERT_FILE:
      set_optional_string(value, m.tls_cert_file);
      break;
    case PROP_TLS_KEY_FILE:
      set_optional_string(value, m.tls_key_file);
      break;
    case PROP_KEEPALIVE:
      g_value_set_int(value, m.keepalive_s);
      break;
    case PROP_MODE:
      g_value_set_enum(value, s.mode);
      break;
    case PROP_MAX_QUEUED:
      g_value_set_uint(value, static_cast<guint>(m.max_queued));
      break;
    case PROP_RECONNECT_DELAY_MIN:
      g_value_set_int(value, m.reconnect_delay_min_s);
      break;
    case PROP_RECONNECT_DELAY_MAX:
      g_value_set_int(value, m.reconnect_delay_max_s);
      break;
    case PROP_FLUSH_TIMEOUT:
      g_value_set_int(value, m.flush_timeout_ms);
      break;
    case PROP_PUBLISHED:
      g_value_set_uint64(value, c.published);
      break;
    case PROP_FAILED:
      g_value_set_uint64(value, c.failed);
      break;
    case PROP_QUEUED:
      g_value_set_uint(value, static_cast<guint>(c.queued + c.in_flight));
      break;
    case PROP_CONNECTED:
      g_value_set_boolean(value, c.connected);
      break;
    case PROP_RECONNECTS:
      g_value_set_uint64(value, c.reconnects);
      break;
    case PROP_DROPPED:
      g_value_set_uint64(value, c.dropped);
      break;
    case PROP_STATS_INTERVAL:
      g_value_set_uint(value, st.stats_interval_ms);
      break;
    case PROP_PROTOCOL_VERSION:
      g_value_set_enum(value, static_cast<gint>(m.protocol));
      break;
    case PROP_MAX_MESSAGE_SIZE:
      g_value_set_uint(value, static_cast<guint>(m.max_message_size));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
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
  Settings s;
  {
    std::lock_guard<std::mutex> lock(st.lock);
    s = st.settings;
    st.last = MqttCounters();
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
  const guint interval = st.stats_interval_ms;
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
  st.last = p->counters();
  st.out = nullptr;
  st.publisher.reset();
  GST_INFO_OBJECT(self,
                  "stopped: %" G_GUINT64_FORMAT " published, %" G_GUINT64_FORMAT
                  " failed, %" G_GUINT64_FORMAT " dropped",
                  st.last.published, st.last.failed, st.last.dropped);
  // Only what the EOS summary did not already count.
  if (st.last.failed + st.last.dropped > st.lost_reported) post_summary(self, st.last, "at stop");
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

static GstFlowReturn gst_torchpublish_transform_ip(GstBaseTransform* trans, GstBuffer* buf) {
  auto* self = GST_TORCHPUBLISH(trans);
  State& st = *self->state;
  if (!st.out) return GST_FLOW_OK;
  try {
    const FrameRecord r = gst::read_frame_record(buf, st.stream, false);
    if (st.mode != PUBLISH_MODE_DETECTIONS || st.filter.is_event(r))
      st.out->publish(st.topic, to_json_line(r, false, 0));
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
  const auto rw = static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
                                           GST_PARAM_MUTABLE_READY);
  const auto ro = static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);

  gobject_class->set_property = gst_torchpublish_set_property;
  gobject_class->get_property = gst_torchpublish_get_property;
  gobject_class->finalize = gst_torchpublish_finalize;

  auto str = [&](guint id, const char* name, const char* nick, const char* blurb, const char* def) {
    g_object_class_install_property(gobject_class, id,
                                    g_param_spec_string(name, nick, blurb, def, rw));
  };
  auto num = [&](guint id, const char* name, const char* nick, const char* blurb, int lo, int hi,
                 int def) {
    g_object_class_install_property(gobject_class, id,
                                    g_param_spec_int(name, nick, blurb, lo, hi, def, rw));
  };
  str(PROP_HOST, "host", "Host", "MQTT broker host name or address", "127.0.0.1");
  num(PROP_PORT, "port", "Port", "MQTT broker port (8883 is usual with TLS)", 1, 65535, 1883);
  str(PROP_TOPIC, "topic", "Topic",
      "Topic to publish on, e.g. line1/cam0 (required; no '+' or '#' wildcards)", nullptr);
  num(PROP_QOS, "qos", "QoS",
      "MQTT quality of service: 0 at most once, 1 at least once, 2 exactly once", 0, 2, 0);
  g_object_class_install_property(
      gobject_class, PROP_RETAIN,
      g_param_spec_boolean("retain", "Retain",
                           "Ask the broker to keep the latest message for new subscribers", FALSE,
                           rw));
  str(PROP_CLIENT_ID, "client-id", "Client id",
      "MQTT client id; unset: torchinfer-<host>-<pid>-<n> (reads back the id in use while running)",
      nullptr);
  str(PROP_USERNAME, "username", "Username", "Username for the broker (unset: anonymous)", nullptr);
  str(PROP_PASSWORD, "password", "Password", "Password for the broker (needs username)", nullptr);
  str(PROP_TLS_CA_FILE, "tls-ca-file", "TLS CA file",
      "PEM file of the CA that signed the broker's certificate; setting it turns TLS on", nullptr);
  str(PROP_TLS_CERT_FILE, "tls-cert-file", "TLS certificate file",
      "PEM client certificate, for brokers that require one (needs tls-key-file)", nullptr);
  str(PROP_TLS_KEY_FILE, "tls-key-file", "TLS key file",
      "PEM private key of tls-cert-file (unencrypted)", nullptr);
  num(PROP_KEEPALIVE, "keepalive", "Keepalive",
      "Seconds between keep-alive pings; a broker silent for 1.5x this is taken as lost", 5, 65535,
      60);
  g_object_class_install_property(
      gobject_class, PROP_MODE,
      g_param_spec_enum("mode", "Mode",
                        "frame: one message per frame; detections: only frames whose own "
                        "inference found detections or changed the top-1 class",
                        GST_TYPE_TORCH_PUBLISH_MODE, PUBLISH_MODE_FRAME, rw));
  g_object_class_install_property(
      gobject_class, PROP_MAX_QUEUED,
      g_param_spec_uint("max-queued", "Max queued",
                        "Messages kept while the broker is unreachable; beyond it the oldest is "
                        "dropped and counted in 'dropped' (0: none kept)",
                        0, G_MAXINT, 1000, rw));
  num(PROP_RECONNECT_DELAY_MIN, "reconnect-delay-min", "Reconnect delay min",
      "Seconds before the first reconnection attempt; doubles after each failure", 1, 3600, 1);
  num(PROP_RECONNECT_DELAY_MAX, "reconnect-delay-max", "Reconnect delay max",
      "Longest wait between reconnection attempts, seconds", 1, 3600, 30);
  num(PROP_FLUSH_TIMEOUT, "flush-timeout", "Flush timeout",
      "On stop, ms to wait for queued and unacknowledged messages while connected (never waits "
      "when disconnected)",
      0, 60000, 1000);
  g_object_class_install_property(
      gobject_class, PROP_PUBLISHED,
      g_param_spec_uint64("published", "Published",
                          "Messages delivered since start (QoS 0: written to the broker's socket; "
                          "QoS 1/2: acknowledged by the broker)",
                          0, G_MAXUINT64, 0, ro));
  g_object_class_install_property(
      gobject_class, PROP_FAILED,
      g_param_spec_uint64("failed", "Failed",
                          "Messages sent but not delivered: refused (too large, rejected), lost "
                          "with a QoS 0 connection, or unacknowledged at stop",
                          0, G_MAXUINT64, 0, ro));
  g_object_class_install_property(
      gobject_class, PROP_DROPPED,
      g_param_spec_uint64("dropped", "Dropped",
                          "Messages never sent: pushed out of the full queue, still queued at "
                          "stop, or produced after stop",
                          0, G_MAXUINT64, 0, ro));
  g_object_class_install_property(
      gobject_class, PROP_STATS_INTERVAL,
      g_param_spec_uint("stats-interval", "Stats interval",
                        "Post a \"torchpublish-stats\" element message every this many ms (0: "
                        "only at EOS); one is always posted at EOS",
                        0, G_MAXUINT, 0,
                        static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
                                                 GST_PARAM_MUTABLE_PLAYING)));
  g_object_class_install_property(
      gobject_class, PROP_PROTOCOL_VERSION,
      g_param_spec_enum("protocol-version", "Protocol version",
                        "MQTT version; with 5 the broker announces its maximum packet size and a "
                        "larger message is refused by name instead of closing the connection",
                        GST_TYPE_TORCH_PUBLISH_PROTOCOL, static_cast<gint>(MqttProtocol::kV5), rw));
  g_object_class_install_property(
      gobject_class, PROP_MAX_MESSAGE_SIZE,
      g_param_spec_uint("max-message-size", "Max message size",
                        "Largest message payload to send, bytes; larger ones are counted in "
                        "'failed' with a warning (0: no limit but the broker's)",
                        0, G_MAXINT, 0, rw));
  g_object_class_install_property(
      gobject_class, PROP_QUEUED,
      g_param_spec_uint("queued", "Queued",
                        "Messages waiting for the broker now (queued or unacknowledged)", 0,
                        G_MAXUINT, 0, ro));
  g_object_class_install_property(
      gobject_class, PROP_CONNECTED,
      g_param_spec_boolean("connected", "Connected", "Connected to the broker now", FALSE, ro));
  g_object_class_install_property(
      gobject_class, PROP_RECONNECTS,
      g_param_spec_uint64("reconnects", "Reconnects",
                          "Times the connection was re-established after being lost", 0,
                          G_MAXUINT64, 0, ro));

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

  gst_type_mark_as_plugin_api(GST_TYPE_TORCH_PUBLISH_MODE, static_cast<GstPluginAPIFlags>(0));
  gst_type_mark_as_plugin_api(GST_TYPE_TORCH_PUBLISH_PROTOCOL, static_cast<GstPluginAPIFlags>(0));
  GST_DEBUG_CATEGORY_INIT(gst_torchpublish_debug, "torchpublish", 0, "torchinfer results to MQTT");
}

static void gst_torchpublish_init(GstTorchPublish* self) {
  self->state = new State();
  gst_base_transform_set_passthrough(GST_BASE_TRANSFORM(self), TRUE);
}
