// torchpublish's properties, each described once: its GParamSpec, where its
// value lives and whether it may change while running. Installing, setting
// and reading are generated from the table. A new property needs an id in
// Prop, a member in Settings (or Status) and one entry here.
#include "torchpublish-properties.h"

#include <cstring>
#include <iterator>
#include <type_traits>

#include "property-access.h"

namespace torchinfer::gst::publish {
namespace {

using MakeSpec = GParamSpec* (*)(GParamFlags);
using Setter = void (*)(Settings&, const GValue*);
using Getter = void (*)(const Settings&, const Status&, GValue*);

struct Property {
  Prop id;
  Access access;
  MakeSpec spec;         // called with the flags of `access`
  Setter set = nullptr;  // null: not stored in Settings
  Getter get = nullptr;
};

GType mode_type() {
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

template <class C, class T>
C owner_of(T C::*);

// Settings member M, directly or inside its MqttOptions.
template <auto M, class S>
auto& field(S& s) {
  if constexpr (std::is_same_v<decltype(owner_of(M)), MqttOptions>)
    return s.mqtt.*M;
  else
    return s.*M;
}

template <class T>
constexpr bool kUnsupported = false;

// std::size_t members are counts shown as guint properties.
template <class T>
void from_value(T& x, const GValue* v) {
  if constexpr (std::is_same_v<T, std::string>) {
    const gchar* s = g_value_get_string(v);
    x = s ? s : "";
  } else if constexpr (std::is_same_v<T, int>) {
    x = g_value_get_int(v);
  } else if constexpr (std::is_same_v<T, bool>) {
    x = g_value_get_boolean(v);
  } else if constexpr (std::is_same_v<T, std::size_t>) {
    x = g_value_get_uint(v);
  } else if constexpr (std::is_enum_v<T>) {
    x = static_cast<T>(g_value_get_enum(v));
  } else {
    static_assert(kUnsupported<T>, "add this member type to from_value");
  }
}

template <class T>
void to_value(GValue* v, const T& x) {
  if constexpr (std::is_same_v<T, std::string>) {
    g_value_set_string(v, x.empty() ? nullptr : x.c_str());  // unset reads back as NULL
  } else if constexpr (std::is_same_v<T, int>) {
    g_value_set_int(v, x);
  } else if constexpr (std::is_same_v<T, bool>) {
    g_value_set_boolean(v, x);
  } else if constexpr (std::is_same_v<T, std::size_t>) {
    g_value_set_uint(v, static_cast<guint>(x));
  } else if constexpr (std::is_enum_v<T>) {
    g_value_set_enum(v, static_cast<gint>(x));
  } else {
    static_assert(kUnsupported<T>, "add this member type to to_value");
  }
}

template <auto M>
void set_field(Settings& s, const GValue* v) {
  from_value(field<M>(s), v);
}

template <auto M>
void get_field(const Settings& s, const Status&, GValue* v) {
  to_value(v, field<M>(s));
}

template <auto M>
void get_counter(const Settings&, const Status& now, GValue* v) {
  g_value_set_uint64(v, now.counters.*M);
}

// ---- validated setters: refuse with a warning, keep the previous value -----

void set_host(Settings& s, const GValue* value) {
  const gchar* v = g_value_get_string(value);
  if (!v || !*v) {
    g_warning("torchpublish: 'host' must not be empty; keeping '%s'", s.mqtt.host.c_str());
    return;
  }
  s.mqtt.host = v;
}

void set_topic(Settings& s, const GValue* value) {
  const gchar* v = g_value_get_string(value);
  const std::string problem = mqtt_topic_problem(v ? v : "");
  if (!problem.empty()) {
    g_warning("torchpublish: invalid topic '%s': %s; keeping '%s'", v ? v : "", problem.c_str(),
              s.topic.c_str());
    return;
  }
  s.topic = v;
}

void set_client_id(Settings& s, const GValue* value) {
  const gchar* v = g_value_get_string(value);
  if (v && (strlen(v) > 65535 || !g_utf8_validate(v, -1, nullptr))) {
    g_warning("torchpublish: 'client-id' must be UTF-8 of at most 65535 bytes");
    return;
  }
  from_value(s.mqtt.client_id, value);
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
  g_value_set_uint(v, static_cast<guint>(now.counters.queued + now.counters.in_flight));
}

void get_connected(const Settings&, const Status& now, GValue* v) {
  g_value_set_boolean(v, now.counters.connected);
}

void get_stats_interval(const Settings&, const Status& now, GValue* v) {
  g_value_set_uint(v, now.stats_interval_ms);
}

// ---- the table -------------------------------------------------------------

// Writable before start, stored in Settings (or MqttOptions) member M; `set`
// replaces the plain store where the value needs checking.
template <auto M>
constexpr Property ready(Prop id, MakeSpec spec, Setter set = set_field<M>,
                         Getter get = get_field<M>) {
  return {id, Access::kReady, spec, set, get};
}

// Read-only, from the publisher's counters.
constexpr Property counter(Prop id, MakeSpec spec, Getter get) {
  return {id, Access::kReadOnly, spec, nullptr, get};
}

GParamSpec* count64(const char* name, const char* nick, const char* blurb, GParamFlags f) {
  return g_param_spec_uint64(name, nick, blurb, 0, G_MAXUINT64, 0, f);
}

GParamSpec* optional_string(const char* name, const char* nick, const char* blurb, GParamFlags f) {
  return g_param_spec_string(name, nick, blurb, nullptr, f);
}

// In installation order (which is not the id order).
// clang-format off
constexpr Property kProperties[] = {
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
      "detections or changed the top-1 class", mode_type(), PUBLISH_MODE_FRAME, f); }),
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
  counter(PROP_DROPPED, [](GParamFlags f) {
      return count64("dropped", "Dropped",
        "Messages never sent: pushed out of the full queue, still queued at stop, or produced "
        "after stop", f); },
    get_counter<&MqttCounters::dropped>),
  // Stored by the element itself, outside the settings lock.
  {PROP_STATS_INTERVAL, Access::kPlaying, [](GParamFlags f) {
     return g_param_spec_uint("stats-interval", "Stats interval",
       "Post a \"torchpublish-stats\" element message every this many ms (0: only at EOS); one "
       "is always posted at EOS", 0, G_MAXUINT, 0, f); },
   nullptr, get_stats_interval},
  ready<&MqttOptions::protocol>(PROP_PROTOCOL_VERSION, [](GParamFlags f) {
    return g_param_spec_enum("protocol-version", "Protocol version",
      "MQTT version; with 5 the broker announces its maximum packet size and a larger message "
      "is refused by name instead of closing the connection", protocol_type(),
      static_cast<gint>(MqttProtocol::kV5), f); }),
  ready<&MqttOptions::max_message_size>(PROP_MAX_MESSAGE_SIZE, [](GParamFlags f) {
    return g_param_spec_uint("max-message-size", "Max message size",
      "Largest message payload to send, bytes; larger ones are counted in 'failed' with a "
      "warning (0: no limit but the broker's)", 0, G_MAXINT, 0, f); }),
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
};
// clang-format on

constexpr bool table_has_every_id_once() {
  bool seen[PROP_MAX_MESSAGE_SIZE + 1] = {};
  for (const Property& p : kProperties) {
    if (p.id <= PROP_0 || p.id > PROP_MAX_MESSAGE_SIZE || seen[p.id]) return false;
    seen[p.id] = true;
  }
  return std::size(kProperties) == PROP_MAX_MESSAGE_SIZE;
}
static_assert(table_has_every_id_once(), "kProperties lists every Prop once");

const Property* find(guint prop_id) {
  for (const Property& p : kProperties)
    if (p.id == prop_id) return &p;
  return nullptr;
}

}  // namespace

void install_properties(GObjectClass* klass) {
  for (const Property& p : kProperties)
    g_object_class_install_property(klass, p.id, p.spec(flags_for(p.access)));
  gst_type_mark_as_plugin_api(mode_type(), static_cast<GstPluginAPIFlags>(0));
  gst_type_mark_as_plugin_api(protocol_type(), static_cast<GstPluginAPIFlags>(0));
}

void set_property(GObject* object, Settings& s, guint prop_id, const GValue* value,
                  GParamSpec* pspec) {
  const Property* p = find(prop_id);
  if (p && p->set)
    p->set(s, value);
  else
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
}

void get_property(GObject* object, const Settings& s, const Status& now, guint prop_id,
                  GValue* value, GParamSpec* pspec) {
  const Property* p = find(prop_id);
  if (p && p->get)
    p->get(s, now, value);
  else
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
}

}  // namespace torchinfer::gst::publish
