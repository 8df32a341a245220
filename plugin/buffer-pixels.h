// A buffer's pixels as torchinfer's session reads them (FramePixels):
// mapped only for frames that go to the model.
#pragma once

#include <gst/video/video.h>

#include <cstddef>
#include <mutex>
#include <vector>

#include "stream/frame_inference.h"
#include "video-frame.h"

namespace torchinfer::gst {

// A buffer's pixels, mapped only for frames that go to the model. Holds the
// chain's reference: a flush may drop the queue's meanwhile. One per frame in
// flight, recycled through a free list: the chain allocates nothing per frame.
class BufferPixels : public FramePixels {
 public:
  static void* operator new(std::size_t size) {
    {
      std::lock_guard<std::mutex> lock(free_lock());
      if (size == sizeof(BufferPixels) && !free_list().empty()) {
        void* p = free_list().back();
        free_list().pop_back();
        return p;
      }
    }
    return ::operator new(size);
  }
  static void operator delete(void* p, std::size_t size) {
    {
      std::lock_guard<std::mutex> lock(free_lock());
      if (size == sizeof(BufferPixels) && free_list().size() < free_list().capacity()) {
        free_list().push_back(p);
        return;
      }
    }
    ::operator delete(p);
  }

  BufferPixels(GstVideoInfo* info, PixelFormat format, GstBuffer* buf)
      : info_(info), format_(format), buf_(buf) {}
  ~BufferPixels() override {
    unmap();
    gst_buffer_unref(buf_);
  }
  bool map(FrameView* view) override {
    if (!mapped_) mapped_ = gst_video_frame_map(&frame_, info_, buf_, GST_MAP_READ);
    if (!mapped_) return false;
    *view = frame_view(frame_, format_);
    return true;
  }
  void unmap() override {
    if (mapped_) gst_video_frame_unmap(&frame_);
    mapped_ = false;
  }

 private:
  // Never freed: every torchinfer in the process shares them, and exit
  // order is not ours to rely on.
  static std::mutex& free_lock() {
    static auto* m = new std::mutex;
    return *m;
  }
  static std::vector<void*>& free_list() {
    static auto* v = [] {
      auto* l = new std::vector<void*>;
      l->reserve(256);
      return l;
    }();
    return *v;
  }

  GstVideoInfo* info_;
  PixelFormat format_;  // Bayer frames map as GRAY8
  GstBuffer* buf_;
  GstVideoFrame frame_;
  bool mapped_ = false;
};

}  // namespace torchinfer::gst
