// torchinfer's element state, in the shape of the gst-plugins-rs elements:
// the settings behind one lock; the streaming thread's and the output
// thread's own state, each reached through a ThreadOwned borrow that checks
// one thread at a time uses it (common/thread_owner.h, as StreamSession's
// halves); the running model behind one handle that hears of every reload
// (RunningModel). Shared by the element's files:
//   gsttorchinfer.cpp       GObject, properties, start/stop, reloads, pads
//   torchinfer-input.cpp    the streaming thread: chain, events, queries
//   torchinfer-output.cpp   the output thread: the source pad's task
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "common/burst_report.h"
#include "common/thread_owner.h"
#include "gsttorchinfer.h"
#include "preprocess/saturation.h"
#include "stream/stream_session.h"
#include "torchinfer-properties.h"
#include "torchinfer-running.h"
#include "torchinfer-settings.h"
#include "torchinfer-tiles.h"

GST_DEBUG_CATEGORY_EXTERN(gst_torchinfer_debug);

namespace torchinfer::gst {

// The streaming thread's: chain, serialized events and queries.
struct InputState {
  GstVideoInfo info;
  PixelFormat format = PixelFormat::kRGB;
  bool have_info = false;
  std::vector<RegionOfInterest> regions;  // the frame's ROIs (roi-list), reused frame to frame
  bool object_class_checked = false;      // against the labels of the regions' detector
  TileGridKey tiles;                      // inference-region=tiles: what `regions` was cut for
};

// The output thread's (the source pad's task).
struct OutputState {
  bool warned_not_classifier = false;
  guint64 regions_not_classified = 0;    // roi-list with a model that is not a classifier
  guint64 not_pushed = 0;                // frames let go since downstream's EOS
  BurstReport invalid_report{};          // NaN/infinite results, warned once per burst
  SaturationReport saturation_report{};  // GRAY16_LE samples above input-bits
};

struct State {
  std::mutex settings_lock;  // guards settings and stats
  Settings settings;
  Stats stats;  // the figures of the latest (re)load

  // Written by start() while neither thread runs, read-only until stop().
  Settings run;
  std::string name;  // the element's, for the results it attaches to ROIs
  // roi-list: the region labels inferred (object-class, else the sidecar's
  // object_classes); empty = every region.
  std::vector<std::string> object_classes;
  std::string object_classes_sidecar;  // the sidecar that named them; "" = the property
  std::atomic<guint64> latency_ns{0};
  // The generation of the running model this element last adopted.
  std::atomic<int> generation{1};

  StreamSession session;
  RunningModel model;
  ThreadOwned<InputState> input{"torchinfer's streaming-thread state"};
  ThreadOwned<OutputState> output{"torchinfer's output-thread state"};
};

OwnedRef own(GstMiniObject* o);

}  // namespace torchinfer::gst

struct _GstTorchInfer {
  GstElement parent;
  GstPad* sinkpad;
  GstPad* srcpad;
  torchinfer::gst::State* state;
};

// The streaming thread (torchinfer-input.cpp).
GstFlowReturn gst_torchinfer_chain(GstPad* pad, GstObject* parent, GstBuffer* buf);
gboolean gst_torchinfer_sink_event(GstPad* pad, GstObject* parent, GstEvent* event);
gboolean gst_torchinfer_sink_query(GstPad* pad, GstObject* parent, GstQuery* query);

// The output thread (torchinfer-output.cpp).
void gst_torchinfer_loop(gpointer element);
gboolean gst_torchinfer_src_query(GstPad* pad, GstObject* parent, GstQuery* query);
