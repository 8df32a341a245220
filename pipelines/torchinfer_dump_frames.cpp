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

#include "app/app_numbers.h"
#include "app/builder.h"
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

struct Args {
  std::string clip, model, sidecar, out;
  long every = 1, max = 0;
};

// False (after saying why) for a bad command line.
bool parse_args(int argc, char** argv, Args& args) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--clip")
      args.clip = next();
    else if (a == "--model")
      args.model = next();
    else if (a == "--model-config")
      args.sidecar = next();
    else if (a == "--out")
      args.out = next();
    else if (a == "--every") {
      if (!app::parse_int("--every", next(), 1, 1000000, &args.every)) return false;
    } else if (a == "--max") {
      if (!app::parse_int("--max", next(), 0, 100000000, &args.max)) return false;
    } else
      return usage(), false;
  }
  if (args.clip.empty() || args.out.empty() || (args.model.empty() && args.sidecar.empty()) ||
      args.every < 1)
    return usage(), false;
  return true;
}

// The clip decoded to RGB into an appsink named "sink"; null (after saying
// why) when the pipeline cannot be built.
GstElement* decode_pipeline(const std::string& clip) {
  GstElement* pipe = app::new_pipeline("dump-frames");
  std::string why;
  app::Builder b(pipe, &why);
  GstElement* decode = b.add("uridecodebin");
  GstElement* convert = b.add("videoconvert");
  GstElement* rgb = b.caps("video/x-raw,format=RGB");
  GstElement* sink = b.add("appsink", "sink");
  if (!b.failed()) {
    gchar* uri = gst_filename_to_uri(clip.c_str(), nullptr);
    g_object_set(decode, "uri", uri ? uri : clip.c_str(), nullptr);
    g_free(uri);
    g_object_set(sink, "sync", FALSE, "max-buffers", 4u, nullptr);
    app::link_when_added(decode, convert);
    b.link({convert, rgb, sink});
  }
  if (!b.failed()) return pipe;
  std::fprintf(stderr, "cannot build pipeline: %s\n", why.c_str());
  gst_object_unref(pipe);
  return nullptr;
}

// The sample's frame preprocessed into `slot` and appended to `raw`.
void write_frame(GstSample* s, Preprocessor& pre, AlignedBuffer& slot, OutputFile& raw,
                 long& written) {
  GstVideoInfo info;
  GstVideoFrame f;
  gst_video_info_from_caps(&info, gst_sample_get_caps(s));
  if (!gst_video_frame_map(&f, &info, gst_sample_get_buffer(s), GST_MAP_READ)) return;
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

// Every --every'th frame up to --max written; false when decoding failed.
bool pull_frames(GstElement* sink, GstBus* bus, const Args& args, Preprocessor& pre,
                 AlignedBuffer& slot, OutputFile& raw, long& written) {
  long seen = 0;
  // try_pull with a timeout: a decoding error posts on the bus and never
  // reaches appsink as EOS, so a blocking pull would wait forever.
  for (;;) {
    GstSample* s = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 100 * GST_MSECOND);
    if (!s) {
      if (gst_app_sink_is_eos(GST_APP_SINK(sink))) return true;
      if (GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR)) {
        GError* e = nullptr;
        gst_message_parse_error(m, &e, nullptr);
        std::fprintf(stderr, "decoding %s failed: %s\n", args.clip.c_str(), e->message);
        g_error_free(e);
        gst_message_unref(m);
        return false;
      }
      continue;
    }
    if (seen++ % args.every == 0 && (args.max == 0 || written < args.max))
      write_frame(s, pre, slot, raw, written);
    gst_sample_unref(s);
  }
}

// OUT.json: what the raw file holds.
void write_header(const Args& args, const ModelConfig& cfg, const PreprocessOptions& po,
                  long written) {
  nlohmann::json hdr = {
      {"dtype", "float32"},      {"layout", "NHWC"},      {"count", written},
      {"height", po.out_height}, {"width", po.out_width}, {"channels", po.channels()},
      {"clip", args.clip},       {"every", args.every},   {"model_config", cfg.source}};
  OutputFile header(args.out + ".json");
  const std::string text = hdr.dump(2) + "\n";
  header.write(text.data(), text.size());
  header.close();
}

int dump(const Args& args) {
  const ModelConfig cfg = resolve_model_config(args.model, args.sidecar, {});
  Preprocessor pre(PreprocessOptions::from_config(cfg));
  AlignedBuffer slot(pre.options().slot_bytes());
  GstElement* pipe = decode_pipeline(args.clip);
  if (!pipe) return 1;
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipe), "sink");
  gst_element_set_state(pipe, GST_STATE_PLAYING);
  OutputFile raw(args.out);
  long written = 0;
  GstBus* bus = gst_element_get_bus(pipe);
  const bool decoded = pull_frames(sink, bus, args, pre, slot, raw, written);
  raw.close();
  gst_object_unref(bus);
  gst_element_set_state(pipe, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(pipe);
  if (!decoded || written == 0) {
    std::fprintf(stderr, "no frames decoded from %s\n", args.clip.c_str());
    return 1;
  }
  const PreprocessOptions& po = pre.options();
  write_header(args, cfg, po, written);
  std::printf("wrote %ld frames (%dx%dx%d) to %s\n", written, po.out_height, po.out_width,
              po.channels(), args.out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  gst_init(&argc, &argv);
  Args args;
  if (!parse_args(argc, argv, args)) return app::kBadCommandLine;
  try {
    return dump(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
