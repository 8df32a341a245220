// GstHarness tests of torchinfer's batching and stream semantics: EOS drain,
// flush, caps changes, state changes, order and timestamps, latency, drop
// policy, shared model instances, hot reload and stats. Frames carry their
// index in their pixels and the identity models hand it back, so every
// result can be checked against its own buffer.
#include <dirent.h>
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "common/cpu_set.h"
#include "common/sysinfo.h"
#include "element_helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"

using namespace torchinfer::test;
using torchinfer::SkipReason;
using namespace std::chrono_literals;

namespace {

const char* kGray = "video/x-raw,format=GRAY8,width=8,height=6,framerate=30/1";

std::string identity(const std::string& extra) {
  return "model=" + model("identity.pt") + " mean=0 std=1 drop-policy=block " + extra;
}
std::string slow(const std::string& extra) {
  return "model=" + model("slow_identity.pt") + " warmup=1 precision=fp32 drop-policy=block " +
         extra;
}

// A duration since t0, printed for tests/bench/stop_latency.sh and kept
// in the gtest XML; never asserted (a busy machine stretches it).
void measured(const char* what, const char* key, std::chrono::steady_clock::time_point t0) {
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "[ measured ] " << what << ": " << s << " s\n";
  testing::Test::RecordProperty(key, std::to_string(s));
}

// A frame whose every pixel is `value`, with timestamps derived from it.
GstBuffer* frame(const GstVideoInfo& info, int value) {
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  gst_buffer_memset(buf, 0, static_cast<guint8>(value), GST_VIDEO_INFO_SIZE(&info));
  GST_BUFFER_PTS(buf) = value * 33 * GST_MSECOND;
  GST_BUFFER_DTS(buf) = value * 33 * GST_MSECOND + 1;
  GST_BUFFER_DURATION(buf) = 33 * GST_MSECOND;
  GST_BUFFER_OFFSET(buf) = value;
  GST_BUFFER_OFFSET_END(buf) = value + 1;
  if (value % 5 == 0) GST_BUFFER_FLAG_SET(buf, GST_BUFFER_FLAG_DELTA_UNIT);
  return buf;
}

// The pixel value the model saw for this buffer (identity model, mean 0, std 1).
int seen_value(GstBuffer* out) {
  GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
  if (!m || m->n_tensors == 0) return -1;
  return static_cast<int>(std::lround(static_cast<const float*>(m->tensors[0].data)[0] * 255.f));
}

void expect_frame(GstBuffer* out, int value) {
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(GST_BUFFER_PTS(out), value * 33 * GST_MSECOND);
  EXPECT_EQ(GST_BUFFER_DTS(out), value * 33 * GST_MSECOND + 1);
  EXPECT_EQ(GST_BUFFER_DURATION(out), 33 * GST_MSECOND);
  EXPECT_EQ(GST_BUFFER_OFFSET(out), static_cast<guint64>(value));
  EXPECT_EQ(GST_BUFFER_OFFSET_END(out), static_cast<guint64>(value + 1));
  EXPECT_EQ(GST_BUFFER_FLAG_IS_SET(out, GST_BUFFER_FLAG_DELTA_UNIT), value % 5 == 0);
  GstMapInfo map;
  ASSERT_TRUE(gst_buffer_map(out, &map, GST_MAP_READ));
  EXPECT_EQ(map.data[0], static_cast<guint8>(value)) << "video bytes untouched";
  gst_buffer_unmap(out, &map);
}

// Waits for EOS on the harness sink; returns how many buffers had arrived
// by then (all of them must come before EOS).
guint buffers_at_eos(GstHarness* h) {
  for (;;) {
    GstEvent* ev = gst_harness_pull_event(h);
    if (!ev) {
      ADD_FAILURE() << "no EOS";
      return 0;
    }
    const bool eos = GST_EVENT_TYPE(ev) == GST_EVENT_EOS;
    gst_event_unref(ev);
    if (eos) return gst_harness_buffers_in_queue(h);
  }
}

int thread_count() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

// GLib keeps idle pool threads around for a while; they are not ours.
int settled_thread_count() {
  g_thread_pool_set_max_unused_threads(0);
  g_thread_pool_stop_unused_threads();
  for (int i = 0; i < 50; ++i) {
    std::this_thread::sleep_for(20ms);
    g_thread_pool_stop_unused_threads();
  }
  return thread_count();
}

// After the EOS came out: every frame is inferred, skipped or dropped.
void expect_settled(GstHarness* h) {
  EXPECT_TRUE(frames_add_up(frame_counts(h->element), Settled::kYes));
}

GstBus* watch_bus(GstHarness* h) {
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  return bus;
}

}  // namespace

TEST(TorchInferBatching, EosDrainsEveryPartialBatch) {
  const GstVideoInfo info = info_of(kGray);
  for (int n : {1, 2, 3, 5, 7}) {
    // A timeout that never fires here: only EOS can run the last batch.
    GstHarness* h = torchinfer_harness(identity("batch-size=4 batch-timeout=60000000"), kGray);
    for (int i = 0; i < n; ++i) ASSERT_EQ(gst_harness_push(h, frame(info, i)), GST_FLOW_OK);
    ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
    EXPECT_EQ(buffers_at_eos(h), static_cast<guint>(n)) << "every frame before EOS, n=" << n;
    for (int i = 0; i < n; ++i) {
      GstBuffer* out = gst_harness_pull(h);
      expect_frame(out, i);
      EXPECT_EQ(seen_value(out), i) << "n=" << n;
      GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
      ASSERT_NE(m, nullptr);
      const int full = n / 4 * 4;
      EXPECT_EQ(m->batch_size, static_cast<guint>(i < full ? 4 : n - full)) << n << "/" << i;
      EXPECT_EQ(m->batch_index, static_cast<guint>(i % 4));
      EXPECT_TRUE(m->inferred);
      gst_buffer_unref(out);
    }
    const FrameCounts c = frame_counts(h->element);
    EXPECT_TRUE(frames_add_up(c, Settled::kYes));
    EXPECT_EQ(c.inferred, static_cast<std::uint64_t>(n));
    gst_harness_teardown(h);
  }
}

// What the server showed as "5.6 % neither inferred nor counted" on an idle
// box: frames inside the element (a partial batch, the queue) count as in
// but not yet as anything else. They are in flight, and say so.
TEST(TorchInferBatching, FramesInsideTheElementAreCountedInFlight) {
  const GstVideoInfo info = info_of(kGray);
  GstHarness* h = torchinfer_harness(identity("batch-size=4 batch-timeout=60000000"), kGray);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(gst_harness_push(h, frame(info, i)), GST_FLOW_OK);
  FrameCounts c = frame_counts(h->element);
  EXPECT_TRUE(frames_add_up(c));
  EXPECT_EQ(c.in, 3u);
  EXPECT_EQ(c.inferred, 0u);
  EXPECT_EQ(c.in_flight, 3u) << "a partial batch waits for its timeout";
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  EXPECT_EQ(buffers_at_eos(h), 3u);
  c = frame_counts(h->element);
  EXPECT_TRUE(frames_add_up(c, Settled::kYes));
  EXPECT_EQ(c.inferred, 3u);
  gst_harness_teardown(h);
}

// Downstream returns EOS from its third buffer on (identity eos-after, a
// muxer pad that already ended) while `refuse` is set.
struct DownstreamEos {
  std::atomic<bool> refuse{true};
  std::atomic<int> passed{0};
  static GstPadProbeReturn probe(GstPad*, GstPadProbeInfo* info, gpointer data) {
    auto* self = static_cast<DownstreamEos*>(data);
    if (!self->refuse || self->passed < 2) {
      ++self->passed;
      return GST_PAD_PROBE_OK;
    }
    gst_buffer_unref(GST_PAD_PROBE_INFO_BUFFER(info));
    GST_PAD_PROBE_INFO_FLOW_RETURN(info) = GST_FLOW_EOS;
    return GST_PAD_PROBE_HANDLED;
  }
  explicit DownstreamEos(GstHarness* h) {
    GstPad* src = gst_element_get_static_pad(h->element, "src");
    gst_pad_add_probe(src, GST_PAD_PROBE_TYPE_BUFFER, probe, this, nullptr);
    gst_object_unref(src);
  }
};

TEST(TorchInferBatching, DownstreamEosLetsQueuedFramesGoAndPassesTheEosOn) {
  const GstVideoInfo info = info_of(kGray);
  for (int batch : {1, 4}) {
    GstHarness* h = torchinfer_harness(
        identity("batch-size=" + std::to_string(batch) + " batch-timeout=60000000"), kGray);
    DownstreamEos downstream(h);
    bool refused = false;
    for (int i = 0; i < 8; ++i) {
      const GstFlowReturn ret = gst_harness_push(h, frame(info, i));
      if (refused)
        EXPECT_EQ(ret, GST_FLOW_EOS) << "frame " << i << ", batch " << batch;
      else
        EXPECT_TRUE(ret == GST_FLOW_OK || ret == GST_FLOW_EOS) << gst_flow_get_name(ret);
      refused = refused || ret == GST_FLOW_EOS;
    }
    // Before the fix the EOS stayed behind the frames the output let go and
    // the pipeline never ended.
    ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
    EXPECT_EQ(buffers_at_eos(h), 2u) << "batch " << batch;
    for (int i = 0; i < 2; ++i) {
      GstBuffer* out = gst_harness_pull(h);
      expect_frame(out, i);
      EXPECT_EQ(seen_value(out), i);
      gst_buffer_unref(out);
    }
    EXPECT_EQ(gst_harness_push(h, frame(info, 9)), GST_FLOW_EOS) << "downstream is at EOS";
    // The frames let go after downstream's EOS never left: dropped.
    const FrameCounts c = frame_counts(h->element);
    EXPECT_TRUE(frames_add_up(c, Settled::kYes));
    EXPECT_EQ(c.out, 3u) << "two passed, the third met downstream's EOS";
    EXPECT_EQ(c.dropped, c.in - 3) << "batch " << batch;
    gst_harness_teardown(h);
  }
}

TEST(TorchInferBatching, NewSegmentAfterDownstreamEosTakesFramesAgain) {
  const GstVideoInfo info = info_of(kGray);
  GstHarness* h = torchinfer_harness(identity("batch-size=1"), kGray);
  DownstreamEos downstream(h);
  for (int i = 0; i < 3; ++i) gst_harness_push(h, frame(info, i));
  // Once the output has met the EOS, the element refuses frames with it.
  GstFlowReturn ret = GST_FLOW_OK;
  for (int tries = 0; ret != GST_FLOW_EOS && tries < 500; ++tries) {
    ret = gst_harness_push(h, frame(info, 3));
    if (ret != GST_FLOW_EOS) std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(ret, GST_FLOW_EOS);
  downstream.refuse = false;
  GstSegment seg;
  gst_segment_init(&seg, GST_FORMAT_TIME);
  seg.base = 12345;  // this segment, not the harness's first one
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_segment(&seg)));
  for (;;) {
    GstEvent* ev = gst_harness_pull_event(h);
    ASSERT_NE(ev, nullptr) << "no segment";
    const GstSegment* got = nullptr;
    if (GST_EVENT_TYPE(ev) == GST_EVENT_SEGMENT) gst_event_parse_segment(ev, &got);
    const bool ours = got && got->base == 12345;
    gst_event_unref(ev);
    if (ours) break;
  }
  // It reached downstream after the frames the output let go.
  EXPECT_EQ(gst_harness_buffers_in_queue(h), 2u);
  ASSERT_EQ(gst_harness_push(h, frame(info, 10)), GST_FLOW_OK);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  EXPECT_EQ(buffers_at_eos(h), 3u);
  for (int v : {0, 1, 10}) {
    GstBuffer* out = gst_harness_pull(h);
    expect_frame(out, v);
    EXPECT_EQ(seen_value(out), v);
    gst_buffer_unref(out);
  }
  gst_harness_teardown(h);
}

TEST(TorchInferBatching, ThirtySevenFramesKeepOrderTimestampsAndResults) {
  const GstVideoInfo info = info_of(kGray);
  GstHarness* h = torchinfer_harness(identity("batch-size=8 batch-timeout=60000000"), kGray);
  for (int i = 0; i < 37; ++i) ASSERT_EQ(gst_harness_push(h, frame(info, i)), GST_FLOW_OK);
  gst_harness_push_event(h, gst_event_new_eos());
  EXPECT_EQ(buffers_at_eos(h), 37u);
  for (int i = 0; i < 37; ++i) {
    GstBuffer* out = gst_harness_pull(h);
    expect_frame(out, i);
    EXPECT_EQ(seen_value(out), i);
    GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
    EXPECT_EQ(m->batch_size, i < 32 ? 8u : 5u);
    EXPECT_EQ(m->result_pts, GST_BUFFER_PTS(out));
    gst_buffer_unref(out);
  }
  guint64 frames = 0;
  g_object_get(h->element, "frames", &frames, nullptr);
  EXPECT_EQ(frames, 37u);
  gst_harness_teardown(h);
}

// preprocess-on=inference-threads splits frames (batch 1: into row bands)
// over the inference threads: every tensor must equal the streaming
// thread's, in order, with the video and timestamps untouched.
TEST(TorchInferBatching, PreprocessingOnEitherThreadsGivesTheSameTensors) {
  const char* caps = "video/x-raw,format=YUY2,width=320,height=240,framerate=30/1";
  const GstVideoInfo info = info_of(caps);
  for (const char* batch : {"1", "3"}) {
    std::vector<std::vector<float>> seen[2];
    const char* modes[2] = {"streaming-thread", "inference-threads"};
    for (int m = 0; m < 2; ++m) {
      GstHarness* h =
          torchinfer_harness("model=" + model("grid_probe.pt") +
                                 " threads=2 lanes=1 drop-policy=block batch-size=" + batch +
                                 " preprocess-on=" + modes[m],
                             caps);
      for (unsigned i = 0; i < 7; ++i) {
        GstBuffer* in = make_video_buffer(info, i);
        GST_BUFFER_PTS(in) = i * 33 * GST_MSECOND;
        ASSERT_EQ(gst_harness_push(h, in), GST_FLOW_OK);
      }
      gst_harness_push_event(h, gst_event_new_eos());
      EXPECT_EQ(buffers_at_eos(h), 7u);
      for (unsigned i = 0; i < 7; ++i) {
        GstBuffer* out = gst_harness_pull(h);
        ASSERT_NE(out, nullptr);
        EXPECT_EQ(GST_BUFFER_PTS(out), i * 33 * GST_MSECOND);
        GstTorchTensorMeta* meta = gst_buffer_get_torch_tensor_meta(out);
        ASSERT_NE(meta, nullptr);
        ASSERT_EQ(meta->n_tensors, 1u);
        const auto* v = static_cast<const float*>(meta->tensors[0].data);
        seen[m].emplace_back(v, v + meta->tensors[0].size / sizeof(float));
        gst_buffer_unref(out);
      }
      gst_harness_teardown(h);
    }
    ASSERT_EQ(seen[0].size(), 7u);
    EXPECT_EQ(seen[0][0].size(), 48u);  // 4 x 4 cells x 3 channels
    EXPECT_NE(seen[0][0], seen[0][1]) << "frames differ, so equal tensors mean equal inputs";
    for (unsigned i = 0; i < 7; ++i) EXPECT_EQ(seen[0][i], seen[1][i]) << "batch " << batch;
  }
}

// batch-size=8 warms 8, 4, 2, 1 only: a batch of 5 at EOS runs at a size
// never warmed and must still give each frame its own result.
TEST(TorchInferBatching, UnwarmedPartialBatchAtEosGivesEachFrameItsResult) {
  const GstVideoInfo info = info_of(kGray);
  GstHarness* h = torchinfer_harness(identity("batch-size=8 batch-timeout=60000000"), kGray);
  for (int i = 0; i < 5; ++i) ASSERT_EQ(gst_harness_push(h, frame(info, 10 + i)), GST_FLOW_OK);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  EXPECT_EQ(buffers_at_eos(h), 5u);
  for (int i = 0; i < 5; ++i) {
    GstBuffer* out = gst_harness_pull(h);
    expect_frame(out, 10 + i);
    EXPECT_EQ(seen_value(out), 10 + i);
    GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->batch_size, 5u);
    EXPECT_EQ(m->batch_index, static_cast<guint>(i));
    EXPECT_TRUE(m->inferred);
    gst_buffer_unref(out);
  }
  EXPECT_EQ(gst_harness_buffers_in_queue(h), 0u);
  gst_harness_teardown(h);
}

TEST(TorchInferBatching, TimeoutRunsAPartialBatchWithoutEos) {
  const GstVideoInfo info = info_of(kGray);
  GstHarness* h = torchinfer_harness(identity("batch-size=8 batch-timeout=20000"), kGray);
  for (int i = 0; i < 3; ++i) gst_harness_push(h, frame(info, i));
  for (int i = 0; i < 3; ++i) {
    GstBuffer* out = gst_harness_pull(h);  // only the 20 ms timeout can release these
    ASSERT_NE(out, nullptr);
    EXPECT_EQ(seen_value(out), i);
    EXPECT_EQ(gst_buffer_get_torch_tensor_meta(out)->batch_size, 3u);
    gst_buffer_unref(out);
  }
  gst_harness_teardown(h);
}

TEST(TorchInferBatching, InferenceIntervalReusesTheLatestResult) {
  const GstVideoInfo info = info_of(kGray);
  GstHarness* h = torchinfer_harness(identity("batch-size=2 inference-interval=3"), kGray);
  for (int i = 0; i < 9; ++i) gst_harness_push(h, frame(info, i));
  gst_harness_push_event(h, gst_event_new_eos());
  EXPECT_EQ(buffers_at_eos(h), 9u);
  for (int i = 0; i < 9; ++i) {
    GstBuffer* out = gst_harness_pull(h);
    expect_frame(out, i);
    GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
    ASSERT_NE(m, nullptr) << i;
    const int source = i / 3 * 3;
    EXPECT_EQ(seen_value(out), source) << i;
    EXPECT_EQ(m->inferred, i % 3 == 0) << i;
    EXPECT_EQ(m->result_pts, source * 33 * GST_MSECOND) << i;
    gst_buffer_unref(out);
  }
  GstStructure* stats = nullptr;
  g_object_get(h->element, "stats", &stats, nullptr);
  guint64 inferred = 0, skipped = 0;
  gst_structure_get_uint64(stats, "frames-inferred", &inferred);
  gst_structure_get_uint64(stats, "frames-skipped", &skipped);
  EXPECT_EQ(inferred, 3u);
  EXPECT_EQ(skipped, 6u);
  const FrameCounts c = counts_of(stats);
  EXPECT_TRUE(frames_add_up(c, Settled::kYes));
  EXPECT_EQ(c.skipped_by[static_cast<std::size_t>(SkipReason::kInterval)], 6u);
  gst_structure_free(stats);
  gst_harness_teardown(h);
}

TEST(TorchInferBatching, CapsChangeDrainsAndEachMetaHasItsFrameSize) {
  const char* small = "video/x-raw,format=GRAY8,width=320,height=240,framerate=30/1";
  const char* big = "video/x-raw,format=GRAY8,width=1280,height=720,framerate=30/1";
  GstHarness* h = torchinfer_harness(identity("batch-size=4 batch-timeout=60000000"), small);
  const struct {
    const char* caps;
    int frames;
  } segments[] = {{small, 3}, {big, 2}, {small, 1}};
  int value = 0;
  for (const auto& seg : segments) {
    gst_harness_set_src_caps_str(h, seg.caps);
    const GstVideoInfo info = info_of(seg.caps);
    for (int i = 0; i < seg.frames; ++i) gst_harness_push(h, frame(info, value++));
  }
  gst_harness_push_event(h, gst_event_new_eos());
  EXPECT_EQ(buffers_at_eos(h), 6u);
  value = 0;
  for (const auto& seg : segments) {
    const GstVideoInfo info = info_of(seg.caps);
    for (int i = 0; i < seg.frames; ++i, ++value) {
      GstBuffer* out = gst_harness_pull(h);
      expect_frame(out, value);
      EXPECT_EQ(gst_buffer_get_size(out), GST_VIDEO_INFO_SIZE(&info));
      GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
      ASSERT_NE(m, nullptr);
      EXPECT_EQ(m->frame_width, static_cast<guint>(GST_VIDEO_INFO_WIDTH(&info)));
      EXPECT_EQ(m->frame_height, static_cast<guint>(GST_VIDEO_INFO_HEIGHT(&info)));
      EXPECT_EQ(m->batch_size, static_cast<guint>(seg.frames)) << "old batch drained at caps";
      EXPECT_EQ(seen_value(out), value);
      gst_buffer_unref(out);
    }
  }
  gst_harness_teardown(h);
}

TEST(TorchInferBatching, FlushDropsQueuedFramesAndReturnsPromptly) {
  const GstVideoInfo info = info_of(kGray);
  GstHarness* h = torchinfer_harness(slow("batch-size=2 batch-timeout=60000000"), kGray);
  // Batch {0,1} runs (~0.25 s), batch {2,3} waits behind it.
  for (int i = 0; i < 4; ++i) ASSERT_EQ(gst_harness_push(h, frame(info, i)), GST_FLOW_OK);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_flush_start()));
  // How long is a figure, not a check a busy machine could break: a flush
  // that blocks hangs the test; tests/bench/stop_latency.sh collects it.
  measured("flush during inference", "flush_seconds", t0);
  // Whatever left before the flush is in the harness queue now; nothing
  // queued inside the element may follow.
  std::uint64_t before_flush = 0;
  while (GstBuffer* b = gst_harness_try_pull(h)) {
    ++before_flush;
    gst_buffer_unref(b);
  }
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_flush_stop(TRUE)));
  GstSegment segment;  // a flush that resets time is followed by a new segment
  gst_segment_init(&segment, GST_FORMAT_TIME);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_segment(&segment)));
  // No new caps: the element resends the ones the flush dropped.
  for (int i = 100; i < 102; ++i) ASSERT_EQ(gst_harness_push(h, frame(info, i)), GST_FLOW_OK);
  gst_harness_push_event(h, gst_event_new_eos());
  EXPECT_EQ(buffers_at_eos(h), 2u);
  for (int i = 100; i < 102; ++i) {
    GstBuffer* out = gst_harness_pull(h);
    expect_frame(out, i);
    EXPECT_EQ(seen_value(out), i);
    gst_buffer_unref(out);
  }
  const FrameCounts c = frame_counts(h->element);
  EXPECT_TRUE(frames_add_up(c, Settled::kYes));
  EXPECT_EQ(c.in, 6u);
  EXPECT_EQ(c.dropped, 4u - before_flush) << "the frames the flush discarded";
  gst_harness_teardown(h);
}

TEST(TorchInferBatching, NullDuringInferenceReturnsQuicklyAndLeavesNoThreads) {
  const GstVideoInfo info = info_of(kGray);
  {  // once first: GLib and libgomp create process-wide threads on first use
    GstHarness* h = torchinfer_harness(slow(""), kGray);
    gst_buffer_unref(gst_harness_push_and_pull(h, frame(info, 1)));
    gst_harness_teardown(h);
  }
  const int before = settled_thread_count();
  for (int round = 0; round < 3; ++round) {
    GstHarness* h = torchinfer_harness(slow("batch-size=1"), kGray);
    ASSERT_EQ(gst_harness_push(h, frame(info, 1)), GST_FLOW_OK);
    ASSERT_EQ(gst_harness_push(h, frame(info, 2)), GST_FLOW_OK);
    std::this_thread::sleep_for(50ms);  // inside forward() now
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(gst_element_set_state(h->element, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    measured("NULL during inference", "null_seconds",
             t0);  // a figure (tests/bench/stop_latency.sh)
    // Both frames were dropped by the stop, none lost from the counts.
    const FrameCounts c = frame_counts(h->element);
    EXPECT_TRUE(frames_add_up(c, Settled::kYes));
    EXPECT_EQ(c.in, 2u);
    gst_harness_teardown(h);
  }
  EXPECT_EQ(settled_thread_count(), before) << "threads left behind";
}

TEST(TorchInferBatching, SurvivesStateChangeStressWhileStreaming) {
  const GstVideoInfo info = info_of(kGray);
  const int before = settled_thread_count();
  {
    GstHarness* h = torchinfer_harness(identity("batch-size=4 batch-timeout=1000"), kGray);
    std::atomic<bool> stop{false};
    std::thread pusher([&] {
      for (int i = 0; !stop; i = (i + 1) % 200) {
        if (gst_harness_push(h, frame(info, i)) != GST_FLOW_OK) std::this_thread::sleep_for(1ms);
        while (GstBuffer* b = gst_harness_try_pull(h)) gst_buffer_unref(b);
      }
    });
    GstHarnessThread* stress = gst_harness_stress_statechange_start(h);
    std::this_thread::sleep_for(1500ms);
    const guint cycles = gst_harness_stress_thread_stop(stress);
    stop = true;
    pusher.join();
    EXPECT_GE(cycles, 1u);  // however busy the machine: one cycle at least
    const auto t0 = std::chrono::steady_clock::now();
    gst_harness_teardown(h);
    measured("teardown after state-change stress", "teardown_seconds",
             t0);  // tests/bench/stop_latency.sh
  }
  EXPECT_EQ(settled_thread_count(), before);
}

// Upstream keeps querying while the element stops: a decoder asks for an
// allocation on its own thread while the pipeline goes down (downstream
// elements stop first). Before the fix such a query drained the session
// while stop() tore it down (the thread check aborted the server).
TEST(TorchInferBatching, SerializedQueriesWhileStoppingNeverEnterTheStoppingSession) {
  const GstVideoInfo info = info_of(kGray);
  GstHarness* h = torchinfer_harness(identity("batch-size=4 batch-timeout=1000"), kGray);
  std::atomic<bool> stop{false};
  std::atomic<int> queries{0};
  std::thread pusher([&] {
    for (int i = 0; !stop; i = (i + 1) % 200) {
      if (gst_harness_push(h, frame(info, i)) != GST_FLOW_OK) std::this_thread::sleep_for(1ms);
      while (GstBuffer* b = gst_harness_try_pull(h)) gst_buffer_unref(b);
    }
  });
  std::thread querier([&] {
    GstCaps* caps = gst_caps_from_string(kGray);
    while (!stop) {
      GstQuery* q = gst_query_new_allocation(caps, TRUE);
      gst_pad_peer_query(h->srcpad, q);
      gst_query_unref(q);
      queries++;
    }
    gst_caps_unref(caps);
  });
  GstHarnessThread* stress = gst_harness_stress_statechange_start(h);
  std::this_thread::sleep_for(1500ms);
  const guint cycles = gst_harness_stress_thread_stop(stress);
  stop = true;
  pusher.join();
  querier.join();
  EXPECT_GT(cycles, 3u);
  EXPECT_GT(queries.load(), 100);
  gst_harness_teardown(h);
}

TEST(TorchInferBatching, LatencyQueryAddsBatchWaitAndInference) {
  GstHarness* h =
      torchinfer_harness(identity("batch-size=4 batch-timeout=50000"), kGray, Upstream::kLive);
  gst_harness_set_upstream_latency(h, 10 * GST_MSECOND);
  gst_harness_play(h);
  GstQuery* q = gst_query_new_latency();
  ASSERT_TRUE(gst_pad_peer_query(h->sinkpad, q));
  gboolean live;
  GstClockTime min, max;
  gst_query_parse_latency(q, &live, &min, &max);
  EXPECT_TRUE(live);
  // 10 ms upstream + 50 ms batch-timeout + one batch of the identity model.
  EXPECT_GE(min, 60 * GST_MSECOND);
  EXPECT_LT(min, 60 * GST_MSECOND + GST_SECOND);
  gst_query_unref(q);
  gst_harness_teardown(h);
}

// drop-policy=auto (the default) asks upstream at the caps: a live source
// skips frames while the model is busy, any other source waits for it.
namespace {

FrameCounts push_four_to_a_busy_model(Upstream upstream, int* inferred) {
  const GstVideoInfo info = info_of(kGray);
  // 70-250 ms per frame (by the CPU); four frames arrive at once. One lane:
  // with the automatic two of a 2-core machine, a fast CPU runs two and
  // queues the rest within the batch time, and nothing is ever busy.
  GstHarness* h = torchinfer_harness(
      "model=" + model("slow_identity.pt") + " warmup=1 precision=fp32 batch-size=1 lanes=1",
      kGray, upstream);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(gst_harness_push(h, frame(info, i)), GST_FLOW_OK);
  gst_harness_push_event(h, gst_event_new_eos());
  const guint out = buffers_at_eos(h);
  *inferred = 0;
  for (guint k = 0; k < out; ++k) {
    GstBuffer* b = gst_harness_pull(h);
    GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(b);
    if (m && m->inferred) ++*inferred;
    gst_buffer_unref(b);
  }
  const FrameCounts c = frame_counts(h->element);
  EXPECT_TRUE(frames_add_up(c, Settled::kYes));
  gst_harness_teardown(h);
  return c;
}

}  // namespace

TEST(TorchInferBatching, AutoDropPolicySkipsBusyFramesFromALiveSource) {
  int inferred = 0;
  const FrameCounts c = push_four_to_a_busy_model(Upstream::kLive, &inferred);
  EXPECT_EQ(c.in, 4u);
  EXPECT_GE(inferred, 1);
  EXPECT_LT(inferred, 4) << "nothing skipped although the model was busy";
  EXPECT_EQ(c.skipped_by[static_cast<std::size_t>(SkipReason::kBusy)], 4u - inferred);
}

TEST(TorchInferBatching, AutoDropPolicyWaitsForTheModelWithASourceThatIsNotLive) {
  int inferred = 0;
  const FrameCounts c = push_four_to_a_busy_model(Upstream::kNotLive, &inferred);
  EXPECT_EQ(c.in, 4u);
  EXPECT_EQ(inferred, 4);
  EXPECT_EQ(c.inferred, 4u);
  EXPECT_EQ(c.skipped, 0u);
  EXPECT_EQ(c.dropped, 0u);
}

TEST(TorchInferBatching, LiveOverloadSkipsFramesCountsThemAndStaysBounded) {
  const GstVideoInfo info = info_of(kGray);
  // ~0.25 s per frame; 12 frames arrive at once, as from a live camera.
  GstHarness* h = torchinfer_harness(slow("batch-size=1 drop-policy=skip"), kGray);
  for (int i = 0; i < 12; ++i) ASSERT_EQ(gst_harness_push(h, frame(info, i)), GST_FLOW_OK);
  gst_harness_push_event(h, gst_event_new_eos());
  const guint out = buffers_at_eos(h);
  guint64 dropped = 0;
  g_object_get(h->element, "dropped", &dropped, nullptr);
  // The queue holds 2 batches + 8 frames: the first two are inferred, the
  // rest skipped, and what did not fit left the stream (the bound itself is
  // tested in InOrderQueue.FullQueueBlocksOrRefuses). Exact counts depend on
  // how fast this machine pushes compared with one forward().
  GstStructure* stats = nullptr;
  g_object_get(h->element, "stats", &stats, nullptr);
  guint64 in = 0, left = 0;
  gst_structure_get_uint64(stats, "frames-in", &in);
  gst_structure_get_uint64(stats, "frames-out", &left);
  gst_structure_free(stats);
  EXPECT_EQ(in, 12u);
  EXPECT_EQ(left, out);
  int inferred = 0, last = -1;
  for (guint k = 0; k < out; ++k) {
    GstBuffer* b = gst_harness_pull(h);
    const int v = static_cast<int>(GST_BUFFER_OFFSET(b));
    EXPECT_GT(v, last) << "order kept";
    last = v;
    GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(b);
    if (m && m->inferred) {
      ++inferred;
      EXPECT_EQ(seen_value(b), v);
    }
    gst_buffer_unref(b);
  }
  EXPECT_GE(inferred, 2);
  EXPECT_LT(inferred, 12) << "nothing skipped although the model was busy";
  // Frames that left without inference were skipped (busy); the ones the
  // full queue refused never left (dropped).
  const FrameCounts c = frame_counts(h->element);
  EXPECT_TRUE(frames_add_up(c, Settled::kYes));
  EXPECT_EQ(c.skipped_by[static_cast<std::size_t>(SkipReason::kBusy)], out - inferred);
  EXPECT_EQ(dropped, 12u - out) << "every frame that did not leave is counted";
  gst_harness_teardown(h);
}

TEST(TorchInferBatching, FourCamerasShareOneModelAndOneBatch) {
  std::vector<GstHarness*> cams;
  for (int c = 0; c < 4; ++c)
    cams.push_back(torchinfer_harness(
        identity("batch-size=4 batch-timeout=60000000 model-instance-id=line1"), kGray));
  const GstVideoInfo info = info_of(kGray);
  for (int i = 0; i < 3; ++i)
    for (int c = 0; c < 4; ++c)
      ASSERT_EQ(gst_harness_push(cams[c], frame(info, c * 50 + i)), GST_FLOW_OK);
  for (int c = 0; c < 4; ++c) gst_harness_push_event(cams[c], gst_event_new_eos());
  for (int c = 0; c < 4; ++c) {
    EXPECT_EQ(buffers_at_eos(cams[c]), 3u);
    for (int i = 0; i < 3; ++i) {
      GstBuffer* out = gst_harness_pull(cams[c]);
      expect_frame(out, c * 50 + i);
      EXPECT_EQ(seen_value(out), c * 50 + i) << "camera " << c << " got another's result";
      GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
      EXPECT_EQ(m->batch_size, 4u) << "one batch per round across the cameras";
      EXPECT_EQ(m->batch_index, static_cast<guint>(c));
      EXPECT_STREQ(m->model_instance_id, "line1");
      gst_buffer_unref(out);
    }
    expect_settled(cams[c]);
  }
  for (GstHarness* h : cams) gst_harness_teardown(h);
}

TEST(TorchInferBatching, ConflictingSharedSettingsFailClearly) {
  GstHarness* first =
      torchinfer_harness(identity("batch-size=4 model-instance-id=conflict"), kGray);
  gst_harness_play(first);
  GstElement* second = gst_parse_launch(
      ("torchinfer " + identity("batch-size=2 model-instance-id=conflict")).c_str(), nullptr);
  const StartResult r = try_start(second);
  EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE);
  ASSERT_TRUE(r.error.set);
  EXPECT_EQ(r.error.domain, GST_RESOURCE_ERROR);
  EXPECT_EQ(r.error.code, GST_RESOURCE_ERROR_SETTINGS);
  EXPECT_NE(r.error.message.find("model-instance-id 'conflict'"), std::string::npos)
      << r.error.message;
  EXPECT_NE(r.error.message.find("batch-size"), std::string::npos) << r.error.message;
  gst_object_unref(second);
  gst_harness_teardown(first);
}

// What shapes the shared model's input or its decoded results comes from
// the first sharer's config: a second sharer asking for something else
// would get the first one's results in silence. Each such setting refused
// by name.
TEST(TorchInferBatching, SharersThatWouldGetAnotherSharersResultsFailNamingTheSetting) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"top-k=1", "top-k"},
      {"output-activation=sigmoid", "activation"},
      {"task=classification", "task"},
      {"mean=0.5 std=1", "normalisation"},
      {"channel-order=bgr", "channel-order"}};
  for (const auto& [extra, setting] : cases) {
    GstHarness* first = torchinfer_harness(identity("model-instance-id=results"), kGray);
    gst_harness_play(first);
    GstElement* second = gst_parse_launch(
        ("torchinfer " + identity("model-instance-id=results " + extra)).c_str(), nullptr);
    const StartResult r = try_start(second);
    EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE) << extra;
    EXPECT_EQ(r.error.code, GST_RESOURCE_ERROR_SETTINGS) << extra;
    EXPECT_NE(r.error.message.find("must use the same " + setting), std::string::npos)
        << extra << ": " << r.error.message;
    gst_object_unref(second);
    gst_harness_teardown(first);
  }
  // The same settings share (the sidecar's values given again as properties).
  GstHarness* first = torchinfer_harness(identity("model-instance-id=results"), kGray);
  gst_harness_play(first);
  GstElement* same =
      gst_parse_launch(("torchinfer " + identity("model-instance-id=results")).c_str(), nullptr);
  EXPECT_NE(try_start(same).ret, GST_STATE_CHANGE_FAILURE);
  gst_object_unref(same);
  gst_harness_teardown(first);
}

TEST(TorchInferBatching, HotReloadSwitchesModelBetweenBatchesAndSurvivesABadModel) {
  const GstVideoInfo info = info_of(kGray);
  GstHarness* h = torchinfer_harness(identity("batch-size=1"), kGray);
  GstBus* bus = watch_bus(h);
  GstBuffer* out = gst_harness_push_and_pull(h, frame(info, 7));
  EXPECT_EQ(gst_buffer_get_torch_tensor_meta(out)->tensors[0].dims[1], 3);  // RGB identity
  gst_buffer_unref(out);

  g_object_set(h->element, "model", model("gray_identity.pt").c_str(), nullptr);
  GstMessage* msg = wait_element_message(bus, "torchinfer-model-reloaded");
  ASSERT_NE(msg, nullptr);
  int generation = 0;
  gst_structure_get_int(gst_message_get_structure(msg), "generation", &generation);
  EXPECT_EQ(generation, 2);
  gst_message_unref(msg);
  out = gst_harness_push_and_pull(h, frame(info, 9));
  GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
  EXPECT_EQ(m->tensors[0].dims[1], 1) << "the new one-channel model ran";
  EXPECT_EQ(seen_value(out), 9);
  EXPECT_NE(std::string(m->model).find("gray_identity.pt"), std::string::npos);
  gst_buffer_unref(out);

  g_object_set(h->element, "model", "/nonexistent/model.pt", nullptr);
  msg = wait_element_message(bus, "warning");
  ASSERT_NE(msg, nullptr);
  GError* err = nullptr;
  gst_message_parse_warning(msg, &err, nullptr);
  EXPECT_NE(std::string(err->message).find("still running the previous model"), std::string::npos)
      << err->message;
  g_error_free(err);
  gst_message_unref(msg);
  out = gst_harness_push_and_pull(h, frame(info, 11));
  EXPECT_EQ(gst_buffer_get_torch_tensor_meta(out)->tensors[0].dims[1], 1);
  EXPECT_EQ(seen_value(out), 11);
  gst_buffer_unref(out);
  gchar* current = nullptr;
  g_object_get(h->element, "model", &current, nullptr);
  EXPECT_NE(std::string(current).find("gray_identity.pt"), std::string::npos);
  g_free(current);
  gst_element_set_bus(h->element, nullptr);
  gst_object_unref(bus);
  gst_harness_teardown(h);
}

TEST(TorchInferBatching, StatsPropertyAndPeriodicMessages) {
  const GstVideoInfo info = info_of(kGray);
  GstHarness* h = torchinfer_harness(identity("batch-size=2 stats-interval=1"), kGray);
  GstBus* bus = watch_bus(h);
  for (int i = 0; i < 6; ++i) gst_harness_push(h, frame(info, i));
  gst_harness_push_event(h, gst_event_new_eos());
  EXPECT_EQ(buffers_at_eos(h), 6u);
  GstMessage* msg = wait_element_message(bus, "torchinfer-stats");
  ASSERT_NE(msg, nullptr);
  guint64 in = 0;
  EXPECT_TRUE(gst_structure_get_uint64(gst_message_get_structure(msg), "frames-in", &in));
  EXPECT_GE(in, 1u);
  gst_message_unref(msg);

  GstStructure* s = nullptr;
  g_object_get(h->element, "stats", &s, nullptr);
  ASSERT_NE(s, nullptr);
  guint64 v = 0;
  gst_structure_get_uint64(s, "frames-in", &v);
  EXPECT_EQ(v, 6u);
  gst_structure_get_uint64(s, "frames-out", &v);
  EXPECT_EQ(v, 6u);
  gst_structure_get_uint64(s, "frames-inferred", &v);
  EXPECT_EQ(v, 6u);
  gst_structure_get_uint64(s, "frames-dropped", &v);
  EXPECT_EQ(v, 0u);
  EXPECT_TRUE(frames_add_up(counts_of(s), Settled::kYes));
  double fill = 0, p50 = 0, p99 = 0;
  gst_structure_get_double(s, "mean-batch-fill", &fill);
  EXPECT_DOUBLE_EQ(fill, 2.0);
  gst_structure_get_double(s, "inference-ms-p50", &p50);
  gst_structure_get_double(s, "inference-ms-p99", &p99);
  EXPECT_GT(p50, 0.0);
  EXPECT_GE(p99, p50);
  for (const char* f : {"queue-ms-p95", "preprocess-ms-p50", "total-ms-p99", "fps"})
    EXPECT_TRUE(gst_structure_has_field(s, f)) << f;
  gst_structure_free(s);
  gst_element_set_bus(h->element, nullptr);
  gst_object_unref(bus);
  gst_harness_teardown(h);
}

TEST(TorchInferBatching, BadBatchPropertiesAreRejected) {
  GstElement* e = gst_element_factory_make("torchinfer", nullptr);
  {
    WarningCatcher w("GLib-GObject");
    g_object_set(e, "batch-size", 0, nullptr);
    g_object_set(e, "batch-size", 65, nullptr);
    g_object_set(e, "inference-interval", 0, nullptr);
    EXPECT_EQ(w.messages().size(), 3u);
  }
  int batch = 0, interval = 0;
  g_object_get(e, "batch-size", &batch, "inference-interval", &interval, nullptr);
  EXPECT_EQ(batch, 1);
  EXPECT_EQ(interval, 1);
  {
    WarningCatcher w;
    g_object_set(e, "model", model("identity.pt").c_str(), nullptr);
    ASSERT_EQ(gst_element_set_state(e, GST_STATE_PAUSED), GST_STATE_CHANGE_SUCCESS);
    g_object_set(e, "batch-size", 4, nullptr);  // locked while running
    EXPECT_EQ(w.messages().size(), 1u);
  }
  g_object_get(e, "batch-size", &batch, nullptr);
  EXPECT_EQ(batch, 1);
  gst_element_set_state(e, GST_STATE_NULL);
  gst_object_unref(e);
}

// lanes=2: four cameras share one model loaded twice, each copy on its
// own core; batches finish in any order, but every camera still gets its
// own frames back in order with their timestamps and results.
TEST(TorchInferBatching, TwoLanesGiveEveryCameraItsOwnFramesInOrder) {
  const bool two_cores = torchinfer::physical_cores(torchinfer::allowed_cpus()) >= 2;
  std::vector<GstHarness*> cams;
  for (int c = 0; c < 4; ++c)
    cams.push_back(
        torchinfer_harness(slow("batch-size=1 lanes=2 model-instance-id=two-lanes"), kGray));
  if (!two_cores) {  // one core: the start fails naming the fix
    for (GstHarness* h : cams) gst_harness_teardown(h);
    GstElement* e = gst_parse_launch(("torchinfer " + slow("lanes=2")).c_str(), nullptr);
    const StartResult r = try_start(e);
    ASSERT_TRUE(r.error.set);
    EXPECT_NE(r.error.message.find("lanes=2 needs a core per lane"), std::string::npos);
    gst_object_unref(e);
    return;
  }
  const GstVideoInfo info = info_of(kGray);
  std::vector<std::thread> pushers;
  for (int c = 0; c < 4; ++c)
    pushers.emplace_back([&, c] {
      for (int i = 0; i < 6; ++i)
        EXPECT_EQ(gst_harness_push(cams[c], frame(info, c * 40 + i)), GST_FLOW_OK);
      gst_harness_push_event(cams[c], gst_event_new_eos());
    });
  for (std::thread& t : pushers) t.join();
  for (int c = 0; c < 4; ++c) {
    EXPECT_EQ(buffers_at_eos(cams[c]), 6u);
    for (int i = 0; i < 6; ++i) {
      GstBuffer* out = gst_harness_pull(cams[c]);
      expect_frame(out, c * 40 + i);
      EXPECT_EQ(seen_value(out), c * 40 + i) << "camera " << c << " frame " << i;
      gst_buffer_unref(out);
    }
  }
  for (GstHarness* h : cams) gst_harness_teardown(h);
}

TEST(TorchInferBatching, LanesMustAgreeBetweenSharersAndFitTheCores) {
  GstHarness* first =
      torchinfer_harness(identity("lanes=1 model-instance-id=lanes-conflict"), kGray);
  gst_harness_play(first);
  GstElement* second = gst_parse_launch(
      ("torchinfer " + identity("lanes=2 model-instance-id=lanes-conflict")).c_str(), nullptr);
  StartResult r = try_start(second);
  EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE);
  ASSERT_TRUE(r.error.set);
  EXPECT_NE(r.error.message.find("lanes"), std::string::npos) << r.error.message;
  gst_object_unref(second);
  gst_harness_teardown(first);

  // More lanes than cores, and fewer threads than lanes.
  const int cores = torchinfer::physical_cores(torchinfer::allowed_cpus());
  for (const std::string& bad :
       {"lanes=" + std::to_string(cores + 1), std::string("lanes=2 threads=1")}) {
    GstElement* e = gst_parse_launch(("torchinfer " + identity(bad)).c_str(), nullptr);
    r = try_start(e);
    EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE) << bad;
    ASSERT_TRUE(r.error.set) << bad;
    EXPECT_EQ(r.error.domain, GST_RESOURCE_ERROR) << bad;
    EXPECT_EQ(r.error.code, GST_RESOURCE_ERROR_SETTINGS) << bad;
    EXPECT_NE(r.error.message.find("lanes="), std::string::npos) << r.error.message;
    gst_object_unref(e);
  }
  GstElement* e = gst_element_factory_make("torchinfer", nullptr);
  {
    WarningCatcher w("GLib-GObject");
    g_object_set(e, "lanes", -1, nullptr);
    g_object_set(e, "lanes", 65, nullptr);
    EXPECT_EQ(w.messages().size(), 2u);
  }
  int lanes = -1;
  g_object_get(e, "lanes", &lanes, nullptr);
  EXPECT_EQ(lanes, 0) << "automatic by default";
  gst_object_unref(e);
}

// More threads than cores slows inference down: a warning counts every
// lane's threads against the cores of the lanes.
TEST(TorchInferBatching, MoreThreadsThanCoresWarnsWithTheTotals) {
  const std::vector<int> allowed = torchinfer::allowed_cpus();
  auto warnings_of = [](const std::string& props) {
    GstElement* e = gst_parse_launch(("torchinfer " + identity(props)).c_str(), nullptr);
    const StartResult r = try_start(e);
    EXPECT_NE(r.ret, GST_STATE_CHANGE_FAILURE) << props << ": " << r.error.message;
    gst_object_unref(e);
    std::string all;
    for (const std::string& w : r.warnings) all += w + "\n";
    return all;
  };
  const std::string one_core = "cores=" + std::to_string(allowed.front());
  EXPECT_NE(warnings_of(one_core + " threads=2").find("threads=2 is more than the 1 cores"),
            std::string::npos);
  EXPECT_EQ(warnings_of(one_core + " threads=1").find("more than the"), std::string::npos);
  if (torchinfer::physical_cores(allowed) < 2 || allowed.size() != 2) return;
  EXPECT_NE(warnings_of("lanes=2 threads=4").find("threads=4 is more than the 2 cores"),
            std::string::npos);
  EXPECT_EQ(warnings_of("lanes=2").find("more than the"), std::string::npos);
}
