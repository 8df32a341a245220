#include "app/builder.h"

namespace torchinfer::app {

GstElement* Builder::add(const char* factory, const char* name) {
  GstElement* e = gst_element_factory_make(factory, name);
  if (!e) {
    fail(std::string("GStreamer element '") + factory +
         "' is not installed (torchinfer's: set GST_PLUGIN_PATH to the plugin folder)");
    return nullptr;
  }
  gst_bin_add(GST_BIN(pipeline_), e);
  return e;
}

GstElement* Builder::caps(const char* caps_text) {
  GstElement* f = add("capsfilter");
  if (!f) return nullptr;
  GstCaps* caps = gst_caps_from_string(caps_text);
  g_object_set(f, "caps", caps, nullptr);
  gst_caps_unref(caps);
  return f;
}

bool Builder::link(const std::vector<GstElement*>& chain) {
  for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
    if (!chain[i] || !chain[i + 1]) return fail("an element of the pipeline could not be made");
    if (!gst_element_link(chain[i], chain[i + 1]))
      return fail(std::string("cannot link ") + GST_ELEMENT_NAME(chain[i]) + " to " +
                  GST_ELEMENT_NAME(chain[i + 1]));
  }
  return true;
}

bool Builder::fail(const std::string& why) {
  if (why_->empty()) *why_ = why;
  return false;
}

void set_arg(GstElement* e, const char* name, const std::string& value) {
  gst_util_set_object_arg(G_OBJECT(e), name, value.c_str());
}

namespace {

void link_added_pad(GstElement*, GstPad* pad, gpointer next) {
  GstPad* sink = gst_element_get_static_pad(GST_ELEMENT(next), "sink");
  if (!gst_pad_is_linked(sink)) gst_pad_link(pad, sink);
  gst_object_unref(sink);
}

}  // namespace

void link_when_added(GstElement* src, GstElement* sink) {
  g_signal_connect(src, "pad-added", G_CALLBACK(link_added_pad), sink);
}

GstElement* mjpeg_clip_as_yuy2(Builder& b, const std::string& clip) {
  GstElement* src = b.add("filesrc");
  GstElement* demux = b.add("matroskademux");
  GstElement* dec = b.add("jpegdec");
  GstElement* convert = b.add("videoconvert");
  GstElement* yuy2 = b.caps("video/x-raw,format=YUY2");
  if (b.failed()) return nullptr;
  g_object_set(src, "location", clip.c_str(), nullptr);
  // matroskademux adds its pads once it has read the header; the one the
  // decoder takes (image/jpeg) is the video.
  link_when_added(demux, dec);
  if (!b.link({src, demux}) || !b.link({dec, convert, yuy2})) return nullptr;
  return yuy2;
}

GstElement* new_pipeline(const char* name) {
  return GST_ELEMENT(gst_object_ref_sink(gst_pipeline_new(name)));
}

}  // namespace torchinfer::app
