// MqttPublisher against a real mosquitto broker: order, counts, queueing
// while the broker is down, option checks.
#include <gtest/gtest.h>

#include <chrono>
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
    EXPECT_EQ(c.failed, 7u);
    EXPECT_EQ(c.published, 0u);
    ASSERT_TRUE(first.start());  // same port and folder: the saved session is back
    ASSERT_TRUE(wait_connected(p));
    p.stop();
    c = p.counters();
    EXPECT_EQ(c.published, 3u);
    EXPECT_EQ(c.failed, 7u);
    EXPECT_EQ(c.reconnects, 0u);  // the first connection, late
    ASSERT_FALSE(failures.empty());
    EXPECT_NE(failures[0].find("refused"), std::string::npos) << failures[0];
  }
}

TEST(MqttPublisher, StopWhileBrokerDownCountsEverythingFailedAndReturnsAtOnce) {
  MqttOptions o = options_for(free_port(), 1);
  o.flush_timeout_ms = 60000;  // never waited for: there is no connection
  MqttPublisher p(o, nullptr);
  for (int i = 0; i < 5; ++i) p.publish("t/x", "m");
  p.stop();
  const MqttCounters c = p.counters();
  EXPECT_EQ(c.failed, 5u);
  EXPECT_EQ(c.published, 0u);
  EXPECT_EQ(c.queued, 0u);
  p.publish("t/x", "after stop");
  EXPECT_EQ(p.counters().failed, 6u);
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
