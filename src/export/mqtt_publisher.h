// Publishes messages to an MQTT broker with libmosquitto without ever
// blocking the caller on the network: a thread of its own connects, retries
// with exponential back-off and sends; publish() only hands a message over
// or queues it (bounded) while there is no connection.
//
// Accounting: every message given to publish() ends up counted exactly once,
// as `published` (QoS 0: written to the broker's socket; QoS 1/2: acknowledged
// by the broker), `failed` (handed over but not delivered: too large,
// rejected by libmosquitto, lost with a QoS 0 connection, or still
// unacknowledged when stop() gives up) or `dropped` (never sent: pushed out
// of the full queue, still queued at stop, or given after stop), except those
// still in flight or queued while running.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

struct mosquitto;
struct mqtt5__property;
typedef struct mqtt5__property mosquitto_property;

namespace torchinfer {

// Values are the protocol levels MQTT puts in CONNECT.
enum class MqttProtocol { kV311 = 4, kV5 = 5 };

struct MqttOptions {
  std::string host = "127.0.0.1";
  int port = 1883;
  std::string client_id;  // empty: a unique one is generated
  std::string username, password;
  std::string tls_ca_file, tls_cert_file, tls_key_file;  // TLS on when tls_ca_file is set
  int keepalive_s = 60;
  int qos = 0;
  bool retain = false;
  std::size_t max_queued = 1000;  // messages held while disconnected; oldest dropped beyond
  int reconnect_delay_min_s = 1, reconnect_delay_max_s = 30;
  int flush_timeout_ms = 1000;  // how long stop() waits for in-flight messages when connected
  // v5: the broker announces its maximum packet size, so a message too large
  // for it is refused here, named, instead of the broker closing the connection.
  MqttProtocol protocol = MqttProtocol::kV5;
  std::size_t max_message_size = 0;  // payload bytes; larger messages are failed; 0: no limit
};

struct MqttCounters {
  std::uint64_t published = 0;
  std::uint64_t failed = 0;
  std::uint64_t dropped = 0;
  std::uint64_t reconnects = 0;  // connections re-established after one was lost
  std::size_t queued = 0;        // waiting for a connection
  std::size_t in_flight = 0;     // handed to libmosquitto, not yet confirmed
  bool connected = false;
};

enum class MqttEvent {
  kConnected,
  kConnectFailed,   // detail: why (refused by the broker, socket error)
  kConnectionLost,  // detail: why
  kPublishFailed,   // a message was refused (too large, rejected by libmosquitto); detail: why
  // Another client with the same id keeps taking the session over (MQTT v5
  // reason 0x8E, or connections closed by the broker right after connecting,
  // repeatedly); sent instead of kConnectionLost. detail: what was seen.
  kClientIdConflict,
};
// Called from the publisher's network thread or from inside publish(); must
// not call back into the publisher.
using MqttEventHandler = std::function<void(MqttEvent, const std::string& detail)>;

// Checks options a broker cannot judge (topic syntax, ranges, files);
// throws Error (kConfigInvalid, or kNotFound for a missing TLS file).
void validate_mqtt_options(const MqttOptions& o);
// Empty string when `topic` is a valid topic to publish on, else why not.
std::string mqtt_topic_problem(const std::string& topic);

class MqttPublisher {
 public:
  // Validates, sets up TLS/credentials and starts the network thread; a
  // broker that is down is not an error (it retries). Throws Error.
  MqttPublisher(MqttOptions options, MqttEventHandler on_event);
  ~MqttPublisher();
  MqttPublisher(const MqttPublisher&) = delete;
  MqttPublisher& operator=(const MqttPublisher&) = delete;

  void publish(const std::string& topic, const std::string& payload);
  // Waits up to flush_timeout_ms for queued and in-flight messages while
  // connected (not at all when disconnected); keeps running.
  void flush();
  // flush(), disconnects, joins the thread and counts what was not
  // delivered (queued: dropped, in flight: failed). Idempotent.
  void stop();
  MqttCounters counters() const;
  const std::string& client_id() const { return options_.client_id; }

 private:
  struct Message {
    std::string topic, payload;
    std::uint64_t number = 0;  // 1-based, in the order given to publish()
  };
  void run();
  bool send_locked(const Message& m);  // under send_lock_; false: no connection
  void drain_queue();
  void lose_qos0_in_flight();
  void on_connect(int rc, const mosquitto_property* props);
  void on_disconnect(int rc);
  void on_publish(int mid);
  void emit(MqttEvent e, const std::string& detail);

  MqttOptions options_;
  MqttEventHandler on_event_;
  mosquitto* mosq_ = nullptr;
  std::thread thread_;

  // Serialises every hand-over to libmosquitto, so messages leave in order
  // whether they come from publish() or from draining the queue.
  std::mutex send_lock_;
  std::deque<Message> queue_;  // under send_lock_

  mutable std::mutex lock_;  // state below; never held while calling libmosquitto
  std::condition_variable cv_;
  bool connected_ = false, ever_connected_ = false, stopping_ = false, stopped_ = false;
  bool refused_ = false;  // the broker refused the connection (reported by on_connect)
  std::unordered_map<int, int> in_flight_;  // mid -> qos
  std::unordered_set<int> early_acks_;      // acks that beat publish() returning the mid
  std::size_t queued_ = 0;                  // mirror of queue_.size() for counters()
  std::uint64_t numbered_ = 0;              // messages given to publish()
  std::uint32_t broker_max_packet_ = 0;     // announced in CONNACK (v5); 0: none
  std::chrono::steady_clock::time_point connected_at_{};
  int short_lived_ = 0;  // connections in a row the broker closed soon after connecting
  MqttCounters counts_;
};

}  // namespace torchinfer
