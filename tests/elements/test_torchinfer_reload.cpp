// Hot reload with a shared model-instance-id: setting one sharer's `model`
// while PLAYING reloads the shared instance. Every sharer runs the new model,
// reads its file from `model` and posts "torchinfer-model-reloaded"; an
// element joining later must ask for the running file; a restart loads it.
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <string>

#include "element_helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"

using namespace torchinfer::test;

namespace {

const char* kGray = "video/x-raw,format=GRAY8,width=8,height=6,framerate=30/1";

// identity.pt takes RGB (3 channels), gray_identity.pt one channel: the
// channel count of a result says which model ran.
std::string shared(const std::string& id, const std::string& file = "identity.pt") {
  return "model=" + model(file) + " mean=0 std=1 drop-policy=block batch-size=1 " +
         "model-instance-id=" + id;
}

GstBus* watch_bus(GstHarness* h) {
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  return bus;
}

void unwatch(GstHarness* h, GstBus* bus) {
  gst_element_set_bus(h->element, nullptr);
  gst_object_unref(bus);
}

std::string model_of(GstElement* e) {
  gchar* m = nullptr;
  g_object_get(e, "model", &m, nullptr);
  std::string out = m ? m : "";
  g_free(m);
  return out;
}

// The channels of the model's output for one frame pushed through h.
int channels_run(GstHarness* h, int value) {
  const GstVideoInfo info = info_of(kGray);
  GstBuffer* in = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  gst_buffer_memset(in, 0, static_cast<guint8>(value), GST_VIDEO_INFO_SIZE(&info));
  GST_BUFFER_PTS(in) = value * 33 * GST_MSECOND;
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  if (!out) return -1;
  GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
  const int c = m && m->n_tensors ? static_cast<int>(m->tensors[0].dims[1]) : -1;
  gst_buffer_unref(out);
  return c;
}

// The "torchinfer-model-reloaded" messages already on the bus: (model, generation).
std::vector<std::pair<std::string, int>> reloaded_messages(GstBus* bus) {
  std::vector<std::pair<std::string, int>> out;
  while (GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_ELEMENT)) {
    const GstStructure* s = gst_message_get_structure(m);
    if (gst_structure_has_name(s, "torchinfer-model-reloaded")) {
      int generation = 0;
      gst_structure_get_int(s, "generation", &generation);
      out.emplace_back(gst_structure_get_string(s, "model"), generation);
    }
    gst_message_unref(m);
  }
  return out;
}

}  // namespace

TEST(TorchInferSharedReload, EverySharerSwitchesReadsTheNewFileAndIsTold) {
  const std::string old_file = model("identity.pt"), new_file = model("gray_identity.pt");
  GstHarness* a = torchinfer_harness(shared("reload-two"), kGray);
  GstHarness* b = torchinfer_harness(shared("reload-two"), kGray);
  GstBus* bus_a = watch_bus(a);
  GstBus* bus_b = watch_bus(b);
  int notified_b = 0;
  g_signal_connect(b->element, "notify::model",
                   G_CALLBACK(+[](GObject*, GParamSpec*, gpointer n) { ++*static_cast<int*>(n); }),
                   &notified_b);
  EXPECT_EQ(channels_run(a, 1), 3);
  EXPECT_EQ(channels_run(b, 2), 3);

  g_object_set(a->element, "model", new_file.c_str(), nullptr);
  GstMessage* msg = wait_element_message(bus_a, "torchinfer-model-reloaded");
  ASSERT_NE(msg, nullptr);
  gst_message_unref(msg);
  EXPECT_EQ(model_of(a->element), new_file);
  EXPECT_EQ(model_of(b->element), new_file) << "B runs the new model: its `model` must say so";

  EXPECT_EQ(channels_run(b, 3), 1) << "B runs the new model";
  EXPECT_EQ(reloaded_messages(bus_b), (std::vector<std::pair<std::string, int>>{{new_file, 2}}))
      << "B is told, once, with the instance's generation";
  EXPECT_EQ(notified_b, 1) << "and notify::model is emitted once";
  EXPECT_EQ(channels_run(b, 4), 1);
  EXPECT_TRUE(reloaded_messages(bus_b).empty());
  EXPECT_EQ(channels_run(a, 5), 1);
  EXPECT_TRUE(reloaded_messages(bus_a).empty()) << "A was told once, by its reload";

  unwatch(a, bus_a);
  unwatch(b, bus_b);
  gst_harness_teardown(b);
  gst_harness_teardown(a);
}

TEST(TorchInferSharedReload, ALateJoinerMustAskForTheRunningFile) {
  const std::string new_file = model("gray_identity.pt");
  GstHarness* a = torchinfer_harness(shared("reload-late"), kGray);
  GstHarness* b = torchinfer_harness(shared("reload-late"), kGray);
  GstBus* bus_a = watch_bus(a);
  EXPECT_EQ(channels_run(a, 1), 3);
  g_object_set(a->element, "model", new_file.c_str(), nullptr);
  GstMessage* msg = wait_element_message(bus_a, "torchinfer-model-reloaded");
  ASSERT_NE(msg, nullptr);
  gst_message_unref(msg);

  // Asking for the old file is refused: it no longer runs under this id.
  GstElement* old = gst_parse_launch(("torchinfer " + shared("reload-late")).c_str(), nullptr);
  const StartResult r = try_start(old);
  EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE);
  ASSERT_TRUE(r.error.set);
  EXPECT_EQ(r.error.domain, GST_RESOURCE_ERROR);
  EXPECT_EQ(r.error.code, GST_RESOURCE_ERROR_SETTINGS);
  EXPECT_NE(r.error.message.find("must use the same model (the running one has '" + new_file),
            std::string::npos)
      << r.error.message;
  gst_object_unref(old);

  // Asking for the new file joins the running instance.
  GstHarness* late = torchinfer_harness(shared("reload-late", "gray_identity.pt"), kGray);
  EXPECT_EQ(channels_run(late, 2), 1);
  EXPECT_EQ(model_of(late->element), new_file);
  EXPECT_EQ(channels_run(b, 3), 1);

  unwatch(a, bus_a);
  gst_harness_teardown(late);
  gst_harness_teardown(b);
  gst_harness_teardown(a);
}

TEST(TorchInferSharedReload, SharersRestartOnTheFileThatRan) {
  const std::string new_file = model("gray_identity.pt");
  GstHarness* a = torchinfer_harness(shared("reload-restart"), kGray);
  GstHarness* b = torchinfer_harness(shared("reload-restart"), kGray);
  GstBus* bus_a = watch_bus(a);
  EXPECT_EQ(channels_run(a, 1), 3);
  g_object_set(a->element, "model", new_file.c_str(), nullptr);
  GstMessage* msg = wait_element_message(bus_a, "torchinfer-model-reloaded");
  ASSERT_NE(msg, nullptr);
  gst_message_unref(msg);
  unwatch(a, bus_a);

  // B stops without having inferred a frame of the new model.
  ASSERT_EQ(gst_element_set_state(b->element, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  ASSERT_EQ(gst_element_set_state(a->element, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  EXPECT_EQ(model_of(b->element), new_file) << "stopped, B keeps the file it ran";
  EXPECT_EQ(model_of(a->element), new_file);
  // B first: A must then agree with what B loaded.
  EXPECT_NE(gst_element_set_state(b->element, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  EXPECT_NE(gst_element_set_state(a->element, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE)
      << "after a restart the sharers disagreed about the model";
  EXPECT_EQ(model_of(a->element), new_file);

  gst_harness_teardown(b);
  gst_harness_teardown(a);
}

// Sharers subscribe to the running instance: B is told of A's reload when
// it happens, before any frame of the new model passed through B, and its
// frames do not tell it again.
TEST(TorchInferSharedReload, ASharerIsToldWhenTheReloadHappensNotByAFrame) {
  const std::string new_file = model("gray_identity.pt");
  GstHarness* a = torchinfer_harness(shared("reload-told"), kGray);
  GstHarness* b = torchinfer_harness(shared("reload-told"), kGray);
  GstBus* bus_a = watch_bus(a);
  GstBus* bus_b = watch_bus(b);
  int notified_b = 0;
  g_signal_connect(b->element, "notify::model",
                   G_CALLBACK(+[](GObject*, GParamSpec*, gpointer n) { ++*static_cast<int*>(n); }),
                   &notified_b);
  EXPECT_EQ(channels_run(a, 1), 3);
  g_object_set(a->element, "model", new_file.c_str(), nullptr);
  GstMessage* msg = wait_element_message(bus_a, "torchinfer-model-reloaded");
  ASSERT_NE(msg, nullptr);
  gst_message_unref(msg);
  // A's stop waits for its reload, which told every sharer.
  ASSERT_EQ(gst_element_set_state(a->element, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  EXPECT_EQ(reloaded_messages(bus_b), (std::vector<std::pair<std::string, int>>{{new_file, 2}}));
  EXPECT_EQ(notified_b, 1);
  EXPECT_EQ(channels_run(b, 2), 1) << "B runs the new model";
  EXPECT_TRUE(reloaded_messages(bus_b).empty()) << "B's frame does not tell it again";
  EXPECT_EQ(notified_b, 1);

  unwatch(a, bus_a);
  unwatch(b, bus_b);
  gst_harness_teardown(b);
  gst_harness_teardown(a);
}
