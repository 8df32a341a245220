// torchpublish's properties, each described once (rules in
// property-table.h).
#include "torchpublish-properties.h"

#include <cstring>
#include <type_traits>

#include "frame-record-reader.h"

namespace torchinfer::gst::publish {
namespace {

using Entry = Property<Settings, Status>;

GType mode_type() {
  static GType type = 0;
  static const GEnumValue values[] = {
      {PUBLISH_MODE_FRAME, "One message per frame", "frame"},
      {PUBLISH_MODE_DETECTIONS,
       "Only frames whose own inference found detections or changed the top-1 class", "detections"},
      {PUBLISH_MODE_EVENTS,
       "Only frames on which a track started or ended or an object crossed a line or entered "
       "or left a zone (torchtrack, torchanalytics)",
       "events"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&type)) {
    GType t = g_enum_register_static("GstTorchPublishMode", values);
    g_once_init_leave(&type, t);
  }
  return type;
}

GType protocol_type() {
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

// ---- where a value lives ---------------------------------------------------

// Settings member M, directly or inside its MqttOptions.
template <auto M, class S>
auto& field(S& s) {
  if constexpr (std::is_same_v<decltype(owner_of(M)), MqttOptions>)
    return s.mqtt.*M;
  else
    return s.*M;
}

template <auto M>
bool set_field(Settings& s, const GValue* v, GParamSpec*) {
  auto& x = field<M>(s);
  x = from_value<std::remove_reference_t<decltype(x)>>(v);
  return true;
}

template <auto M>
void get_field(const Settings& s, const Status&, GValue* v) {
  to_value(v, field<M>(s));
}

template <auto M>
void get_counter(const Settings&, const Status& now, GValue* v) {
  g_value_set_uint64(v, now.counters().*M);
}

// ---- validated setters: refuse with a warning, keep the previous value -----

bool set_host(Settings& s, const GValue* value, GParamSpec*) {
  const gchar* v = g_value_get_string(value);
  if (!v || !*v) {
    g_warning("torchpublish: 'host' must not be empty; keeping '%s'", s.mqtt.host.c_str());
    return false;
  }
  s.mqtt.host = v;
  return true;
}

bool set_topic(Settings& s, const GValue* value, GParamSpec*) {
  const gchar* v = g_value_get_string(value);
  const std::string problem = mqtt_topic_problem(v ? v : "");
  if (!problem.empty()) {
    g_warning("torchpublish: invalid topic '%s': %s; keeping '%s'", v ? v : "", problem.c_str(),
              s.topic.c_str());
    return false;
  }
  s.topic = v;
  return true;
}

bool set_client_id(Settings& s, const GValue* value, GParamSpec*) {
  const gchar* v = g_value_get_string(value);
  if (v && (strlen(v) > 65535 || !g_utf8_validate(v, -1, nullptr))) {
    g_warning("torchpublish: 'client-id' must be UTF-8 of at most 65535 bytes");
    return false;
  }
  s.mqtt.client_id = from_value<std::string>(value);
  return true;
}

// ---- special getters ---------------------------------------------------------

// Never NULL: an empty host is refused.
void get_host(const Settings& s, const Status&, GValue* v) {
  g_value_set_string(v, s.mqtt.host.c_str());
}

// While running: the id in use, generated when none was set.
void get_client_id(const Settings& s, const Status& now, GValue* v) {
  to_value(v, now.running ? now.running->client_id() : s.mqtt.client_id);
}

void get_queued(const Settings&, const Status& now, GValue* v) {
  const MqttCounters c = now.counters();
  g_value_set_uint(v, static_cast<guint>(c.queued + c.in_flight));
}

void get_connected(const Settings&, const Status& now, GValue* v) {
  g_value_set_boolean(v, now.counters().connected);
}

// ---- the table -------------------------------------------------------------

// Writable before start, stored in Settings (or MqttOptions) member M; `set`
// replaces the plain store where the value needs checking.
template <auto M>
constexpr Entry ready(Prop id, Entry::MakeSpec spec, Entry::Setter set = set_field<M>,
                      Entry::Getter get = get_field<M>) {
  return {id, Access::kReady, spec, set, get};
}

// Read-only, from the publisher's counters.
constexpr Entry counter(Prop id, Entry::MakeSpec spec, Entry::Getter get) {
  return {id, Access::kReadOnly, spec, nullptr, get};
}

GParamSpec* count64(const char* name, const char* nick, const char* blurb, GParamFlags f) {
  return g_param_spec_uint64(name, nick, blurb, 0, G_MAXUINT64, 0, f);
}

GParamSpec* optional_string(const char* name, const char* nick, const char* blurb, GParamFlags f) {
  return g_param_spec_string(name, nick, blurb, nullptr, f);
}

// clang-format off
constexpr Entry kEntries[] = {
  ready<&MqttOptions::host>(PROP_HOST, [](GParamFlags f) {
    return g_param_spec_string("host", "Host", "MQTT broker host name or address", "127.0.0.1",
      f); }, set_host, get_host),
  ready<&MqttOptions::port>(PROP_PORT, [](GParamFlags f) {
    return g_param_spec_int("port", "Port", "MQTT broker port (8883 is usual with TLS)", 1, 65535,
      1883, f); }),
  ready<&Settings::topic>(PROP_TOPIC, [](GParamFlags f) {
    return optional_string("topic", "Topic",
      "Topic to publish on, e.g. line1/cam0 (required; no '+' or '#' wildcards)", f); },
    set_topic),
  ready<&MqttOptions::qos>(PROP_QOS, [](GParamFlags f) {
    return g_param_spec_int("qos", "QoS",
      "MQTT quality of service: 0 at most once, 1 at least once, 2 exactly once", 0, 2, 0, f); }),
  ready<&MqttOptions::retain>(PROP_RETAIN, [](GParamFlags f) {
    return g_param_spec_boolean("retain", "Retain",
      "Ask the broker to keep the latest message for new subscribers", FALSE, f); }),
  ready<&MqttOptions::client_id>(PROP_CLIENT_ID, [](GParamFlags f) {
    return optional_string("client-id", "Client id",
      "MQTT client id; unset: torchinfer-<host>-<pid>-<n> (reads back the id in use while running)",
      f); },
    set_client_id, get_client_id),
  ready<&MqttOptions::username>(PROP_USERNAME, [](GParamFlags f) {
    return optional_string("username", "Username", "Username for the broker (unset: anonymous)", f); }),
  ready<&MqttOptions::password>(PROP_PASSWORD, [](GParamFlags f) {
    return optional_string("password", "Password", "Password for the broker (needs username)", f); }),
  ready<&MqttOptions::tls_ca_file>(PROP_TLS_CA_FILE, [](GParamFlags f) {
    return optional_string("tls-ca-file", "TLS CA file",
      "PEM file of the CA that signed the broker's certificate; setting it turns TLS on", f); }),
  ready<&MqttOptions::tls_cert_file>(PROP_TLS_CERT_FILE, [](GParamFlags f) {
    return optional_string("tls-cert-file", "TLS certificate file",
      "PEM client certificate, for brokers that require one (needs tls-key-file)", f); }),
  ready<&MqttOptions::tls_key_file>(PROP_TLS_KEY_FILE, [](GParamFlags f) {
    return optional_string("tls-key-file", "TLS key file", "PEM private key of tls-cert-file (unencrypted)",
      f); }),
  ready<&MqttOptions::keepalive_s>(PROP_KEEPALIVE, [](GParamFlags f) {
    return g_param_spec_int("keepalive", "Keepalive",
      "Seconds between keep-alive pings; a broker silent for 1.5x this is taken as lost", 5, 65535,
      60, f); }),
  ready<&Settings::mode>(PROP_MODE, [](GParamFlags f) {
    return g_param_spec_enum("mode", "Mode",
      "frame: one message per frame; detections: only frames whose own inference found "
      "detections or changed the top-1 class; events: only frames with track starts/ends or "
      "line crossings and zone entries/exits", mode_type(), PUBLISH_MODE_FRAME, f); }),
  ready<&MqttOptions::max_queued>(PROP_MAX_QUEUED, [](GParamFlags f) {
    return g_param_spec_uint("max-queued", "Max queued",
      "Messages kept while the broker is unreachable; beyond it the oldest is dropped and "
      "counted in 'dropped' (0: none kept)", 0, G_MAXINT, 1000, f); }),
  ready<&MqttOptions::reconnect_delay_min_s>(PROP_RECONNECT_DELAY_MIN, [](GParamFlags f) {
    return g_param_spec_int("reconnect-delay-min", "Reconnect delay min",
      "Seconds before the first reconnection attempt; doubles after each failure", 1, 3600, 1,
      f); }),
  ready<&MqttOptions::reconnect_delay_max_s>(PROP_RECONNECT_DELAY_MAX, [](GParamFlags f) {
    return g_param_spec_int("reconnect-delay-max", "Reconnect delay max",
      "Longest wait between reconnection attempts, seconds", 1, 3600, 30, f); }),
  ready<&MqttOptions::flush_timeout_ms>(PROP_FLUSH_TIMEOUT, [](GParamFlags f) {
    return g_param_spec_int("flush-timeout", "Flush timeout",
      "On stop, ms to wait for queued and unacknowledged messages while connected (never waits "
      "when disconnected)", 0, 60000, 1000, f); }),
  counter(PROP_PUBLISHED, [](GParamFlags f) {
      return count64("published", "Published",
        "Messages delivered since start (QoS 0: written to the broker's socket; QoS 1/2: "
        "acknowledged by the broker)", f); },
    get_counter<&MqttCounters::published>),
  counter(PROP_FAILED, [](GParamFlags f) {
      return count64("failed", "Failed",
        "Messages sent but not delivered: refused (too large, rejected), lost with a QoS 0 "
        "connection, or unacknowledged at stop", f); },
    get_counter<&MqttCounters::failed>),
  counter(PROP_QUEUED, [](GParamFlags f) {
      return g_param_spec_uint("queued", "Queued",
        "Messages waiting for the broker now (queued or unacknowledged)", 0, G_MAXUINT, 0, f); },
    get_queued),
  counter(PROP_CONNECTED, [](GParamFlags f) {
      return g_param_spec_boolean("connected", "Connected", "Connected to the broker now", FALSE,
        f); },
    get_connected),
  counter(PROP_RECONNECTS, [](GParamFlags f) {
      return count64("reconnects", "Reconnects",
        "Times the connection was re-established after being lost", f); },
    get_counter<&MqttCounters::reconnects>),
  counter(PROP_DROPPED, [](GParamFlags f) {
      return count64("dropped", "Dropped",
        "Messages never sent: pushed out of the full queue, still queued at stop, or produced "
        "after stop", f); },
    get_counter<&MqttCounters::dropped>),
  {PROP_STATS_INTERVAL, Access::kPlaying, [](GParamFlags f) {
     return g_param_spec_uint("stats-interval", "Stats interval",
       "Post a \"torchpublish-stats\" element message every this many ms (0: only at EOS); one "
       "is always posted at EOS", 0, G_MAXUINT, 0, f); },
   set_field<&Settings::stats_interval_ms>, get_field<&Settings::stats_interval_ms>},
  ready<&MqttOptions::protocol>(PROP_PROTOCOL_VERSION, [](GParamFlags f) {
    return g_param_spec_enum("protocol-version", "Protocol version",
      "MQTT version; with 5 the broker announces its maximum packet size and a larger message "
      "is refused by name instead of closing the connection", protocol_type(),
      static_cast<gint>(MqttProtocol::kV5), f); }),
  ready<&MqttOptions::max_message_size>(PROP_MAX_MESSAGE_SIZE, [](GParamFlags f) {
    return g_param_spec_uint("max-message-size", "Max message size",
      "Largest message payload to send, bytes; larger ones are counted in 'failed' with a "
      "warning (0: no limit but the broker's)", 0, G_MAXINT, 0, f); }),
  {PROP_MM_PER_PIXEL, Access::kPlaying, gst::mm_per_pixel_param_spec,
   set_field<&Settings::mm_per_pixel>, get_field<&Settings::mm_per_pixel>},
};
// clang-format on

constexpr PropertyTable<Settings, Status> kTable{"torchpublish", kEntries};
static_assert(kTable.in_id_order(), "kEntries lists every Prop once, in id order");
static_assert(kTable.size() == PROP_MM_PER_PIXEL, "every Prop has an entry");

}  // namespace

const PropertyTable<Settings, Status>& properties() {
  return kTable;
}

void install_properties(GObjectClass* klass) {
  kTable.install(klass);
  gst_type_mark_as_plugin_api(mode_type(), static_cast<GstPluginAPIFlags>(0));
  gst_type_mark_as_plugin_api(protocol_type(), static_cast<GstPluginAPIFlags>(0));
}

}  // namespace torchinfer::gst::publish
