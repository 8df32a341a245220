// Test symbols for torchcodes: DataMatrix / QR / Code 128 rendered here by
// zxing-cpp's own writer into an 8-bit grey canvas, and the canvas laid out
// as the luma of the camera formats torchcodes reads (GRAY8, YUY2, NV12).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace torchinfer::test {

// A grey image, one byte a pixel, rows packed.
struct GreyCanvas {
  int width = 0, height = 0;
  std::vector<std::uint8_t> pixels;
  GreyCanvas(int w, int h, std::uint8_t fill = 255)
      : width(w), height(h), pixels(static_cast<std::size_t>(w) * h, fill) {}
  std::uint8_t& at(int x, int y) { return pixels[static_cast<std::size_t>(y) * width + x]; }
};

// The symbol of `text` in zxing-cpp format `format` ("DataMatrix", "QRCode",
// "Code128"), `module` pixels a module, with its quiet zone, black on white,
// turned by `rotation` (0, 90, 180, 270 degrees clockwise).
GreyCanvas render_symbol(const std::string& format, const std::string& text, int module,
                         int rotation = 0);

// `symbol` copied into `canvas` with its top-left corner at (x, y).
void paste(GreyCanvas& canvas, const GreyCanvas& symbol, int x, int y);

// Pseudo-random grey noise (deterministic in `seed`) over a box.
void noise(GreyCanvas& canvas, int x, int y, int w, int h, unsigned seed);

// The canvas as a YUY2 frame (Y0 U Y1 V, U = V = 128; width even).
std::vector<std::uint8_t> to_yuy2(const GreyCanvas& c);

// The canvas as an NV12 frame: Y rows of `y_stride` bytes, then the
// interleaved chroma plane (128).
std::vector<std::uint8_t> to_nv12(const GreyCanvas& c, int y_stride);

}  // namespace torchinfer::test
