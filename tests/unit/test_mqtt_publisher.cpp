// MqttPublisher against a real mosquitto broker: order, counts, queueing
// while the broker is down, option checks.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/error.h"
#include "export/mqtt_publisher.h"
#include "mqtt_broker.h"

using namespace torchinfer;
using namespace torchinfer::test;

namespace {

MqttOptions options_for(int port, int qos = 0) {
  MqttOptions o;
  o.port = port;
  o.qos = qos;
  return o;
}

// Waits (bounded) until the publisher says it is connected.
bool wait_connected(const MqttPublisher& p) {
  for (int i = 0; i < 400; ++i) {
    if (p.counters().connected) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

ErrorKind kind_of(const MqttOptions& o) {
  try {
    validate_mqtt_options(o);
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << "options were accepted";
  return ErrorKind::kRuntime;
}

}  // namespace

class MqttPublisherQos : public testing::TestWithParam<int> {};

TEST_P(MqttPublisherQos, DeliversEveryMessageInOrder) {
  Broker broker;
  ASSERT_TRUE(broker.start());
  Subscriber sub(broker.port(), "t/order");
  ASSERT_TRUE(sub.wait_subscribed());
  std::vector<MqttEvent> events;
  MqttPublisher p(options_for(broker.port(), GetParam()),
                  [&](MqttEvent e, const std::string&) { events.push_back(e); });
  ASSERT_TRUE(wait_connected(p));
  for (int i = 0; i < 200; ++i) p.publish("t/order", "m" + std::to_string(i));
  ASSERT_TRUE(sub.wait_for(200));
  p.stop();
  const auto got = sub.messages();
  ASSERT_EQ(got.size(), 200u);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(got[i], "m" + std::to_string(i));
  const MqttCounters c = p.counters();
  EXPECT_EQ(c.published, 200u);
  EXPECT_EQ(c.failed, 0u);
  EXPECT_EQ(c.reconnects, 0u);
  EXPECT_FALSE(c.connected);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0], MqttEvent::kConnected);
}

INSTANTIATE_TEST_SUITE_P(Qos, MqttPublisherQos, testing::Values(0, 1, 2));

TEST(MqttPublisher, QueuesWhileDownDropsOldestAndDeliversTheRestOnConnect) {
  // A persistent subscriber session on a persistent broker: it receives what
  // the publisher sends whenever that connects.
  const int port = free_port();
  SubscriberOptions so;
  so.client_id = "queue-test-sub";
  so.persistent = true;
  {
    Broker first({"", "", true}, port);
    ASSERT_TRUE(first.start());
    Subscriber sub(port, "t/q", so);
    ASSERT_TRUE(sub.wait_subscribed());
    sub.disconnect();
    MqttOptions o = options_for(port, 1);
    o.max_queued = 3;
    o.reconnect_delay_max_s = 1;
    std::vector<std::string> failures;
    first.stop();
    // Broker down: connect fails, messages queue, the oldest are dropped.
    MqttPublisher p(o, [&](MqttEvent e, const std::string& d) {
      if (e == MqttEvent::kConnectFailed) failures.push_back(d);
    });
    for (int i = 0; i < 10; ++i) p.publish("t/q", "m" + std::to_string(i));
    MqttCounters c = p.counters();
    EXPECT_FALSE(c.connected);
    EXPECT_EQ(c.queued, 3u);
    EXPECT_EQ(c.dropped, 7u);
    EXPECT_EQ(c.failed, 0u);
    EXPECT_EQ(c.published, 0u);
    ASSERT_TRUE(first.start());  // same port and folder: the saved session is back
    ASSERT_TRUE(wait_connected(p));
    p.stop();
    c = p.counters();
    EXPECT_EQ(c.published, 3u);
    EXPECT_EQ(c.dropped, 7u);
    EXPECT_EQ(c.failed, 0u);
    EXPECT_EQ(c.reconnects, 0u);  // the first connection, late
    ASSERT_FALSE(failures.empty());
    EXPECT_NE(failures[0].find("refused"), std::string::npos) << failures[0];
  }
}

TEST(MqttPublisher, StopWhileBrokerDownCountsEverythingDroppedAndReturnsAtOnce) {
  MqttOptions o = options_for(free_port(), 1);
  o.flush_timeout_ms = 60000;  // never waited for: there is no connection
  MqttPublisher p(o, nullptr);
  for (int i = 0; i < 5; ++i) p.publish("t/x", "m");
  p.stop();
  const MqttCounters c = p.counters();
  EXPECT_EQ(c.dropped, 5u);  // never sent: still queued
  EXPECT_EQ(c.failed, 0u);
  EXPECT_EQ(c.published, 0u);
  EXPECT_EQ(c.queued, 0u);
  p.publish("t/x", "after stop");
  EXPECT_EQ(p.counters().dropped, 6u);
  EXPECT_EQ(p.counters().failed, 0u);
}

namespace {

// Events from the publisher's thread, readable from the test's.
struct Events {
  std::mutex lock;
  std::condition_variable cv;
  std::vector<std::pair<MqttEvent, std::string>> seen;

  MqttEventHandler handler() {
    return [this](MqttEvent e, const std::string& d) {
      std::lock_guard<std::mutex> lk(lock);
      seen.emplace_back(e, d);
      cv.notify_all();
    };
  }
  std::vector<std::string> details(MqttEvent e) {
    std::lock_guard<std::mutex> lk(lock);
    std::vector<std::string> out;
    for (const auto& [k, d] : seen)
      if (k == e) out.push_back(d);
    return out;
  }
  // Waits (up to 60 s) for the first event of kind e.
  bool wait_for(MqttEvent e) {
    std::unique_lock<std::mutex> lk(lock);
    return cv.wait_for(lk, std::chrono::seconds(60), [&] {
      for (const auto& s : seen)
        if (s.first == e) return true;
      return false;
    });
  }
};

std::string numbered(int i, std::size_t size) {
  std::string s = "m" + std::to_string(i) + " ";
  s.resize(size, 'x');
  return s;
}

}  // namespace

// MQTT v5: the broker announces max_packet_size in CONNACK, so the one
// message over it is refused by name and the connection (and every other
// message) survives.
TEST(MqttPublisher, MessageOverTheBrokersMaxPacketSizeIsRefusedAndNamed) {
  Broker broker({"", "", false, 1024});
  ASSERT_TRUE(broker.start());
  Subscriber sub(broker.port(), "t/big");
  ASSERT_TRUE(sub.wait_subscribed());
  Events ev;
  MqttPublisher p(options_for(broker.port(), 1), ev.handler());
  ASSERT_TRUE(wait_connected(p));
  std::vector<std::string> expected;
  for (int i = 1; i <= 20; ++i) {
    const std::string m = numbered(i, i == 11 ? 2000 : 100);
    if (i != 11) expected.push_back(m);
    p.publish("t/big", m);
  }
  ASSERT_TRUE(sub.wait_for(19));
  p.stop();
  EXPECT_EQ(sub.messages(), expected);
  const MqttCounters c = p.counters();
  EXPECT_EQ(c.published, 19u);
  EXPECT_EQ(c.failed, 1u);
  EXPECT_EQ(c.dropped, 0u);
  EXPECT_EQ(c.reconnects, 0u);
  const auto failures = ev.details(MqttEvent::kPublishFailed);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_NE(failures[0].find("message 11 of 2000 bytes exceeds the broker's maximum packet size "
                             "of 1024 bytes"),
            std::string::npos)
      << failures[0];
  EXPECT_TRUE(ev.details(MqttEvent::kConnectionLost).empty()) << broker.log();
}

// MQTT 3.1.1 brokers announce no limit: max_message_size checks locally.
TEST(MqttPublisher, MaxMessageSizeRefusesLargerPayloadsBeforeSending) {
  Broker broker({"", "", false, 1024});
  ASSERT_TRUE(broker.start());
  Subscriber sub(broker.port(), "t/limit");
  ASSERT_TRUE(sub.wait_subscribed());
  Events ev;
  MqttOptions o = options_for(broker.port(), 1);
  o.protocol = MqttProtocol::kV311;
  o.max_message_size = 500;
  MqttPublisher p(o, ev.handler());
  ASSERT_TRUE(wait_connected(p));
  for (int i = 1; i <= 5; ++i) p.publish("t/limit", numbered(i, i == 3 ? 501 : 500));
  ASSERT_TRUE(sub.wait_for(4));
  p.stop();
  EXPECT_EQ(sub.messages().size(), 4u);
  const MqttCounters c = p.counters();
  EXPECT_EQ(c.published, 4u);
  EXPECT_EQ(c.failed, 1u);
  EXPECT_EQ(c.dropped, 0u);
  const auto failures = ev.details(MqttEvent::kPublishFailed);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_NE(failures[0].find("message 3 of 501 bytes exceeds max-message-size (500 bytes)"),
            std::string::npos)
      << failures[0];
}

// Two clients with one id: the broker closes the older connection each time
// the other connects. Both must say so, naming the id, not just reconnect.
TEST(MqttPublisher, SameClientIdTwiceIsReportedAsAConflict) {
  Broker broker;
  ASSERT_TRUE(broker.start());
  MqttOptions o = options_for(broker.port());
  o.client_id = "twin-camera";
  o.reconnect_delay_max_s = 1;
  Events a, b;
  MqttPublisher pa(o, a.handler());
  ASSERT_TRUE(wait_connected(pa));
  MqttPublisher pb(o, b.handler());
  ASSERT_TRUE(a.wait_for(MqttEvent::kClientIdConflict));
  ASSERT_TRUE(b.wait_for(MqttEvent::kClientIdConflict));
  pa.stop();
  pb.stop();
  for (Events* e : {&a, &b}) {
    const auto d = e->details(MqttEvent::kClientIdConflict);
    ASSERT_FALSE(d.empty());
    EXPECT_NE(d[0].find("same client id 'twin-camera'"), std::string::npos) << d[0];
    // Before the pattern is clear each loss is an ordinary lost connection.
    EXPECT_EQ(e->details(MqttEvent::kConnectionLost).size(), 2u);
  }
}

TEST(MqttPublisherOptions, RejectsBadValues) {
  MqttOptions o;
  o.host = "";
  EXPECT_EQ(kind_of(o), ErrorKind::kConfigInvalid);
  for (int port : {0, -1, 65536}) {
    o = MqttOptions();
    o.port = port;
    EXPECT_EQ(kind_of(o), ErrorKind::kConfigInvalid) << port;
  }
  for (int qos : {-1, 3}) {
    o = MqttOptions();
    o.qos = qos;
    EXPECT_EQ(kind_of(o), ErrorKind::kConfigInvalid) << qos;
  }
  o = MqttOptions();
  o.keepalive_s = 4;
  EXPECT_EQ(kind_of(o), ErrorKind::kConfigInvalid);
  o = MqttOptions();
  o.reconnect_delay_min_s = 0;
  EXPECT_EQ(kind_of(o), ErrorKind::kConfigInvalid);
  o = MqttOptions();
  o.reconnect_delay_min_s = 5;
  o.reconnect_delay_max_s = 4;
  EXPECT_EQ(kind_of(o), ErrorKind::kConfigInvalid);
  o = MqttOptions();
  o.password = "secret";
  EXPECT_EQ(kind_of(o), ErrorKind::kConfigInvalid);
  o = MqttOptions();
  o.client_id = "bad\xff";
  EXPECT_EQ(kind_of(o), ErrorKind::kConfigInvalid);
  o = MqttOptions();
  o.tls_ca_file = "/nonexistent/ca.pem";
  EXPECT_EQ(kind_of(o), ErrorKind::kNotFound);
  o = MqttOptions();
  o.tls_cert_file = "/nonexistent/c.pem";
  EXPECT_EQ(kind_of(o), ErrorKind::kConfigInvalid);  // without key and CA
  o = MqttOptions();
  o.flush_timeout_ms = -1;
  EXPECT_EQ(kind_of(o), ErrorKind::kConfigInvalid);
  EXPECT_THROW(MqttPublisher(o, nullptr), Error);
}

TEST(MqttPublisherOptions, TopicProblems) {
  EXPECT_EQ(mqtt_topic_problem("line1/cam0"), "");
  EXPECT_EQ(mqtt_topic_problem("/a//b/"), "");
  EXPECT_NE(mqtt_topic_problem(""), "");
  EXPECT_NE(mqtt_topic_problem("a/+/b"), "");
  EXPECT_NE(mqtt_topic_problem("a/#"), "");
  EXPECT_NE(mqtt_topic_problem("a\xff"), "");
  EXPECT_NE(mqtt_topic_problem(std::string(65536, 'a')), "");
}
