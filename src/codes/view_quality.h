// Which of several views to read first: "a part not yet read is tried on
// each new view until it is, best view first where several are queued"
// (issue 35). A view's quality is what helps zxing-cpp: its pixels (a part
// seen larger, or whole rather than cut by the frame edge, has more pixels
// per module) times its sharpness (the mean absolute step between
// neighbouring luma samples: motion or focus blur flattens it), measured
// along a grid of rows and columns with about kQualitySamples crossings, so
// it costs tens of microseconds on the streaming thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "codes/code_reader.h"

namespace torchinfer {

constexpr int kQualitySamples = 4096;

// The quality of `area` (frame pixels, already clipped to the frame); 0 for
// an invalid view or an area with no pixel.
double view_quality(const LumaView& frame, const CodeBox& area);

// A view due for reading: its region index on the frame, whether its
// track's code is still unknown, its quality.
struct DueView {
  std::size_t region = 0;
  bool unread = false;
  double quality = 0;
};

// The order to read them in: views of tracks not yet read first (a part
// with no code yet needs the slot more than a re-read), then by quality,
// best first; ties keep the frame's order.
void order_best_first(std::vector<DueView>& views);

}  // namespace torchinfer
