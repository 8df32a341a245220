// Reading a part's DataMatrix / QR / 1D code (zxing-cpp 1.4) straight from
// the camera's luma plane: a strided 8-bit view (the Y samples of YUY2 have a
// pixel stride of 2; NV12, I420 and GRAY8 a stride of 1), inside a region of
// the frame or over the whole frame. No GStreamer types; nothing here copies
// the frame (zxing-cpp itself packs a view with a pixel stride above 1 into a
// dense copy of the region it reads, and try-invert reads an inverted copy of
// the region).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace torchinfer {

// The luma samples of one frame; `bytes` is what may be read from `data`.
struct LumaView {
  const std::uint8_t* data = nullptr;
  std::size_t bytes = 0;
  int width = 0, height = 0;
  int pixel_stride = 1;  // bytes between horizontal neighbours
  int row_stride = 0;    // bytes between rows
};

// A box in frame pixels: [x_min, x_max) x [y_min, y_max).
struct CodeBox {
  double x_min = 0, y_min = 0, x_max = 0, y_max = 0;
  bool operator==(const CodeBox& o) const {
    return x_min == o.x_min && y_min == o.y_min && x_max == o.x_max && y_max == o.y_max;
  }
};

struct CodeOptions {
  // zxing-cpp format names ("DataMatrix", "QRCode", "Code128", ...; '|', ','
  // or ' ' between them); empty = every format zxing-cpp reads.
  std::string formats;
  bool try_harder = true;
  bool try_rotate = true;   // 1D codes at 90/270 degrees (2D ones read at any angle)
  bool try_invert = false;  // light-on-dark symbols: a second read of the inverted region
  double padding = 0.1;     // of the region's width/height, added on each side
};

// Texts are cut to this many bytes (on a UTF-8 character boundary): a
// symbol's text ends in metadata and JSON lines.
constexpr std::size_t kMaxCodeText = 1024;
// Views larger than this on a side are refused (no camera makes them; a
// corrupt caps could).
constexpr int kMaxCodeViewSide = 1 << 15;

struct CodeResult {
  std::string format;     // zxing-cpp's name: "DataMatrix", "QRCode", "Code128"
  std::string text;       // valid UTF-8, at most kMaxCodeText bytes
  bool text_cut = false;  // longer in the symbol
  CodeBox box;            // the symbol's corners' bounding box, frame pixels
  int orientation = 0;    // degrees, as zxing-cpp reports it
  // zxing-cpp 1.4 gives no quality grade; its error-correction level
  // ("L".."H" for QR, "" where the symbology has none) is what it gives.
  std::string ec_level;
};

enum class CodeReadStatus {
  kRead,      // at least one symbol
  kNotFound,  // a valid region, no symbol in it
  kRefused,   // an invalid view, or a region with no pixel inside the frame
  kFailed,    // zxing-cpp threw (out of memory, an internal error)
};

struct CodeRead {
  CodeReadStatus status = CodeReadStatus::kNotFound;
  std::vector<CodeResult> codes;  // in zxing-cpp's order
  std::string error;              // why, for kRefused / kFailed
};

// Empty if `v` can be read whole without reading outside `bytes`; else why.
std::string check_luma_view(const LumaView& v);

// `region` grown by `padding` (fraction of its width/height on each side)
// and clipped to a width x height frame, in whole pixels; nullopt if nothing
// of it is inside (or it is empty, or not finite).
std::optional<CodeBox> code_search_area(const CodeBox& region, double padding, int width,
                                        int height);

class CodeReader {
 public:
  // Throws std::invalid_argument naming an unknown format.
  explicit CodeReader(const CodeOptions& options);

  // The symbols in `region` (frame pixels, padded and clipped), or in the
  // whole frame without one. Never throws.
  CodeRead read(const LumaView& frame, const std::optional<CodeBox>& region) const;

  const CodeOptions& options() const { return options_; }

 private:
  CodeOptions options_;
  struct Hints;
  std::shared_ptr<const Hints> hints_;
};

// Empty if `formats` names only known formats; else the message.
std::string check_code_formats(const std::string& formats);

}  // namespace torchinfer
