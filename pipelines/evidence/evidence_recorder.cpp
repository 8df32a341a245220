#include "evidence/evidence_recorder.h"

#include <gst/app/gstappsink.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <exception>
#include <utility>

#include "evidence/clip_writer.h"
#include "evidence/core/jpeg_snapshot.h"

namespace torchinfer {

namespace {

constexpr std::int64_t kSecond = 1000000000;

std::int64_t ns(double s) {
  return static_cast<std::int64_t>(std::llround(s * 1e9));
}

// The ring keeps pre_s + post_s and a second more: a clip is cut once the
// stream is post_s past its event, a little later than that on a loaded box.
std::int64_t ring_span(const evidence::EvidenceSettings& s) {
  return ns(s.pre_s + s.post_s) + kSecond;
}

}  // namespace

// A job for the writer thread: the snapshot and crop of one event (`frame`
// set), or its clip.
struct EvidenceRecorder::Job {
  std::uint64_t n = 0;
  GstBuffer* frame = nullptr;  // owned; the snapshot's frame
  GstVideoInfo info{};
  cv::Rect box;
  std::string label;   // evidence::snapshot_caption
  bool alarm = false;  // a reject: drawn red
  PendingClip clip{};
  std::vector<evidence::EncodedFrame> frames;  // the clip's

  Job() = default;
  Job(Job&& o) noexcept
      : n(o.n),
        frame(std::exchange(o.frame, nullptr)),
        info(o.info),
        box(o.box),
        label(std::move(o.label)),
        alarm(o.alarm),
        clip(o.clip),
        frames(std::move(o.frames)) {}
  ~Job() {
    if (frame) gst_buffer_unref(frame);
  }
};

EvidenceRecorder::EvidenceRecorder(std::shared_ptr<evidence::EvidenceStore> store,
                                   RecorderOptions options)
    : store_(std::move(store)),
      options_(std::move(options)),
      ring_(ring_span(store_->settings()), store_->settings().ring_max_bytes) {
  worker_ = std::thread([this] { work(); });
}

EvidenceRecorder::~EvidenceRecorder() {
  finish();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  worker_.join();
  if (caps_) gst_caps_unref(caps_);
  if (queue_) gst_object_unref(queue_);
  if (appsink_) gst_object_unref(appsink_);
}

GstPadProbeReturn EvidenceRecorder::count_in(GstPad*, GstPadProbeInfo*, gpointer self) {
  static_cast<EvidenceRecorder*>(self)->queued_in_++;
  return GST_PAD_PROBE_OK;
}

GstPadProbeReturn EvidenceRecorder::count_out(GstPad*, GstPadProbeInfo*, gpointer self) {
  static_cast<EvidenceRecorder*>(self)->queued_out_++;
  return GST_PAD_PROBE_OK;
}

namespace {

GstElement* make(GstElement* pipeline, const char* factory, std::string* why) {
  GstElement* e = gst_element_factory_make(factory, nullptr);
  if (!e) {
    if (why->empty()) *why = std::string("GStreamer element '") + factory + "' is not installed";
    return nullptr;
  }
  gst_bin_add(GST_BIN(pipeline), e);
  return e;
}

// The ring's encoder: every frame a JPEG, or H.264 with a keyframe a second
// (x264enc where installed, else openh264enc from plugins-bad).
GstElement* make_encoder(GstElement* pipeline, const RecorderOptions& o, std::string* why) {
  if (o.encoder == "jpeg") {
    GstElement* e = make(pipeline, "jpegenc", why);
    if (e) g_object_set(e, "quality", o.jpeg_quality, nullptr);
    return e;
  }
  if (GstElementFactory* f = gst_element_factory_find("x264enc")) {
    gst_object_unref(f);
    GstElement* e = make(pipeline, "x264enc", why);
    gst_util_set_object_arg(G_OBJECT(e), "speed-preset", "ultrafast");
    gst_util_set_object_arg(G_OBJECT(e), "tune", "zerolatency");
    g_object_set(e, "key-int-max", 30u, "threads", 1u, nullptr);
    return e;
  }
  GstElement* e = make(pipeline, "openh264enc", why);
  if (e) g_object_set(e, "gop-size", 30u, "multi-thread", 1u, "bitrate", 4000000u, nullptr);
  if (e) gst_util_set_object_arg(G_OBJECT(e), "complexity", "low");
  if (e) gst_util_set_object_arg(G_OBJECT(e), "rate-control", "bitrate");
  return e;
}

}  // namespace

bool EvidenceRecorder::attach(GstElement* pipeline, GstElement* tee, std::string* why) {
  std::string local;
  if (!why) why = &local;
  const bool h264 = options_.encoder != "jpeg";
  GstElement* queue = make(pipeline, "queue", why);
  GstElement* convert = make(pipeline, "videoconvert", why);
  // 8-bit 4:2:0 for H.264: what every decoder plays (x264enc would keep a
  // 4:4:4 or 10-bit input as such).
  GstElement* i420 = h264 ? make(pipeline, "capsfilter", why) : nullptr;
  GstElement* encoder = make_encoder(pipeline, options_, why);
  GstElement* parse = h264 ? make(pipeline, "h264parse", why) : nullptr;
  GstElement* sink = make(pipeline, "appsink", why);
  if (!why->empty()) return false;
  if (h264) {
    GstCaps* raw = gst_caps_from_string("video/x-raw,format=I420");
    g_object_set(i420, "caps", raw, nullptr);
    gst_caps_unref(raw);
    // Byte-stream with SPS/PPS before every keyframe: a clip can start at
    // any keyframe of the ring.
    GstCaps* coded = gst_caps_from_string("video/x-h264,stream-format=byte-stream,alignment=au");
    g_object_set(sink, "caps", coded, nullptr);
    gst_caps_unref(coded);
    g_object_set(parse, "config-interval", -1, nullptr);
  }
  // About a second of frames; a queue that fills drops its oldest frames
  // (counted: in - out).
  g_object_set(queue, "leaky", 2, "max-size-buffers", options_.queue_frames, "max-size-bytes",
               options_.queue_bytes, "max-size-time", G_GUINT64_CONSTANT(0), nullptr);
  g_object_set(sink, "sync", FALSE, "async", FALSE, "emit-signals", TRUE, nullptr);
  g_signal_connect(sink, "new-sample", G_CALLBACK(on_sample), this);
  std::vector<GstElement*> chain = {queue, convert};
  if (i420) chain.push_back(i420);
  chain.push_back(encoder);
  if (parse) chain.push_back(parse);
  chain.push_back(sink);
  for (std::size_t i = 0; i + 1 < chain.size(); ++i)
    if (!gst_element_link(chain[i], chain[i + 1])) {
      *why = std::string("cannot link ") + GST_ELEMENT_NAME(chain[i]) + " to " +
             GST_ELEMENT_NAME(chain[i + 1]);
      return false;
    }
  if (!gst_element_link(tee, queue)) {
    *why = "cannot link the tee to the evidence branch";
    return false;
  }
  queue_ = GST_ELEMENT(gst_object_ref(queue));
  if (h264) appsink_ = GST_ELEMENT(gst_object_ref(sink));
  GstPad* in = gst_element_get_static_pad(queue, "sink");
  GstPad* out = gst_element_get_static_pad(queue, "src");
  gst_pad_add_probe(in, GST_PAD_PROBE_TYPE_BUFFER, count_in, this, nullptr);
  gst_pad_add_probe(out, GST_PAD_PROBE_TYPE_BUFFER, count_out, this, nullptr);
  gst_object_unref(in);
  gst_object_unref(out);
  // In a pipeline already playing the branch must catch up.
  for (GstElement* e : chain) gst_element_sync_state_with_parent(e);
  return true;
}

GstFlowReturn EvidenceRecorder::on_sample(GstElement* sink, gpointer self) {
  GstSample* sample = gst_app_sink_pull_sample(GST_APP_SINK(sink));
  if (!sample) return GST_FLOW_EOS;
  try {
    static_cast<EvidenceRecorder*>(self)->take_sample(sample);
  } catch (...) {
    // A frame the ring did not get (out of memory): the clip is shorter,
    // which the clip's length shows; the stream goes on.
  }
  gst_sample_unref(sample);
  return GST_FLOW_OK;
}

void EvidenceRecorder::take_sample(GstSample* sample) {
  GstBuffer* buf = gst_sample_get_buffer(sample);
  if (!buf || !GST_BUFFER_PTS_IS_VALID(buf)) return;
  // Encoders move their output's timestamps (x264enc by 1000 hours, with a
  // segment to match): back to running time, the events' clock. Not stream
  // time: a looped file (the server's segment seeks) starts its stream time
  // again at 0 each time round, its running time goes on.
  const GstSegment* seg = gst_sample_get_segment(sample);
  const guint64 running =
      seg ? gst_segment_to_running_time(seg, GST_FORMAT_TIME, GST_BUFFER_PTS(buf))
          : GST_BUFFER_PTS(buf);
  if (!GST_CLOCK_TIME_IS_VALID(running)) return;
  GstMapInfo map;
  if (!gst_buffer_map(buf, &map, GST_MAP_READ)) return;
  evidence::EncodedFrame f;
  f.pts_ns = static_cast<std::int64_t>(running);
  f.duration_ns = GST_BUFFER_DURATION_IS_VALID(buf) ? GST_BUFFER_DURATION(buf) : 0;
  f.keyframe = !GST_BUFFER_FLAG_IS_SET(buf, GST_BUFFER_FLAG_DELTA_UNIT);
  f.data = std::make_shared<const std::vector<std::uint8_t>>(map.data, map.data + map.size);
  gst_buffer_unmap(buf, &map);
  {
    std::lock_guard<std::mutex> lock(mu_);
    GstCaps* caps = gst_sample_get_caps(sample);
    if (!caps_ && caps) caps_ = gst_caps_ref(caps);
  }
  const std::int64_t pts = f.pts_ns;
  const std::size_t size = f.data->size();
  ask_keyframe(f.keyframe, pts, f.duration_ns);
  ring_.push(std::move(f));
  ring_peak_ = std::max(ring_peak_.load(), ring_.bytes());
  encoded_++;
  encoded_bytes_ += size;
  release_due_clips(pts, false);
}

// A keyframe at least every second of stream time, whatever the camera's
// rate (the encoder's GOP is in frames; x264enc takes no new one while
// playing): past a second without one, the encoder is asked for one.
// The request takes effect on the next frame in: asked when that frame
// (pts + duration) is a second past the last keyframe.
void EvidenceRecorder::ask_keyframe(bool keyframe, std::int64_t pts, std::int64_t duration) {
  if (keyframe || last_keyframe_ < 0) {
    if (keyframe) last_keyframe_ = pts;
    keyframe_asked_ = false;
    return;
  }
  if (keyframe_asked_ || pts + duration - last_keyframe_ < kSecond - kSecond / 100) return;
  keyframe_asked_ = true;
  if (appsink_)
    gst_element_send_event(
        appsink_, gst_video_event_new_upstream_force_key_unit(GST_CLOCK_TIME_NONE, TRUE, 0));
}

// Clips whose end the stream has reached (a frame at or past it is in the
// ring) go to the writer with their frames: taken now, on the streaming
// thread (shared references, no copy), since the ring moves on while the
// writer is busy.
void EvidenceRecorder::release_due_clips(std::int64_t newest_ns, bool all) {
  std::vector<PendingClip> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto split = std::stable_partition(pending_.begin(), pending_.end(), [&](const PendingClip& c) {
      return !all && c.to_ns > newest_ns;
    });
    due.assign(split, pending_.end());
    pending_.erase(split, pending_.end());
  }
  for (const PendingClip& c : due) {
    Job job;
    job.n = c.n;
    job.clip = c;
    job.frames = ring_.extract(c.from_ns, c.to_ns);
    enqueue(std::move(job));
  }
}

evidence::EventRecord EvidenceRecorder::record(evidence::EventRecord e, GstBuffer* frame,
                                               const GstVideoInfo& info, const cv::Rect& box) {
  try {
    e = store_->begin(std::move(e));
  } catch (...) {
    return e;  // begin() does no I/O; nothing to count if it could not run
  }
  const auto& s = store_->settings();
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back({e.n, e.pts_ns - ns(s.pre_s), e.pts_ns + ns(s.post_s), e.clip});
  }
  if (snapshots_waiting_.load() >= options_.max_pending_snapshots || !frame) {
    snapshots_dropped_++;
    const std::string why =
        frame ? "the evidence writer is behind: snapshot not taken" : "no frame for the snapshot";
    store_->count_failure(e.n, "snapshot", why);
    if (!box.empty()) store_->count_failure(e.n, "crop", why);
    return e;
  }
  Job job;
  job.n = e.n;
  job.info = info;
  job.box = box;
  job.label = evidence::snapshot_caption(e);
  job.alarm = evidence::snapshot_alarm(e);
  // A pooled buffer (a camera's) goes back to its pool now: the writer gets
  // a copy. A buffer of nobody's pool (the QA app's copy) is only referenced.
  job.frame = frame->pool ? gst_buffer_copy_deep(frame) : gst_buffer_ref(frame);
  snapshots_waiting_++;
  enqueue(std::move(job));
  return e;
}

void EvidenceRecorder::enqueue(Job job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
}

void EvidenceRecorder::work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stop_ and nothing left
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    busy_ = true;
    lock.unlock();
    run_job(job);
    lock.lock();
    busy_ = false;
    if (jobs_.empty()) idle_.notify_all();
  }
}

void EvidenceRecorder::run_job(Job& job) {
  const bool images = job.frame != nullptr;
  try {
    if (images)
      write_images(job);
    else
      write_clip(job);
  } catch (const std::exception& e) {
    store_->count_failure(job.n, images ? "snapshot" : "clip", e.what());
  } catch (...) {
    store_->count_failure(job.n, images ? "snapshot" : "clip", "unknown error");
  }
  if (images) snapshots_waiting_--;
}

namespace {

// The mapped frame as the JPEG encoder's RawImage (planes, strides).
bool raw_image(const GstVideoFrame& vf, server::RawImage* img) {
  const char* name = gst_video_format_to_string(GST_VIDEO_FRAME_FORMAT(&vf));
  if (!name || !server::raw_format_from_name(name, &img->format)) return false;
  img->width = GST_VIDEO_FRAME_WIDTH(&vf);
  img->height = GST_VIDEO_FRAME_HEIGHT(&vf);
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&vf) && p < 3; ++p) {
    img->planes[p] = static_cast<const std::uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&vf, p));
    img->strides[p] = GST_VIDEO_FRAME_PLANE_STRIDE(&vf, p);
  }
  return true;
}

}  // namespace

void EvidenceRecorder::write_images(Job& job) {
  GstVideoFrame vf;
  if (!gst_video_frame_map(&vf, &job.info, job.frame, GST_MAP_READ)) {
    store_->count_failure(job.n, "snapshot", "the frame does not match its caps");
    if (!job.box.empty()) store_->count_failure(job.n, "crop", "the frame does not match its caps");
    return;
  }
  server::RawImage img;
  if (!raw_image(vf, &img)) {
    gst_video_frame_unmap(&vf);
    const std::string why = std::string("frame format ") +
                            gst_video_format_to_string(GST_VIDEO_INFO_FORMAT(&job.info)) +
                            " has no JPEG conversion";
    store_->count_failure(job.n, "snapshot", why);
    if (!job.box.empty()) store_->count_failure(job.n, "crop", why);
    return;
  }
  const server::SnapshotBox b{job.box.x,      job.box.y, job.box.width,
                              job.box.height, job.label, job.alarm};
  try {
    server::RawImage drawn = img;
    if (!job.box.empty()) drawn.boxes.push_back(b);
    const auto jpeg = server::encode_jpeg(drawn, options_.snapshot_quality);
    store_->write(job.n, "snapshot", jpeg.data(), jpeg.size());
    if (!job.box.empty()) {
      const auto crop = server::encode_jpeg_region(img, b, options_.snapshot_quality);
      store_->write(job.n, "crop", crop.data(), crop.size());
    }
  } catch (const std::exception& e) {
    gst_video_frame_unmap(&vf);
    throw;
  }
  gst_video_frame_unmap(&vf);
}

void EvidenceRecorder::write_clip(Job& job) {
  const auto& frames = job.frames;
  GstCaps* caps = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (caps_) caps = gst_caps_ref(caps_);
  }
  if (frames.empty() || !caps) {
    if (caps) gst_caps_unref(caps);
    clips_short_++;
    store_->count_failure(job.n, "clip", job.clip.path + ": no encoded frames for its time");
    return;
  }
  const auto& s = store_->settings();
  std::string tmp;
  const int fd = store_->create_temp(job.n, "clip", &tmp);  // a failure is counted there
  if (fd < 0) {
    gst_caps_unref(caps);
    return;
  }
  std::string why;
  const double seconds = evidence::write_clip(frames, caps, fd, &why);
  gst_caps_unref(caps);
  if (seconds >= 0 && ::fsync(fd) != 0) why = std::string("fsync: ") + std::strerror(errno);
  if (::close(fd) != 0 && why.empty()) why = std::string("close: ") + std::strerror(errno);
  if (seconds < 0 || !why.empty()) {
    store_->discard_temp(tmp);
    store_->count_failure(job.n, "clip", job.clip.path + ": " + why);
    return;
  }
  const double asked = s.pre_s + s.post_s;
  const double frame_s = frames.front().duration_ns / 1e9;
  if (seconds + frame_s + 1e-3 < asked) clips_short_++;
  store_->adopt_temp(job.n, "clip", tmp, seconds);
}

void EvidenceRecorder::finish() {
  release_due_clips(0, true);
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return jobs_.empty() && !busy_; });
}

RecorderLosses EvidenceRecorder::losses() const {
  RecorderLosses l;
  const std::uint64_t in = queued_in_, out = queued_out_;
  guint level = 0;
  if (queue_) g_object_get(queue_, "current-level-buffers", &level, nullptr);
  l.queue_dropped = in > out + level ? in - out - level : 0;
  l.ring_evicted_early = ring_.evicted_early();
  l.clips_short = clips_short_;
  l.snapshots_dropped = snapshots_dropped_;
  l.frames_encoded = encoded_;
  l.ring_peak_bytes = ring_peak_;
  l.bytes_encoded = encoded_bytes_;
  return l;
}

evidence::EvidenceCounters EvidenceRecorder::counters() const {
  return store_->counters();
}

std::size_t EvidenceRecorder::ring_bytes() const {
  return ring_.bytes();
}

std::size_t EvidenceRecorder::ring_frames() const {
  return ring_.frames();
}

}  // namespace torchinfer
