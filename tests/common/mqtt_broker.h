// A real mosquitto broker on 127.0.0.1 (a free port, a private config) and a
// libmosquitto subscriber, for the MQTT tests. No mocks: what the tests see
// is what a user's broker would see.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

struct mosquitto;
struct mosquitto_message;

namespace torchinfer::test {

// A port nothing listens on now (bound to 0 by the kernel, then released).
int free_port();

struct BrokerConfig {
  std::string username, password;  // set: anonymous clients are refused
  bool persistence = false;        // sessions and queued messages survive a restart
  int max_packet_size = 0;         // bytes; 0: mosquitto's default (no limit)
};

class Broker {
 public:
  explicit Broker(BrokerConfig config = {}, int port = 0);  // 0: a free port
  ~Broker();
  // Starts /usr/sbin/mosquitto and waits until it accepts connections.
  // False (with a test failure naming the log) when it does not.
  bool start();
  // SIGTERM (a clean shutdown that saves persistence) and waits for exit.
  void stop();
  int port() const { return port_; }
  std::string log() const;

 private:
  BrokerConfig config_;
  int port_;
  std::string dir_;
  pid_t pid_ = -1;
};

struct SubscriberOptions {
  std::string client_id;    // empty: random, clean session
  bool persistent = false;  // clean_session false (needs client_id): the broker queues for us
  int qos = 1;
  std::string username, password;
};

// Subscribes to `topic` and collects payloads in arrival order; reconnects
// by itself (libmosquitto's loop thread) if the broker restarts.
class Subscriber {
 public:
  Subscriber(int port, const std::string& topic, SubscriberOptions options = {});
  ~Subscriber();
  // Waits (up to 20 s) until the subscription is acknowledged.
  bool wait_subscribed();
  // Waits (up to 20 s) until at least n messages arrived.
  bool wait_for(std::size_t n);
  std::vector<std::string> messages();
  void disconnect();  // a clean disconnect; a persistent session stays on the broker

 private:
  static void on_connect(mosquitto*, void* self, int rc);
  static void on_subscribe(mosquitto*, void* self, int, int, const int*);
  static void on_message(mosquitto*, void* self, const mosquitto_message* m);

  std::string topic_;
  int qos_;
  mosquitto* mosq_ = nullptr;
  std::mutex lock_;
  std::condition_variable cv_;
  bool subscribed_ = false;
  std::vector<std::string> messages_;
};

}  // namespace torchinfer::test
