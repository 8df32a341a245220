// torchpublish's properties as a user sees them: the fixed list of names,
// types and access, defaults, round trips, what may change while running, and
// every refusal keeping the previous value.
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "element_helpers.h"
#include "mqtt_broker.h"
#include "property_checks.h"

using namespace torchinfer::test;

namespace {

// 'r': writable in NULL/READY only; 'p': writable while PLAYING; 'o': read-only.
// In id order, the order GObject lists them in.
const ExpectedProperty kExpected[] = {
    {"host", "gchararray", 'r'},
    {"port", "gint", 'r'},
    {"topic", "gchararray", 'r'},
    {"qos", "gint", 'r'},
    {"retain", "gboolean", 'r'},
    {"client-id", "gchararray", 'r'},
    {"username", "gchararray", 'r'},
    {"password", "gchararray", 'r'},
    {"tls-ca-file", "gchararray", 'r'},
    {"tls-cert-file", "gchararray", 'r'},
    {"tls-key-file", "gchararray", 'r'},
    {"keepalive", "gint", 'r'},
    {"mode", "GstTorchPublishMode", 'r'},
    {"max-queued", "guint", 'r'},
    {"reconnect-delay-min", "gint", 'r'},
    {"reconnect-delay-max", "gint", 'r'},
    {"flush-timeout", "gint", 'r'},
    {"published", "guint64", 'o'},
    {"failed", "guint64", 'o'},
    {"queued", "guint", 'o'},
    {"connected", "gboolean", 'o'},
    {"reconnects", "guint64", 'o'},
    {"dropped", "guint64", 'o'},
    {"stats-interval", "guint", 'p'},
    {"protocol-version", "GstTorchPublishProtocol", 'r'},
    {"max-message-size", "guint", 'r'},
    {"mm-per-pixel", "gdouble", 'p'},
};

// A valid value, different from the default, for each string property.
const std::map<std::string, std::string> kStringValues = {
    {"host", "broker.example"},
    {"topic", "line1/cam0"},
    {"client-id", "cam-7"},
    {"username", "operator"},
    {"password", "secret"},
    {"tls-ca-file", "/etc/mqtt/ca.pem"},
    {"tls-cert-file", "/etc/mqtt/client.pem"},
    {"tls-key-file", "/etc/mqtt/client.key"},
};

GstElement* make() {
  return gst_element_factory_make("torchpublish", nullptr);
}

std::string read(GstElement* e, const char* name) {
  return torchinfer::test::read(e, g_object_class_find_property(G_OBJECT_GET_CLASS(e), name));
}

// Started (PLAYING) against a port nothing listens on: the publisher runs
// and keeps retrying.
GstHarness* running_harness() {
  GstElement* e = make();
  g_object_set(e, "topic", "running", "port", free_port(), "reconnect-delay-max", 1,
               "flush-timeout", 0, nullptr);
  GstHarness* h = gst_harness_new_with_element(e, "sink", "src");
  gst_object_unref(e);
  return h;
}

}  // namespace

TEST(TorchPublishProperties, NamesTypesAndAccessAreTheFixedList) {
  GstElement* e = make();
  ASSERT_NE(e, nullptr);
  expect_property_list(e, kExpected, std::size(kExpected));
  gst_object_unref(e);
}

TEST(TorchPublishProperties, FreshElementReadsTheParamSpecDefaults) {
  GstElement* e = make();
  EXPECT_EQ(expect_defaults(e), 27);
  EXPECT_EQ(read(e, "host"), "\"127.0.0.1\"");
  EXPECT_EQ(read(e, "port"), "1883");
  EXPECT_EQ(read(e, "max-queued"), "1000");
  gint protocol = 0;
  g_object_get(e, "protocol-version", &protocol, nullptr);
  EXPECT_EQ(protocol, 5);
  gst_object_unref(e);
}

TEST(TorchPublishProperties, EveryWritablePropertyRoundTrips) {
  GstElement* e = make();
  WarningCatcher w;
  const int written = round_trip_writable(e, kStringValues);
  EXPECT_EQ(written, 21);
  EXPECT_TRUE(w.messages().empty()) << w.messages().front();
  gst_object_unref(e);
}

TEST(TorchPublishProperties, EmptyStringsReadBackAsUnset) {
  GstElement* e = make();
  int cleared = 0;
  for (const auto& [name, value] : kStringValues) {
    if (name == "host" || name == "topic") continue;  // refused when empty
    g_object_set(e, name.c_str(), value.c_str(), nullptr);
    g_object_set(e, name.c_str(), "", nullptr);
    EXPECT_EQ(read(e, name.c_str()), "NULL") << name;
    g_object_set(e, name.c_str(), value.c_str(), nullptr);
    g_object_set(e, name.c_str(), nullptr, nullptr);
    EXPECT_EQ(read(e, name.c_str()), "NULL") << name;
    ++cleared;
  }
  EXPECT_EQ(cleared, 6);
  gst_object_unref(e);
}

TEST(TorchPublishProperties, StatsIntervalChangesWhileRunning) {
  GstHarness* h = running_harness();
  ASSERT_NE(h, nullptr);
  WarningCatcher w;
  g_object_set(h->element, "stats-interval", 250u, nullptr);
  EXPECT_TRUE(w.messages().empty());
  EXPECT_EQ(read(h->element, "stats-interval"), "250");
  gst_harness_teardown(h);
}

// ---- negative -------------------------------------------------------------

TEST(TorchPublishPropertiesErrors, ReadyOnlyPropertiesRefusedWhileRunning) {
  GstHarness* h = running_harness();
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(expect_ready_only_refused(h->element, kStringValues), 19);
  gst_harness_teardown(h);
}

TEST(TorchPublishPropertiesErrors, InvalidClientIdKeepsThePreviousValue) {
  GstElement* e = make();
  g_object_set(e, "client-id", "cam-1", nullptr);
  const std::string too_long(65536, 'a');
  for (const std::string& bad : {too_long, std::string("cam\xff")}) {
    WarningCatcher w;
    g_object_set(e, "client-id", bad.c_str(), nullptr);
    ASSERT_EQ(w.messages().size(), 1u) << bad.size();
    EXPECT_NE(w.messages()[0].find("'client-id' must be UTF-8 of at most 65535 bytes"),
              std::string::npos)
        << w.messages()[0];
    EXPECT_EQ(read(e, "client-id"), "\"cam-1\"") << bad.size();
  }
  const std::string longest(65535, 'b');
  WarningCatcher w;
  g_object_set(e, "client-id", longest.c_str(), nullptr);
  EXPECT_TRUE(w.messages().empty());
  gchar* id = nullptr;
  g_object_get(e, "client-id", &id, nullptr);
  EXPECT_EQ(std::string(id ? id : ""), longest);
  g_free(id);
  gst_object_unref(e);
}

TEST(TorchPublishPropertiesErrors, RejectedHostAndTopicNameTheKeptValue) {
  GstElement* e = make();
  g_object_set(e, "host", "broker.example", "topic", "line1/cam0", nullptr);
  {
    WarningCatcher w;
    g_object_set(e, "host", nullptr, nullptr);
    ASSERT_EQ(w.messages().size(), 1u);
    EXPECT_NE(w.messages()[0].find("'host' must not be empty; keeping 'broker.example'"),
              std::string::npos)
        << w.messages()[0];
  }
  {
    WarningCatcher w;
    g_object_set(e, "topic", "line1/+", nullptr);
    ASSERT_EQ(w.messages().size(), 1u);
    EXPECT_NE(w.messages()[0].find("invalid topic 'line1/+'"), std::string::npos)
        << w.messages()[0];
    EXPECT_NE(w.messages()[0].find("keeping 'line1/cam0'"), std::string::npos) << w.messages()[0];
  }
  EXPECT_EQ(read(e, "host"), "\"broker.example\"");
  EXPECT_EQ(read(e, "topic"), "\"line1/cam0\"");
  gst_object_unref(e);
}

TEST(TorchPublishPropertiesErrors, UnknownPropertyIdWarns) {
  GstElement* e = make();
  const std::vector<std::string> set = unknown_id_warnings(e, true, false);
  EXPECT_EQ(set.size(), 1u);
  if (!set.empty()) {
    EXPECT_NE(set[0].find("999"), std::string::npos) << set[0];
    EXPECT_NE(set[0].find("no-such-property"), std::string::npos) << set[0];
  }
  const std::vector<std::string> get = unknown_id_warnings(e, false, true);
  EXPECT_EQ(get.size(), 1u);
  if (!get.empty()) EXPECT_NE(get[0].find("999"), std::string::npos) << get[0];
  gst_object_unref(e);
}
