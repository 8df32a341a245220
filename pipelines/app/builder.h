// The one way the apps build pipelines: make each element, add it, set its
// properties as values and link, keeping the first failure. A path with a
// quote or a space is then only a value, never launch syntax (a launch
// string built from user text breaks on the first '"' in a file name).
// Launch syntax stays only where the user hands us launch syntax
// (--source, --analysis, --decode).
#pragma once

#include <gst/gst.h>

#include <string>
#include <vector>

namespace torchinfer::app {

class Builder {
 public:
  // `why` receives the first failure; the pipeline is the caller's.
  Builder(GstElement* pipeline, std::string* why) : pipeline_(pipeline), why_(why) {}

  // nullptr (and the failure kept) when the factory is not installed.
  GstElement* add(const char* factory, const char* name = nullptr);
  // A capsfilter of these caps (fixed text: never user input).
  GstElement* caps(const char* caps_text);
  // Elements linked in this order, each to the next.
  bool link(const std::vector<GstElement*>& chain);
  bool fail(const std::string& why);
  bool failed() const { return !why_->empty(); }
  GstElement* pipeline() const { return pipeline_; }

 private:
  GstElement* pipeline_;
  std::string* why_;
};

// Links src's pads as they appear (a demuxer, uridecodebin) to sink's
// "sink" pad: the first one sink takes (the link checks the caps, so a
// video converter takes the video, not the audio).
void link_when_added(GstElement* src, GstElement* sink);

// Any property from its text form (numbers, enums by nick) through GObject,
// so no text is parsed as GStreamer syntax.
void set_arg(GstElement* e, const char* name, const std::string& value);

// The bundled MJPEG Matroska clip decoded to YUY2, as a factory camera
// sends it: filesrc ! matroskademux ! jpegdec ! videoconvert ! YUY2 caps.
// Returns the last element (to link on from), nullptr on failure.
GstElement* mjpeg_clip_as_yuy2(Builder& b, const std::string& clip);

// The new pipeline's owned reference (floating reference sunk).
GstElement* new_pipeline(const char* name);

}  // namespace torchinfer::app
