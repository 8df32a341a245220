#include "aravis_source.h"

#include <arv.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

#include "aravis_features.h"

namespace torchinfer::server {

namespace {

constexpr int kArvBuffers = 16;     // frames Aravis may hold: received + downstream
constexpr guint kMostQueued = 4;    // frames waiting in the appsrc before we count overflow
constexpr double kRetryS = 1.0;     // between attempts to reopen a lost camera
constexpr double kStallMinS = 2.0;  // free-run: no frame this long (or 5 periods) = vanished

// How long a software trigger's frame may take, beyond the exposure.
constexpr double kTriggerWaitS = 1.0;

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// 10-16-bit mono arrives as 16-bit words: torchinfer's input-bits scales them.
bool sixteen_bit(const PixelFormatInfo* info) {
  return info && std::string(info->caps).find("GRAY16") != std::string::npos;
}

std::string error_text(GError* e) {
  return e && e->message ? e->message : "unknown error";
}

// Aravis' statistic by name; 0 where the stream type has none (USB3 Vision
// streams name theirs differently).
std::uint64_t stream_stat(ArvStream* s, const char* name) {
  if (!s) return 0;
  for (guint i = 0; i < arv_stream_get_n_infos(s); ++i)
    if (g_strcmp0(arv_stream_get_info_name(s, i), name) == 0 &&
        arv_stream_get_info_type(s, i) == G_TYPE_UINT64)
      return arv_stream_get_info_uint64(s, i);
  return 0;
}

// An ArvBuffer lent to GStreamer: back to its stream when the GstBuffer goes.
struct Lent {
  ArvStream* stream;
  ArvBuffer* buffer;
};

void give_back(gpointer p) {
  auto* l = static_cast<Lent*>(p);
  arv_stream_push_buffer(l->stream, l->buffer);
  g_object_unref(l->stream);
  delete l;
}

}  // namespace

struct AravisSource::Session {
  ArvCamera* camera = nullptr;
  ArvStream* stream = nullptr;
  gulong lost_handler = 0;
  std::atomic<bool> control_lost{false};
  double fps = 0;  // free-run frame rate, 0 when unknown
  std::string name;
  std::optional<double> awaiting;  // a software trigger's deadline for its frame
};

bool AravisSource::configure_infer(const CameraSettings& set, GstElement* infer, std::string* why) {
  const PixelFormatInfo* info = find_pixel_format(set.pixel_format);
  if (sixteen_bit(info)) {
    g_object_set(infer, "input-bits", info->bits, nullptr);
    gint now = 0;
    g_object_get(infer, "input-bits", &now, nullptr);
    if (now != info->bits) {
      *why = "torchinfer did not take input-bits " + std::to_string(info->bits) +
             " for pixel_format " + set.pixel_format + " (it keeps " + std::to_string(now) + ")";
      return false;
    }
  }
  if (set.trigger == TriggerMode::kFreeRun) return true;
  gst_util_set_object_arg(G_OBJECT(infer), "drop-policy", "block");
  GParamSpec* spec = g_object_class_find_property(G_OBJECT_GET_CLASS(infer), "drop-policy");
  GValue v = G_VALUE_INIT;
  g_value_init(&v, spec->value_type);
  g_object_get_property(G_OBJECT(infer), "drop-policy", &v);
  auto* klass = static_cast<GEnumClass*>(g_type_class_ref(spec->value_type));
  const GEnumValue* e = g_enum_get_value(klass, g_value_get_enum(&v));
  const bool block = e && g_strcmp0(e->value_nick, "block") == 0;
  g_type_class_unref(klass);
  g_value_unset(&v);
  if (!block) *why = "torchinfer did not take drop-policy block for a triggered camera";
  return block;
}

AravisSource::AravisSource(CameraSettings settings, GstAppSrc* appsrc, GstElement* infer)
    : settings_(std::move(settings)),
      appsrc_(GST_APP_SRC(gst_object_ref(appsrc))),
      infer_(infer ? GST_ELEMENT(gst_object_ref(infer)) : nullptr) {}

AravisSource::~AravisSource() {
  // The last reference may be the thread's own, as it ends.
  if (thread_.joinable() && thread_.get_id() == std::this_thread::get_id())
    thread_.detach();
  else
    stop();
  gst_object_unref(appsrc_);
  if (infer_) gst_object_unref(infer_);
}

void AravisSource::start() {
  if (thread_.joinable() || stop_) return;
  thread_ = std::thread([self = shared_from_this()] {
    self->run();
    std::lock_guard<std::mutex> lock(self->wake_mu_);
    self->finished_ = true;
    self->wake_.notify_all();
  });
}

void AravisSource::stop() {
  request_stop();
  std::unique_lock<std::mutex> lock(wake_mu_);
  if (!thread_.joinable()) return;
  const bool done =
      wake_.wait_for(lock, std::chrono::duration<double>(kStopWaitS), [this] { return finished_; });
  lock.unlock();
  if (done) {
    thread_.join();
    return;
  }
  g_printerr(
      "torchinfer-server: camera '%s' does not answer: its connection is closed in the "
      "background (Aravis' retries)\n",
      settings_.name.c_str());
  thread_.detach();
}

void AravisSource::request_stop() {
  {
    std::lock_guard<std::mutex> lock(wake_mu_);  // not between its check and its wait
    stop_ = true;
  }
  wake_.notify_all();
}

int AravisSource::trigger(std::string* why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!counters_.acquiring) {
    *why = "camera '" + settings_.name + "' is not acquiring now (see the stream's last_error)";
    return 503;
  }
  if (pending_triggers_ >= kMostPendingTriggers) {
    *why = "camera '" + settings_.name + "' has " + std::to_string(pending_triggers_) +
           " triggers waiting (at most " + std::to_string(kMostPendingTriggers) +
           "); send more once their frames came";
    return 429;
  }
  pending_triggers_++;
  counters_.triggers_pending = pending_triggers_;
  return 202;
}

AravisCounters AravisSource::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

// On the appsrc: its bin forwards it to the camera's bus watch.
void AravisSource::post(const char* name, const std::string& reason) {
  if (stop_) return;  // the camera's bus watch may be gone
  GstStructure* s = gst_structure_new(name, "reason", G_TYPE_STRING, reason.c_str(), nullptr);
  gst_element_post_message(GST_ELEMENT(appsrc_),
                           gst_message_new_application(GST_OBJECT(appsrc_), s));
}

bool AravisSource::sleep_unless_stopped(double seconds) {
  std::unique_lock<std::mutex> lock(wake_mu_);
  return !wake_.wait_for(lock, std::chrono::duration<double>(seconds),
                         [this] { return stop_.load(); });
}

// Connect, acquire until lost, close, retry: until stop(). A setting the
// camera refuses ends it (the operator must change the configuration).
void AravisSource::run() {
  while (!stop_) {
    Session s;
    std::string why;
    bool final = false;
    if (open(s, &why, &final)) {
      post("torchinfer-aravis-ready");
      acquire(s, &why);
    }
    // Told before closing: closing a camera that stopped answering waits
    // out Aravis' GVCP retries (5 of 500 ms per command, and it takes two),
    // which would make a loss known seconds late.
    if (!final && !why.empty()) post("torchinfer-aravis-lost", why);
    close(s);
    if (final) {
      post("torchinfer-aravis-failed", why);
      return;
    }
    if (!sleep_unless_stopped(kRetryS)) return;
  }
}

namespace {

// The camera stopped answering (or never did): worth retrying. Anything
// else from a setting is the camera refusing it.
bool link_error(const GError* e) {
  return e && e->domain == ARV_DEVICE_ERROR &&
         (e->code == ARV_DEVICE_ERROR_TIMEOUT || e->code == ARV_DEVICE_ERROR_TRANSFER_ERROR ||
          e->code == ARV_DEVICE_ERROR_NOT_CONNECTED || e->code == ARV_DEVICE_ERROR_PROTOCOL_ERROR);
}

void on_control_lost(ArvDevice*, gpointer flag) {
  static_cast<std::atomic<bool>*>(flag)->store(true);
}

}  // namespace

bool AravisSource::open(Session& s, std::string* why, bool* final) {
  const std::string cam = "camera '" + settings_.name + "'";
  GError* err = nullptr;
  s.camera = arv_camera_new(settings_.name.c_str(), &err);
  if (!s.camera) {
    if (err && err->domain == ARV_DEVICE_ERROR && err->code == ARV_DEVICE_ERROR_NOT_FOUND)
      *why = cam + " not found (" + error_text(err) +
             "): is it powered and on this network? arv-tool-0.8 lists the cameras it sees";
    else
      *why = cam + " cannot be opened: " + error_text(err);
    g_clear_error(&err);
    return false;
  }
  ArvDevice* dev = arv_camera_get_device(s.camera);
  if (arv_camera_is_gv_device(s.camera) && !arv_gv_device_is_controller(ARV_GV_DEVICE(dev))) {
    *why = cam +
           " is busy: another application holds its control channel (arv-tool-0.8, a viewer, "
           "another torchinfer-server stream, or a torchinfer-server still stopping); close it "
           "and the stream connects (a process that died lets go after the camera's heartbeat "
           "timeout, GevHeartbeatTimeout: seconds)";
    return false;
  }
  s.lost_handler =
      g_signal_connect(dev, "control-lost", G_CALLBACK(on_control_lost), &s.control_lost);
  std::string refused;
  const std::string format = aravis::choose_format(s.camera, settings_, &refused, &err);
  if (!format.empty() && !err)
    arv_camera_set_pixel_format_from_string(s.camera, format.c_str(), &err);
  if (!format.empty() && !err && depth_matches(format, &refused))
    aravis::apply_features(s.camera, settings_, &refused, &err);
  if (!err && refused.empty() && arv_camera_is_gv_device(s.camera)) {
    // See the header: a plain UDP socket, and packets that fit the path.
    arv_camera_gv_set_stream_options(s.camera, ARV_GV_STREAM_OPTION_PACKET_SOCKET_DISABLED);
    arv_camera_gv_set_packet_size(s.camera, settings_.packet_size, &err);
  }
  if (err || !refused.empty()) {
    *final = !link_error(err);
    *why = cam + ": " + (refused.empty() ? error_text(err) : refused);
    g_clear_error(&err);
    return false;
  }
  return start_stream(s, format, why);
}

// torchinfer's input-bits is set before the pipeline starts (from the
// configured pixel_format) and cannot change while it runs: a camera whose
// 10-16-bit format was not configured, or that sends another depth, would
// reach the model 16x too dark or clamped. Refused instead, saying the fix.
bool AravisSource::depth_matches(const std::string& format, std::string* why) const {
  const PixelFormatInfo* info = find_pixel_format(format);
  if (!infer_ || !sixteen_bit(info)) return true;
  gint bits = 0;
  g_object_get(infer_, "input-bits", &bits, nullptr);
  if (bits == info->bits) return true;
  *why = "pixel_format: the camera sends " + format + " (" + std::to_string(info->bits) +
         " significant bits) but the analysis was started for " + std::to_string(bits) +
         "-bit samples; set \"pixel_format\": \"" + format +
         "\" in the stream's configuration so torchinfer scales it from the start";
  return false;
}

bool AravisSource::start_stream(Session& s, const std::string& format, std::string* why) {
  GError* err = nullptr;
  gint width = 0, height = 0;
  arv_camera_get_region(s.camera, nullptr, nullptr, &width, &height, &err);
  if (!err && settings_.trigger == TriggerMode::kFreeRun &&
      arv_camera_is_frame_rate_available(s.camera, nullptr))
    s.fps = arv_camera_get_frame_rate(s.camera, &err);
  const guint payload = err ? 0 : arv_camera_get_payload(s.camera, &err);
  if (!err) s.stream = arv_camera_create_stream(s.camera, nullptr, nullptr, &err);
  if (!err && ARV_IS_GV_STREAM(s.stream))
    g_object_set(s.stream, "socket-buffer", ARV_GV_STREAM_SOCKET_BUFFER_AUTO, "packet-resend",
                 ARV_GV_STREAM_PACKET_RESEND_ALWAYS, nullptr);
  for (int i = 0; !err && i < kArvBuffers; ++i)
    arv_stream_push_buffer(s.stream, arv_buffer_new_allocate(payload));
  const PixelFormatInfo* info = find_pixel_format(format);
  if (!err) {
    // Variable rate for a triggered camera; the camera's rate otherwise.
    int num = 0, den = 1;
    if (s.fps > 0) gst_util_double_to_fraction(s.fps, &num, &den);
    GstCaps* caps = gst_caps_from_string(info->caps);
    gst_caps_set_simple(caps, "width", G_TYPE_INT, width, "height", G_TYPE_INT, height, "framerate",
                        GST_TYPE_FRACTION, num, den, nullptr);
    gst_app_src_set_caps(appsrc_, caps);
    gst_caps_unref(caps);
    loss_.restart();
    health_.restart(seconds_now());
    health_.set_stall_s(std::max(kStallMinS, s.fps > 0 ? 5.0 / s.fps : 0.0));
    arv_camera_start_acquisition(s.camera, &err);
  }
  if (!err && settings_.trigger == TriggerMode::kSoftware) prime(s);
  if (err) {
    *why = "camera '" + settings_.name + "': cannot start acquisition: " + error_text(err);
    g_clear_error(&err);
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  counters_.acquiring = true;
  counters_.pixel_format = format;
  counters_.bits = info->bits;
  counters_.width = width;
  counters_.height = height;
  return true;
}

// Aravis sizes a GigE Vision stream's socket buffer to the frame only when
// the first frame starts arriving, so the first frame of each connection
// overflows the kernel's default (net.core.rmem_default, 208 KiB) unless
// frames are smaller than that: in free-run that is one incomplete frame,
// counted; in software-trigger mode it would swallow the first trigger. So
// one trigger of our own goes first and its frame is discarded, not counted
// (Aravis' own statistics include it).
void AravisSource::prime(Session& s) {
  GError* err = nullptr;
  arv_camera_software_trigger(s.camera, &err);
  if (err) {
    g_clear_error(&err);
    return;
  }
  if (ArvBuffer* b = arv_stream_timeout_pop_buffer(s.stream, 2000000))
    arv_stream_push_buffer(s.stream, b);
}

// One software trigger at a time: the next goes out once the previous
// one's frame came (`framed`: a buffer just arrived), or its wait ran out
// (a trigger the camera did not act on: counted as failed).
void AravisSource::run_triggers(Session& s, bool framed) {
  const double now = seconds_now();
  std::uint64_t answered = 0, failed = 0;
  if (s.awaiting && (framed || now > *s.awaiting)) {
    (framed ? answered : failed)++;
    s.awaiting.reset();
  }
  bool send = false;
  if (!s.awaiting) {
    std::lock_guard<std::mutex> lock(mu_);
    send = pending_triggers_ > 0;
    if (send) pending_triggers_--;
  }
  if (send) {
    GError* err = nullptr;
    arv_camera_software_trigger(s.camera, &err);
    if (err) {
      failed++;
      g_printerr("torchinfer-server: camera '%s': software trigger failed: %s\n",
                 settings_.name.c_str(), error_text(err).c_str());
      // A camera that does not answer would cost each waiting trigger
      // Aravis' full GVCP retries: the connection is lost, the rest counted.
      if (link_error(err)) s.control_lost = true;
      g_clear_error(&err);
    } else {
      s.awaiting = now + kTriggerWaitS + settings_.exposure_us.value_or(0) / 1e6;
      health_.on_trigger(now);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  counters_.triggers += answered;
  counters_.trigger_failures += failed;
  counters_.triggers_pending = pending_triggers_ + (s.awaiting ? 1 : 0);
}

// The connection ends: the triggers it did not answer were not acted on.
void AravisSource::drop_triggers(Session& s) {
  std::lock_guard<std::mutex> lock(mu_);
  counters_.trigger_failures += pending_triggers_ + (s.awaiting ? 1 : 0);
  pending_triggers_ = 0;
  s.awaiting.reset();
  counters_.triggers_pending = 0;
}

// The camera's health from its totals (server/camera_health.h).
void AravisSource::judge(Session&) {
  const double now = seconds_now();
  std::lock_guard<std::mutex> lock(mu_);
  health_.on_counts(now, counters_.frames.received, counters_.frames.lost() + counters_.overflow);
  counters_.health = health_.verdict(now, settings_.trigger == TriggerMode::kFreeRun);
}

// Frames until stop(), a lost control channel or (free-run) a stall; *why
// says which of the last two.
void AravisSource::acquire(Session& s, std::string* why) {
  const bool triggered = settings_.trigger != TriggerMode::kFreeRun;
  const bool software = settings_.trigger == TriggerMode::kSoftware;
  const double stall_s = std::max(kStallMinS, s.fps > 0 ? 5.0 / s.fps : 0.0);
  auto last = std::chrono::steady_clock::now();
  bool framed = false;
  while (!stop_) {
    if (software) run_triggers(s, framed);
    // Short waits while triggered, so a queued trigger goes out promptly.
    ArvBuffer* b = arv_stream_timeout_pop_buffer(s.stream, triggered ? 10000 : 100000);
    const auto now = std::chrono::steady_clock::now();
    framed = b != nullptr;
    if (b) {
      last = now;
      hand_on(s, b);
    }
    update_statistics(s, false);
    judge(s);
    if (s.control_lost) {
      *why = "camera '" + settings_.name +
             "' vanished: its control channel stopped answering (unplugged, powered off or "
             "restarted)";
      return;
    }
    const double idle = std::chrono::duration<double>(now - last).count();
    if (!triggered && idle > stall_s) {
      *why = "camera '" + settings_.name + "' stopped sending frames (none for " +
             std::to_string(static_cast<int>(idle)) + " s in free-run)";
      return;
    }
  }
}

// Aravis' packet and buffer counts for this connection on top of the
// earlier connections' (`closing`: fold them in).
void AravisSource::update_statistics(Session& s, bool closing) {
  static const char* kNames[kStats] = {"n_completed_buffers", "n_failures",
                                       "n_missing_frames",    "n_missing_packets",
                                       "n_resent_packets",    "n_underruns"};
  std::uint64_t now[kStats];
  for (int i = 0; i < kStats; ++i) now[i] = base_[i] + stream_stat(s.stream, kNames[i]);
  if (closing) std::copy(now, now + kStats, base_);
  std::lock_guard<std::mutex> lock(mu_);
  std::uint64_t* out[kStats] = {&counters_.completed,      &counters_.failures,
                                &counters_.missing_frames, &counters_.packets_missing,
                                &counters_.packets_resent, &counters_.underruns};
  for (int i = 0; i < kStats; ++i) *out[i] = now[i];
}

// A complete frame goes to the appsrc (lent without a copy when its rows
// are already 4-byte aligned, GStreamer's layout, and Aravis has buffers to
// spare; else copied); every buffer goes back to the stream once done with.
void AravisSource::hand_on(Session& s, ArvBuffer* b) {
  const bool complete = arv_buffer_get_status(b) == ARV_BUFFER_STATUS_SUCCESS;
  loss_.on_buffer(arv_buffer_get_frame_id(b), complete);
  GstBuffer* out = nullptr;
  bool overflow = false;
  if (complete && gst_app_src_get_current_level_buffers(appsrc_) >= kMostQueued) {
    overflow = true;
  } else if (complete) {
    std::size_t size = 0;
    const auto* data = static_cast<const std::uint8_t*>(arv_buffer_get_image_data(b, &size));
    const int w = arv_buffer_get_image_width(b), h = arv_buffer_get_image_height(b);
    const std::size_t row = static_cast<std::size_t>(w) *
                            ARV_PIXEL_FORMAT_BIT_PER_PIXEL(arv_buffer_get_image_pixel_format(b)) /
                            8;
    const std::size_t stride = (row + 3) & ~std::size_t{3};
    // Lent only while Aravis keeps half its buffers: frames held downstream
    // (torchinfer's queue when the model is behind) must not starve the
    // stream, which would drop whole frames ("underruns").
    gint free_buffers = 0, unused = 0;
    arv_stream_get_n_buffers(s.stream, &free_buffers, &unused);
    if (data && w > 0 && h > 0 && size >= row * h) {
      if (stride == row && free_buffers >= kArvBuffers / 2) {
        out = gst_buffer_new_wrapped_full(
            GST_MEMORY_FLAG_READONLY, const_cast<std::uint8_t*>(data), row * h, 0, row * h,
            new Lent{static_cast<ArvStream*>(g_object_ref(s.stream)), b}, give_back);
        b = nullptr;
      } else {
        out = gst_buffer_new_and_alloc(stride * h);
        GstMapInfo map;
        gst_buffer_map(out, &map, GST_MAP_WRITE);
        for (int y = 0; y < h; ++y) std::memcpy(map.data + y * stride, data + y * row, row);
        gst_buffer_unmap(out, &map);
      }
    }
  }
  if (b) arv_stream_push_buffer(s.stream, b);
  // Nothing goes downstream once stop() may have returned (the EOS may be in).
  if (out && stop_)
    gst_buffer_unref(out);
  else if (out)
    gst_app_src_push_buffer(appsrc_, out);
  std::lock_guard<std::mutex> lock(mu_);
  counters_.frames = loss_.figures();
  counters_.overflow += overflow;
}

void AravisSource::close(Session& s) {
  drop_triggers(s);
  if (s.stream) {
    arv_camera_stop_acquisition(s.camera, nullptr);
    update_statistics(s, true);
    // Frames still downstream hold their own reference to the stream.
    g_object_unref(s.stream);
  }
  if (s.camera) {
    if (s.lost_handler)
      g_signal_handler_disconnect(arv_camera_get_device(s.camera), s.lost_handler);
    g_object_unref(s.camera);
  }
  std::lock_guard<std::mutex> lock(mu_);
  counters_.acquiring = false;
  counters_.health = CameraVerdict{};  // the connection's state says it now
}

}  // namespace torchinfer::server
