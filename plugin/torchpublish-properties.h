// The torchpublish element's settings and properties. Each property is
// described once, in torchpublish-properties.cpp: its GParamSpec, where its
// value lives and when it may change.
#pragma once

#include <gst/gst.h>

#include <string>

#include "export/mqtt_publisher.h"

namespace torchinfer::gst::publish {

// The ids are GObject's listing order (by id, not by installation): keep them.
enum Prop {
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

enum Mode { PUBLISH_MODE_FRAME, PUBLISH_MODE_DETECTIONS };

// What may only change before start (NULL or READY).
struct Settings {
  MqttOptions mqtt;
  std::string topic;
  Mode mode = PUBLISH_MODE_FRAME;
};

// What the other properties read: stats-interval lives in the element, as
// the streaming thread reads it while running.
struct Status {
  const MqttPublisher* running = nullptr;  // null when stopped
  MqttCounters counters;                   // of the running publisher, else of the last run
  guint stats_interval_ms = 0;
};

// Also marks the enum types as plugin API (documented with the element).
void install_properties(GObjectClass* klass);

// Stores a value into `s`. An invalid one is refused with a g_warning naming
// the property and keeps the previous value. Not for stats-interval.
void set_property(GObject* object, Settings& s, guint prop_id, const GValue* value,
                  GParamSpec* pspec);

void get_property(GObject* object, const Settings& s, const Status& now, guint prop_id,
                  GValue* value, GParamSpec* pspec);

}  // namespace torchinfer::gst::publish
