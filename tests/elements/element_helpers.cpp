#include "element_helpers.h"

#include <gtest/gtest.h>

#include <chrono>

#include "test_paths.h"

namespace torchinfer::test {

StartResult try_start(GstElement* element) {
  StartResult r;
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(element, bus);
  r.ret = gst_element_set_state(element, GST_STATE_PAUSED);
  if (r.ret == GST_STATE_CHANGE_ASYNC)
    r.ret = gst_element_get_state(element, nullptr, nullptr, 5 * GST_SECOND);
  while (GstMessage* msg = gst_bus_pop(bus)) {
    if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR && !r.error.set) {
      GError* err = nullptr;
      gchar* dbg = nullptr;
      gst_message_parse_error(msg, &err, &dbg);
      r.error = {true, err->domain, err->code, err->message, dbg ? dbg : ""};
      g_error_free(err);
      g_free(dbg);
    } else if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_WARNING) {
      GError* err = nullptr;
      gst_message_parse_warning(msg, &err, nullptr);
      r.warnings.push_back(err->message);
      g_error_free(err);
    }
    gst_message_unref(msg);
  }
  gst_element_set_state(element, GST_STATE_NULL);
  gst_element_set_bus(element, nullptr);
  gst_object_unref(bus);
  return r;
}

WarningCatcher::WarningCatcher(const char* domain) : domain_(domain ? domain : "") {
  id_ = g_log_set_handler(domain,
                          static_cast<GLogLevelFlags>(G_LOG_LEVEL_WARNING | G_LOG_LEVEL_CRITICAL),
                          &WarningCatcher::handler, this);
}

WarningCatcher::~WarningCatcher() {
  g_log_remove_handler(domain_.empty() ? nullptr : domain_.c_str(), id_);
}

void WarningCatcher::handler(const gchar*, GLogLevelFlags, const gchar* message, gpointer self) {
  static_cast<WarningCatcher*>(self)->messages_.push_back(message);
}

GstHarness* torchinfer_harness(const std::string& props, const std::string& caps,
                               Upstream upstream) {
  const std::string line = "torchinfer " + props;
  GError* err = nullptr;
  GstElement* e = gst_parse_launch(line.c_str(), &err);
  if (!e) {
    ADD_FAILURE() << "cannot create " << line << ": " << (err ? err->message : "");
    g_clear_error(&err);
    return nullptr;
  }
  GstHarness* h = gst_harness_new_with_element(e, "sink", "src");
  gst_object_unref(e);
  // Before the caps: torchinfer asks upstream whether it is live then.
  gst_harness_set_live(h, upstream == Upstream::kLive);
  gst_harness_set_src_caps_str(h, caps.c_str());
  return h;
}

GstVideoInfo info_of(const std::string& caps_str) {
  GstCaps* caps = gst_caps_from_string(caps_str.c_str());
  GstVideoInfo info;
  gst_video_info_init(&info);
  EXPECT_TRUE(caps && gst_video_info_from_caps(&info, caps)) << caps_str;
  if (caps) gst_caps_unref(caps);
  return info;
}

GstBuffer* make_video_buffer(const GstVideoInfo& info, unsigned seed) {
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  GstMapInfo map;
  gst_buffer_map(buf, &map, GST_MAP_WRITE);
  for (gsize i = 0; i < map.size; ++i)
    map.data[i] = static_cast<guint8>((i * 7 + seed * 31 + (i / 97) * 13) & 0xFF);
  gst_buffer_unmap(buf, &map);
  return buf;
}

std::string model(const std::string& name) {
  return model_path(name);
}

GstMessage* wait_element_message(GstBus* bus, const char* name) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    GstMessage* m = gst_bus_timed_pop_filtered(
        bus, GST_SECOND, static_cast<GstMessageType>(GST_MESSAGE_ELEMENT | GST_MESSAGE_WARNING));
    if (!m) continue;
    if ((GST_MESSAGE_TYPE(m) == GST_MESSAGE_ELEMENT &&
         gst_structure_has_name(gst_message_get_structure(m), name)) ||
        (GST_MESSAGE_TYPE(m) == GST_MESSAGE_WARNING && std::string(name) == "warning"))
      return m;
    gst_message_unref(m);
  }
  return nullptr;
}

FrameCounts counts_of(const GstStructure* stats) {
  auto get = [stats](const std::string& field) {
    guint64 v = 0;
    EXPECT_TRUE(gst_structure_get_uint64(stats, field.c_str(), &v)) << field;
    return static_cast<std::uint64_t>(v);
  };
  FrameCounts c;
  c.in = get("frames-in");
  c.inferred = get("frames-inferred");
  c.skipped = get("frames-skipped");
  c.dropped = get("frames-dropped");
  c.in_flight = get("frames-in-flight");
  c.in_flight_limit = get("frames-in-flight-limit");
  c.out = get("frames-out");
  for (std::size_t r = 0; r < kSkipReasons; ++r)
    c.skipped_by[r] = get(std::string("frames-skipped-") + to_string(static_cast<SkipReason>(r)));
  return c;
}

FrameCounts frame_counts(GstElement* element) {
  GstElement* infer = element;
  if (GST_IS_BIN(element)) {
    GstIterator* it = gst_bin_iterate_recurse(GST_BIN(element));
    GValue v = G_VALUE_INIT;
    infer = nullptr;
    while (!infer && gst_iterator_next(it, &v) == GST_ITERATOR_OK) {
      auto* e = GST_ELEMENT(g_value_get_object(&v));
      GstElementFactory* f = gst_element_get_factory(e);
      if (f && g_str_equal(GST_OBJECT_NAME(f), "torchinfer")) infer = e;
      g_value_reset(&v);
    }
    g_value_unset(&v);
    gst_iterator_free(it);
  }
  FrameCounts c;
  if (!infer) {
    ADD_FAILURE() << "no torchinfer element";
    return c;
  }
  GstStructure* st = nullptr;
  g_object_get(infer, "stats", &st, nullptr);
  if (!st) {
    ADD_FAILURE() << "torchinfer has no stats";
    return c;
  }
  c = counts_of(st);
  gst_structure_free(st);
  return c;
}

}  // namespace torchinfer::test
