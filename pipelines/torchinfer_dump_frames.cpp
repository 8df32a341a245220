// torchinfer-dump-frames: decode a clip with GStreamer and write every
// (or every Nth) frame exactly as torchinfer would feed it to the model:
// the core Preprocessor with the model's sidecar, float32 NHWC. Used to
// calibrate and check int8 models (models/quantize.py).
//
//   torchinfer-dump-frames --clip in.mkv --model net.pt --out frames.raw [--every 5] [--max 500]
//
// Writes OUT (count x H x W x C float32) and OUT.json (the header).
#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "app_numbers.h"
#include "common/aligned_buffer.h"
#include "common/file_check.h"
#include "common/model_config.h"
#include "preprocess/preprocess.h"

using namespace torchinfer;
namespace app = torchinfer::app;

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: torchinfer-dump-frames --clip FILE (--model M.pt | --model-config M.json)\n"
               "                              --out FRAMES.raw [--every N] [--max N]\n");
  return app::kBadCommandLine;
}

// A file written in full or an exception: a short calibration set would
// quietly skew the int8 model made from it.
class OutputFile {
 public:
  // Opened without blocking: a FIFO nobody reads fails at once, naming it.
  explicit OutputFile(const std::string& path)
      : path_(path), f_(open_output_stream(path, "--out")) {}
  ~OutputFile() {
    if (f_) std::fclose(f_);
  }
  void write(const void* data, std::size_t n) {
    if (std::fwrite(data, 1, n, f_) != n) fail();
  }
  void close() {
    const bool ok = std::fflush(f_) == 0 && !std::ferror(f_);
    const int err = errno;
    const bool closed = std::fclose(f_) == 0;
    f_ = nullptr;
    errno = ok ? errno : err;
    if (!ok || !closed) fail();
  }

 private:
  [[noreturn]] void fail() const {
    throw std::runtime_error("cannot write " + path_ + ": " + std::strerror(errno));
  }
  std::string path_;
  std::FILE* f_;
};

}  // namespace

int main(int argc, char** argv) {
  gst_init(&argc, &argv);
  std::string clip, model, sidecar, out;
  long every = 1, max = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--clip")
      clip = next();
    else if (a == "--model")
      model = next();
    else if (a == "--model-config")
      sidecar = next();
    else if (a == "--out")
      out = next();
    else if (a == "--every") {
      if (!app::parse_int("--every", next(), 1, 1000000, &every)) return app::kBadCommandLine;
    } else if (a == "--max") {
      if (!app::parse_int("--max", next(), 0, 100000000, &max)) return app::kBadCommandLine;
    } else
      return usage();
  }
  if (clip.empty() || out.empty() || (model.empty() && sidecar.empty()) || every < 1)
    return usage();

  try {
    const ModelConfig cfg = resolve_model_config(model, sidecar, {});
    Preprocessor pre(PreprocessOptions::from_config(cfg));
    AlignedBuffer slot(pre.options().slot_bytes());

    gchar* uri = gst_filename_to_uri(clip.c_str(), nullptr);
    const std::string line = std::string("uridecodebin uri=") + (uri ? uri : clip.c_str()) +
                             " ! videoconvert ! video/x-raw,format=RGB ! appsink name=sink "
                             "sync=false max-buffers=4";
    g_free(uri);
    GError* err = nullptr;
    GstElement* pipe = gst_parse_launch(line.c_str(), &err);
    if (!pipe) {
      std::fprintf(stderr, "cannot build pipeline: %s\n", err ? err->message : "?");
      return 1;
    }
    GstElement* sink = gst_bin_get_by_name(GST_BIN(pipe), "sink");
    gst_element_set_state(pipe, GST_STATE_PLAYING);
    OutputFile raw(out);
    long seen = 0, written = 0;
    GstBus* bus = gst_element_get_bus(pipe);
    bool failed = false;
    // try_pull with a timeout: a decoding error posts on the bus and never
    // reaches appsink as EOS, so a blocking pull would wait forever.
    for (;;) {
      GstSample* s = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 100 * GST_MSECOND);
      if (!s) {
        if (gst_app_sink_is_eos(GST_APP_SINK(sink))) break;
        if (GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR)) {
          GError* e = nullptr;
          gst_message_parse_error(m, &e, nullptr);
          std::fprintf(stderr, "decoding %s failed: %s\n", clip.c_str(), e->message);
          g_error_free(e);
          gst_message_unref(m);
          failed = true;
          break;
        }
        continue;
      }
      if (seen++ % every == 0 && (max == 0 || written < max)) {
        GstVideoInfo info;
        GstVideoFrame f;
        gst_video_info_from_caps(&info, gst_sample_get_caps(s));
        if (gst_video_frame_map(&f, &info, gst_sample_get_buffer(s), GST_MAP_READ)) {
          FrameView v;
          v.format = PixelFormat::kRGB;
          v.width = GST_VIDEO_FRAME_WIDTH(&f);
          v.height = GST_VIDEO_FRAME_HEIGHT(&f);
          v.planes[0] = static_cast<const std::uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&f, 0));
          v.strides[0] = GST_VIDEO_FRAME_PLANE_STRIDE(&f, 0);
          pre.run(v, slot.data<float>());
          gst_video_frame_unmap(&f);
          raw.write(slot.data<char>(), static_cast<std::streamsize>(slot.bytes()));
          ++written;
        }
      }
      gst_sample_unref(s);
    }
    raw.close();
    gst_object_unref(bus);
    gst_element_set_state(pipe, GST_STATE_NULL);
    gst_object_unref(sink);
    gst_object_unref(pipe);
    if (failed || written == 0) {
      std::fprintf(stderr, "no frames decoded from %s\n", clip.c_str());
      return 1;
    }
    nlohmann::json hdr = {{"dtype", "float32"},
                          {"layout", "NHWC"},
                          {"count", written},
                          {"height", pre.options().out_height},
                          {"width", pre.options().out_width},
                          {"channels", pre.options().channels()},
                          {"clip", clip},
                          {"every", every},
                          {"model_config", cfg.source}};
    OutputFile header(out + ".json");
    const std::string text = hdr.dump(2) + "\n";
    header.write(text.data(), text.size());
    header.close();
    std::printf("wrote %ld frames (%dx%dx%d) to %s\n", written, pre.options().out_height,
                pre.options().out_width, pre.options().channels(), out.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
