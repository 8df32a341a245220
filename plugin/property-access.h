// When an element property may be written, and the GParamSpec flags that
// follow from it: one column of every element's property table.
#pragma once

#include <gst/gst.h>

namespace torchinfer::gst {

enum class Access { kReady, kPlaying, kReadOnly };

inline GParamFlags flags_for(Access a) {
  const int rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;
  switch (a) {
    case Access::kReady:
      return static_cast<GParamFlags>(rw | GST_PARAM_MUTABLE_READY);
    case Access::kPlaying:
      return static_cast<GParamFlags>(rw | GST_PARAM_MUTABLE_PLAYING);
    default:
      return static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  }
}

}  // namespace torchinfer::gst
