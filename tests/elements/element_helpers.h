// Shared helpers for the element tests: start an element outside a harness
// to observe failures, collect bus messages and GLib warnings.
#pragma once

#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <string>
#include <vector>

#include "frame_accounting.h"

namespace torchinfer::test {

struct BusError {
  bool set = false;
  GQuark domain = 0;
  int code = 0;
  std::string message, debug;
};

struct StartResult {
  GstStateChangeReturn ret = GST_STATE_CHANGE_FAILURE;
  BusError error;
  std::vector<std::string> warnings;  // GST_MESSAGE_WARNING texts
};

// Sets `element` (not in a pipeline) to PAUSED with a private bus, returns
// the state change result and the first error posted; leaves it in NULL.
StartResult try_start(GstElement* element);

// Captures g_warning() output of the given log domain while alive.
class WarningCatcher {
 public:
  explicit WarningCatcher(const char* domain = nullptr);
  ~WarningCatcher();
  const std::vector<std::string>& messages() const { return messages_; }

 private:
  static void handler(const gchar*, GLogLevelFlags, const gchar* message, gpointer self);
  std::string domain_;
  guint id_ = 0;
  std::vector<std::string> messages_;
};

// Whether the harness answers upstream latency queries as a live source.
// GstHarness is live by default, which makes torchinfer's drop-policy=auto
// skip frames whenever the machine is slower than the test's pushes: tests
// get a non-live upstream (auto = block) unless they test live behaviour.
enum class Upstream { kNotLive, kLive };

// A harness around torchinfer with the given properties (set before start).
GstHarness* torchinfer_harness(const std::string& props, const std::string& caps,
                               Upstream upstream = Upstream::kNotLive);

// The video info of a caps string (the test fails if it is not video).
GstVideoInfo info_of(const std::string& caps);

// A buffer of the given caps' size filled by a per-frame pattern.
GstBuffer* make_video_buffer(const GstVideoInfo& info, unsigned seed);

std::string model(const std::string& name);

// The next element message with this structure name (or, for "warning",
// the next warning), waiting up to 2 minutes; nullptr if none came.
GstMessage* wait_element_message(GstBus* bus, const char* name);

// The frame counters of a torchinfer "stats" structure (property or
// message), for frames_add_up().
FrameCounts counts_of(const GstStructure* stats);
// The counters of a torchinfer element (or the first torchinfer inside a
// bin) now.
FrameCounts frame_counts(GstElement* element);

}  // namespace torchinfer::test
