// The torchpublish element's settings and properties. Each property is
// described once, in torchpublish-properties.cpp (see property-table.h).
#pragma once

#include <gst/gst.h>

#include <string>

#include "export/mqtt_publisher.h"
#include "property-table.h"

namespace torchinfer::gst::publish {

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
  PROP_MM_PER_PIXEL,
};

enum Mode { PUBLISH_MODE_FRAME, PUBLISH_MODE_DETECTIONS, PUBLISH_MODE_EVENTS };

// The settings: stats-interval and mm-per-pixel apply from the next frame,
// the others from the next start.
struct Settings {
  MqttOptions mqtt;
  std::string topic;
  Mode mode = PUBLISH_MODE_FRAME;
  guint stats_interval_ms = 0;
  double mm_per_pixel = 0;  // from the next frame; 0: not calibrated
};

// What the read-only properties (and client-id) read: the running
// publisher, else the counters its last run ended with.
struct Status {
  const MqttPublisher* running = nullptr;  // null when stopped
  MqttCounters last;                       // of the previous run, readable after stop

  MqttCounters counters() const { return running ? running->counters() : last; }
};

const PropertyTable<Settings, Status>& properties();

// Also marks the enum types as plugin API (documented with the element).
void install_properties(GObjectClass* klass);

}  // namespace torchinfer::gst::publish
