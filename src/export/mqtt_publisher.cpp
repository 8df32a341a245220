#include "export/mqtt_publisher.h"

#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>

#include "common/error.h"
#include "common/file_check.h"

namespace torchinfer {
namespace {

// libmosquitto keeps no per-process state worth freeing, and another user
// in the process may still need it: initialise once, never clean up.
void init_library() {
  static std::once_flag once;
  std::call_once(once, [] { mosquitto_lib_init(); });
}

// Unique across machines (host name) and processes (pid) and elements (n).
std::string generated_client_id() {
  static std::atomic<unsigned> counter{0};
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "host");
  return "torchinfer-" + std::string(host) + "-" + std::to_string(getpid()) + "-" +
         std::to_string(counter++);
}

// Non-blocking and regular files only: a FIFO named as a TLS file would
// otherwise hang the element's start.
void check_readable(const std::string& path, const char* what) {
  if (path.empty()) return;
  FileDescriptor fd(open_regular_file(path, what));
}

std::string describe(int rc, int saved_errno) {
  if (rc == MOSQ_ERR_ERRNO) return std::strerror(saved_errno);
  // v5: a DISCONNECT from the broker passes its reason code (0x80 and up).
  if (rc >= 0x80) return mosquitto_reason_string(rc);
  return mosquitto_strerror(rc);
}

// Handed to libmosquitto unconfirmed at most; beyond it messages wait in the
// bounded queue, so a broker that stops reading cannot grow memory forever.
constexpr std::size_t kMaxInFlight = 1000;
constexpr int kLoopTimeoutMs = 100;  // also bounds how long stop() waits for the thread

// A broker closes the older connection when a client with the same id
// connects; two such clients take turns, each connection living about one
// reconnect delay. Where the broker does not say so (MQTT 3.1.1; and with
// mosquitto 2.0.11 the older v5 client saw a plain lost connection, no 0x8E)
// only this pattern shows it.
constexpr auto kShortLived = std::chrono::seconds(10);
constexpr int kShortLivedInARow = 3;

}  // namespace

std::string mqtt_topic_problem(const std::string& topic) {
  if (topic.empty()) return "the topic is empty";
  if (topic.size() > 65535) return "the topic is longer than 65535 bytes";
  if (mosquitto_validate_utf8(topic.c_str(), static_cast<int>(topic.size())) != MOSQ_ERR_SUCCESS)
    return "the topic is not valid UTF-8";
  if (mosquitto_pub_topic_check(topic.c_str()) != MOSQ_ERR_SUCCESS)
    return "wildcards ('+', '#') are not allowed in a topic to publish on";
  return {};
}

void validate_mqtt_options(const MqttOptions& o) {
  auto bad = [](const std::string& m) { throw Error(ErrorKind::kConfigInvalid, m); };
  if (o.host.empty()) bad("the broker host is empty");
  if (o.port < 1 || o.port > 65535) bad("port " + std::to_string(o.port) + " is not 1..65535");
  if (o.keepalive_s < 5 || o.keepalive_s > 65535)
    bad("keepalive " + std::to_string(o.keepalive_s) + " s is not 5..65535");
  if (o.qos < 0 || o.qos > 2) bad("qos " + std::to_string(o.qos) + " is not 0, 1 or 2");
  if (o.reconnect_delay_min_s < 1) bad("reconnect-delay-min must be at least 1 s");
  if (o.reconnect_delay_max_s < o.reconnect_delay_min_s)
    bad("reconnect-delay-max (" + std::to_string(o.reconnect_delay_max_s) +
        " s) is below reconnect-delay-min (" + std::to_string(o.reconnect_delay_min_s) + " s)");
  if (o.flush_timeout_ms < 0) bad("flush-timeout must not be negative");
  if (o.client_id.size() > 65535 ||
      mosquitto_validate_utf8(o.client_id.c_str(), static_cast<int>(o.client_id.size())) !=
          MOSQ_ERR_SUCCESS)
    bad("the client id is not valid UTF-8 of at most 65535 bytes");
  if (!o.password.empty() && o.username.empty()) bad("a password needs a username");
  if (o.tls_cert_file.empty() != o.tls_key_file.empty())
    bad("tls-cert-file and tls-key-file must be set together");
  if (!o.tls_cert_file.empty() && o.tls_ca_file.empty())
    bad("a client certificate needs tls-ca-file (TLS is on only when tls-ca-file is set)");
  check_readable(o.tls_ca_file, "TLS CA file");
  check_readable(o.tls_cert_file, "TLS certificate file");
  check_readable(o.tls_key_file, "TLS key file");
}

MqttPublisher::MqttPublisher(MqttOptions options, MqttEventHandler on_event)
    : options_(std::move(options)), on_event_(std::move(on_event)) {
  validate_mqtt_options(options_);
  if (options_.client_id.empty()) options_.client_id = generated_client_id();
  init_library();
  mosq_ = mosquitto_new(options_.client_id.c_str(), true, this);
  if (!mosq_)
    throw Error(ErrorKind::kSetupFailed,
                std::string("cannot create an MQTT client: ") + std::strerror(errno));
  try {
    // Published from the caller's thread while run() drives the socket.
    mosquitto_threaded_set(mosq_, true);
    mosquitto_int_option(
        mosq_, MOSQ_OPT_PROTOCOL_VERSION,
        options_.protocol == MqttProtocol::kV5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311);
    mosquitto_connect_v5_callback_set(
        mosq_, [](mosquitto*, void* self, int rc, int, const mosquitto_property* props) {
          static_cast<MqttPublisher*>(self)->on_connect(rc, props);
        });
    mosquitto_disconnect_callback_set(mosq_, [](mosquitto*, void* self, int rc) {
      static_cast<MqttPublisher*>(self)->on_disconnect(rc);
    });
    mosquitto_publish_callback_set(mosq_, [](mosquitto*, void* self, int mid) {
      static_cast<MqttPublisher*>(self)->on_publish(mid);
    });
    if (!options_.username.empty()) {
      const int rc = mosquitto_username_pw_set(
          mosq_, options_.username.c_str(),
          options_.password.empty() ? nullptr : options_.password.c_str());
      if (rc != MOSQ_ERR_SUCCESS)
        throw Error(ErrorKind::kConfigInvalid,
                    std::string("cannot use the MQTT credentials: ") + mosquitto_strerror(rc));
    }
    if (!options_.tls_ca_file.empty()) {
      auto opt = [](const std::string& s) { return s.empty() ? nullptr : s.c_str(); };
      const int rc =
          mosquitto_tls_set(mosq_, options_.tls_ca_file.c_str(), nullptr,
                            opt(options_.tls_cert_file), opt(options_.tls_key_file), nullptr);
      if (rc != MOSQ_ERR_SUCCESS)
        throw Error(ErrorKind::kConfigInvalid,
                    std::string("cannot set up TLS: ") + mosquitto_strerror(rc));
    }
    thread_ = std::thread(&MqttPublisher::run, this);
  } catch (...) {
    mosquitto_destroy(mosq_);
    mosq_ = nullptr;
    throw;
  }
}

MqttPublisher::~MqttPublisher() {
  stop();
  if (mosq_) mosquitto_destroy(mosq_);
}

void MqttPublisher::emit(MqttEvent e, const std::string& detail) {
  if (!on_event_) return;
  try {
    on_event_(e, detail);
  } catch (...) {
    // Runs inside libmosquitto's callbacks: nothing may escape into C.
  }
}

void MqttPublisher::run() {
  int delay_s = options_.reconnect_delay_min_s;
  bool first = true, have_socket = false;
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(lock_);
      if (stopping_) break;
      if (!have_socket && !first) {
        if (cv_.wait_for(lk, std::chrono::seconds(delay_s), [this] { return stopping_; })) break;
        delay_s = std::min(delay_s * 2, options_.reconnect_delay_max_s);
      }
      if (connected_) delay_s = options_.reconnect_delay_min_s;
    }
    if (!have_socket) {
      {
        // Waits for a publish() in progress; later ones see no connection
        // and queue, so nothing reaches libmosquitto between here and the
        // reconnect (which may block in DNS: not under send_lock_).
        std::lock_guard<std::mutex> send(send_lock_);
        lose_qos0_in_flight();
      }
      const int rc = first ? mosquitto_connect_async(mosq_, options_.host.c_str(), options_.port,
                                                     options_.keepalive_s)
                           : mosquitto_reconnect_async(mosq_);
      const int err = errno;
      first = false;
      if (rc != MOSQ_ERR_SUCCESS) {
        emit(MqttEvent::kConnectFailed, describe(rc, err));
        continue;
      }
      have_socket = true;
    }
    // Sends, receives acknowledgements, keeps alive; callbacks run here.
    if (mosquitto_loop(mosq_, kLoopTimeoutMs, 1) != MOSQ_ERR_SUCCESS) {
      have_socket = false;
      std::lock_guard<std::mutex> lk(lock_);
      connected_ = false;  // lost without on_disconnect (not expected, but keep state true)
    }
  }
  if (have_socket) {
    // A clean DISCONNECT, so the broker does not log a lost client.
    mosquitto_disconnect(mosq_);
    for (int i = 0; i < 10 && mosquitto_loop(mosq_, 10, 1) == MOSQ_ERR_SUCCESS; ++i) {
    }
  }
}

void MqttPublisher::on_connect(int rc, const mosquitto_property* props) {
  std::uint32_t max_packet = 0;
  if (props)
    mosquitto_property_read_int32(props, MQTT_PROP_MAXIMUM_PACKET_SIZE, &max_packet, false);
  if (rc != 0) {
    {
      std::lock_guard<std::mutex> lk(lock_);
      refused_ = true;
    }
    // v5 refusals are reason codes (0x80 and up), not 3.1.1 CONNACK codes.
    emit(MqttEvent::kConnectFailed,
         rc >= 0x80 ? std::string("Connection Refused: ") + mosquitto_reason_string(rc)
                    : std::string(mosquitto_connack_string(rc)));
    return;
  }
  {
    std::lock_guard<std::mutex> lk(lock_);
    connected_ = true;
    connected_at_ = std::chrono::steady_clock::now();
    broker_max_packet_ = max_packet;
    if (ever_connected_) counts_.reconnects++;
    ever_connected_ = true;
    cv_.notify_all();
  }
  emit(MqttEvent::kConnected, options_.host + ":" + std::to_string(options_.port));
  std::lock_guard<std::mutex> send(send_lock_);
  drain_queue();
}

void MqttPublisher::on_disconnect(int rc) {
  const int err = errno;
  bool was_connected, refused, stopping;
  int short_lived = 0;
  {
    std::lock_guard<std::mutex> lk(lock_);
    if (connected_ && !stopping_) {
      const bool brief = std::chrono::steady_clock::now() - connected_at_ < kShortLived;
      short_lived_ = brief ? short_lived_ + 1 : 0;
      short_lived = short_lived_;
    }
    was_connected = connected_;
    refused = refused_;
    stopping = stopping_;
    connected_ = false;
    refused_ = false;
    cv_.notify_all();
  }
  if (stopping) return;
  const std::string why = rc == 0 ? "disconnected" : describe(rc, err);
  if (was_connected && rc == MQTT_RC_SESSION_TAKEN_OVER)
    emit(MqttEvent::kClientIdConflict,
         "the broker says another client connected with the same client id '" + options_.client_id +
             "' (session taken over)");
  else if (was_connected && short_lived >= kShortLivedInARow)
    emit(MqttEvent::kClientIdConflict,
         "the broker closed the connection " + std::to_string(short_lived) +
             " times in a row within seconds of accepting it (" + why +
             "); another client is probably using the same client id '" + options_.client_id + "'");
  else if (was_connected)
    emit(MqttEvent::kConnectionLost, why);
  else if (!refused)  // a refusal was reported by on_connect with the broker's reason
    emit(MqttEvent::kConnectFailed, why);
}

void MqttPublisher::on_publish(int mid) {
  std::lock_guard<std::mutex> lk(lock_);
  if (in_flight_.erase(mid))
    counts_.published++;
  else
    early_acks_.insert(mid);
  cv_.notify_all();
}

// libmosquitto throws away unsent QoS 0 packets when it reconnects (QoS 1/2
// messages it keeps and sends again), so those are lost: count them now.
void MqttPublisher::lose_qos0_in_flight() {
  std::lock_guard<std::mutex> lk(lock_);
  for (auto it = in_flight_.begin(); it != in_flight_.end();) {
    if (it->second == 0) {
      counts_.failed++;
      it = in_flight_.erase(it);
    } else {
      ++it;
    }
  }
}

bool MqttPublisher::send_locked(const Message& m) {
  int mid = 0;
  const int rc = mosquitto_publish(mosq_, &mid, m.topic.c_str(), static_cast<int>(m.payload.size()),
                                   m.payload.data(), options_.qos, options_.retain);
  // QoS 1/2: libmosquitto has queued the message even without a connection
  // and sends it when it has one.
  const bool held = rc == MOSQ_ERR_SUCCESS || (rc == MOSQ_ERR_NO_CONN && options_.qos > 0);
  if (rc == MOSQ_ERR_NO_CONN && !held) return false;
  std::uint32_t max_packet;
  {
    std::lock_guard<std::mutex> lk(lock_);
    if (held) {
      if (early_acks_.erase(mid))
        counts_.published++;
      else
        in_flight_[mid] = options_.qos;
      return true;
    }
    counts_.failed++;
    max_packet = broker_max_packet_;
  }
  if (rc == MOSQ_ERR_OVERSIZE_PACKET && max_packet > 0)
    emit(MqttEvent::kPublishFailed,
         "message " + std::to_string(m.number) + " of " + std::to_string(m.payload.size()) +
             " bytes exceeds the broker's maximum packet size of " + std::to_string(max_packet) +
             " bytes (topic and headers included); it was not sent");
  else
    emit(MqttEvent::kPublishFailed, "message " + std::to_string(m.number) + " of " +
                                        std::to_string(m.payload.size()) +
                                        " bytes was refused: " + mosquitto_strerror(rc));
  return true;
}

void MqttPublisher::drain_queue() {
  while (!queue_.empty()) {
    {
      std::lock_guard<std::mutex> lk(lock_);
      if (!connected_ || in_flight_.size() >= kMaxInFlight) return;
    }
    if (!send_locked(queue_.front())) return;
    queue_.pop_front();
    std::lock_guard<std::mutex> lk(lock_);
    queued_ = queue_.size();
  }
}

void MqttPublisher::publish(const std::string& topic, const std::string& payload) {
  const bool too_large =
      options_.max_message_size > 0 && payload.size() > options_.max_message_size;
  std::lock_guard<std::mutex> send(send_lock_);
  bool direct;
  std::uint64_t number;
  {
    std::lock_guard<std::mutex> lk(lock_);
    number = ++numbered_;
    if (stopped_) {
      counts_.dropped++;
      return;
    }
    if (too_large) counts_.failed++;
    direct = connected_ && in_flight_.size() < kMaxInFlight;
  }
  if (too_large) {
    emit(MqttEvent::kPublishFailed,
         "message " + std::to_string(number) + " of " + std::to_string(payload.size()) +
             " bytes exceeds max-message-size (" + std::to_string(options_.max_message_size) +
             " bytes); it was not sent");
    return;
  }
  if (direct) drain_queue();
  Message m{topic, payload, number};
  if (direct && queue_.empty() && send_locked(m)) return;
  std::lock_guard<std::mutex> lk(lock_);
  if (options_.max_queued == 0) {
    counts_.dropped++;
    return;
  }
  if (queue_.size() >= options_.max_queued) {
    queue_.pop_front();
    counts_.dropped++;
  }
  queue_.push_back(std::move(m));
  queued_ = queue_.size();
}

void MqttPublisher::flush() {
  {
    std::lock_guard<std::mutex> lk(lock_);
    if (stopped_ || stopping_) return;
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.flush_timeout_ms);
  for (;;) {
    {
      std::lock_guard<std::mutex> send(send_lock_);
      drain_queue();
    }
    std::unique_lock<std::mutex> lk(lock_);
    auto done = [this] { return !connected_ || (in_flight_.empty() && queued_ == 0); };
    const auto until = std::min(
        deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(kLoopTimeoutMs));
    cv_.wait_until(lk, until, done);
    if (done() || std::chrono::steady_clock::now() >= deadline) return;
  }
}

void MqttPublisher::stop() {
  {
    std::lock_guard<std::mutex> lk(lock_);
    if (stopped_ || stopping_) return;
  }
  flush();
  {
    std::lock_guard<std::mutex> lk(lock_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> send(send_lock_);
  std::lock_guard<std::mutex> lk(lock_);
  counts_.failed += in_flight_.size();
  counts_.dropped += queue_.size();
  in_flight_.clear();
  early_acks_.clear();
  queue_.clear();
  queued_ = 0;
  connected_ = false;
  stopped_ = true;
}

MqttCounters MqttPublisher::counters() const {
  std::lock_guard<std::mutex> lk(lock_);
  MqttCounters c = counts_;
  c.connected = connected_;
  c.queued = queued_;
  c.in_flight = in_flight_.size();
  return c;
}

}  // namespace torchinfer
