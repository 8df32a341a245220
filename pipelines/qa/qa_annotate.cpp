#include "qa/qa_annotate.h"

#include <gst/video/video.h>

#include <cstdio>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <set>
#include <vector>

#include "common/file_check.h"

namespace torchinfer::qa {

void Annotator::set_parts(const std::vector<QaPart>& parts) {
  std::lock_guard<std::mutex> lock(mu_);
  current_.clear();
  for (const QaPart& p : parts)
    if (auto it = verdicts_.find(p.id); it != verdicts_.end())
      current_.push_back({p.box, it->second.first, it->second.second});
}

void Annotator::decided(const QaDecision& d) {
  std::string text = d.verdict == QaVerdict::kPass     ? "PASS"
                     : d.verdict == QaVerdict::kReject ? "REJECT"
                                                       : "INCOMPLETE";
  if (d.verdict == QaVerdict::kReject && !d.defects.empty()) text += " " + d.defects[0].first;
  std::lock_guard<std::mutex> lock(mu_);
  verdicts_[d.part] = {text, d.verdict == QaVerdict::kPass ? 1 : 2};
}

GstPadProbeReturn Annotator::probe(GstPad* pad, GstPadProbeInfo* info, gpointer self) {
  return static_cast<Annotator*>(self)->draw(pad, info);
}

GstPadProbeReturn Annotator::draw(GstPad* pad, GstPadProbeInfo* info) {
  GstCaps* caps = gst_pad_get_current_caps(pad);
  GstVideoInfo vi;
  const bool ok = caps && gst_video_info_from_caps(&vi, caps) &&
                  GST_VIDEO_INFO_FORMAT(&vi) == GST_VIDEO_FORMAT_BGR;
  if (caps) gst_caps_unref(caps);
  if (!ok) return GST_PAD_PROBE_OK;
  GstBuffer* buf = gst_buffer_make_writable(GST_PAD_PROBE_INFO_BUFFER(info));
  GST_PAD_PROBE_INFO_DATA(info) = buf;
  GstVideoFrame f;
  if (!gst_video_frame_map(&f, &vi, buf, GST_MAP_READWRITE)) return GST_PAD_PROBE_OK;
  cv::Mat bgr(GST_VIDEO_FRAME_HEIGHT(&f), GST_VIDEO_FRAME_WIDTH(&f), CV_8UC3,
              GST_VIDEO_FRAME_PLANE_DATA(&f, 0), GST_VIDEO_FRAME_PLANE_STRIDE(&f, 0));
  std::lock_guard<std::mutex> lock(mu_);
  std::set<std::string> kinds;
  for (const Text& t : current_) {
    const cv::Scalar colour = t.state == 1 ? cv::Scalar(40, 200, 40) : cv::Scalar(40, 40, 230);
    int base = 0;
    const cv::Size size = cv::getTextSize(t.text, cv::FONT_HERSHEY_SIMPLEX, 0.6, 2, &base);
    // Under the box, or inside its bottom edge when the frame ends there.
    int y = static_cast<int>(t.box.y_max) + size.height + 6;
    if (y > bgr.rows - 2) y = static_cast<int>(t.box.y_max) - 6;
    const int x = std::max(2, std::min(static_cast<int>(t.box.x_min), bgr.cols - size.width - 4));
    cv::rectangle(bgr, {x - 2, y - size.height - 4}, {x + size.width + 2, y + base},
                  cv::Scalar(0, 0, 0), cv::FILLED);
    cv::putText(bgr, t.text, {x, y}, cv::FONT_HERSHEY_SIMPLEX, 0.6, colour, 2, cv::LINE_AA);
    kinds.insert(t.text);
  }
  // The most kinds of verdict shown, then the most parts.
  const int score = static_cast<int>(kinds.size()) * 100 + static_cast<int>(current_.size());
  if (score > snapshot_score_) {
    snapshot_score_ = score;
    bgr.copyTo(snapshot_);
  }
  gst_video_frame_unmap(&f);
  return GST_PAD_PROBE_OK;
}

bool Annotator::write_snapshot(const std::string& path, std::string* why) const {
  std::vector<std::uint8_t> png;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (snapshot_.empty()) return false;
    if (!cv::imencode(".png", snapshot_, png)) {
      *why = "snapshot '" + path + "' cannot be encoded as PNG";
      return false;
    }
  }
  // Not cv::imwrite: its open() would wait forever on a FIFO nobody reads.
  try {
    write_output_file(path, "snapshot", std::string(png.begin(), png.end()));
  } catch (const std::exception& e) {
    *why = e.what();
    return false;
  }
  return true;
}

}  // namespace torchinfer::qa
