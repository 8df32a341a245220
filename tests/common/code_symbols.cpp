#include "code_symbols.h"

#include <ZXing/BarcodeFormat.h>
#include <ZXing/BitMatrix.h>
#include <ZXing/CharacterSet.h>
#include <ZXing/MultiFormatWriter.h>

#include <stdexcept>

namespace torchinfer::test {

namespace {

GreyCanvas rotated(const GreyCanvas& s, int rotation) {
  if (rotation % 360 == 0) return s;
  const bool swap = rotation % 180 != 0;
  GreyCanvas out(swap ? s.height : s.width, swap ? s.width : s.height);
  for (int y = 0; y < s.height; ++y)
    for (int x = 0; x < s.width; ++x) {
      const std::uint8_t v = s.pixels[static_cast<std::size_t>(y) * s.width + x];
      switch ((rotation % 360 + 360) % 360) {
        case 90:  // clockwise: (x, y) -> (h-1-y, x)
          out.at(s.height - 1 - y, x) = v;
          break;
        case 180:
          out.at(s.width - 1 - x, s.height - 1 - y) = v;
          break;
        default:  // 270
          out.at(y, s.width - 1 - x) = v;
      }
    }
  return out;
}

}  // namespace

GreyCanvas render_symbol(const std::string& format, const std::string& text, int module,
                         int rotation) {
  const ZXing::BarcodeFormat f = ZXing::BarcodeFormatFromString(format);
  if (f == ZXing::BarcodeFormat::None) throw std::invalid_argument("unknown format " + format);
  ZXing::MultiFormatWriter writer(f);
  // UTF-8 texts as UTF-8 (ECI), not as Latin-1.
  if (f == ZXing::BarcodeFormat::QRCode) writer.setEncoding(ZXing::CharacterSet::UTF8);
  writer.setMargin(f == ZXing::BarcodeFormat::Code128 ? 10 : 2);
  // Smallest size: one pixel a module (1D: one pixel a bar module, height 1).
  const ZXing::BitMatrix m = writer.encode(text, 1, 1);
  const int rows = f == ZXing::BarcodeFormat::Code128 ? 40 : m.height();
  GreyCanvas out(m.width() * module, rows * module);
  for (int y = 0; y < out.height; ++y)
    for (int x = 0; x < out.width; ++x) {
      const int my = f == ZXing::BarcodeFormat::Code128 ? 0 : y / module;
      out.at(x, y) = m.get(x / module, my) ? 0 : 255;
    }
  return rotated(out, rotation);
}

void paste(GreyCanvas& canvas, const GreyCanvas& symbol, int x0, int y0) {
  if (x0 < 0 || y0 < 0 || x0 + symbol.width > canvas.width || y0 + symbol.height > canvas.height)
    throw std::invalid_argument("the symbol does not fit in the canvas");
  for (int y = 0; y < symbol.height; ++y)
    for (int x = 0; x < symbol.width; ++x)
      canvas.at(x0 + x, y0 + y) = symbol.pixels[static_cast<std::size_t>(y) * symbol.width + x];
}

void noise(GreyCanvas& canvas, int x0, int y0, int w, int h, unsigned seed) {
  unsigned s = seed * 2654435761u + 1;
  for (int y = y0; y < y0 + h; ++y)
    for (int x = x0; x < x0 + w; ++x) {
      s = s * 1664525u + 1013904223u;
      canvas.at(x, y) = static_cast<std::uint8_t>(s >> 24);
    }
}

std::vector<std::uint8_t> to_yuy2(const GreyCanvas& c) {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(c.width) * c.height * 2, 128);
  for (std::size_t i = 0; i < c.pixels.size(); ++i) out[2 * i] = c.pixels[i];
  return out;
}

std::vector<std::uint8_t> to_nv12(const GreyCanvas& c, int y_stride) {
  const std::size_t luma = static_cast<std::size_t>(y_stride) * c.height;
  std::vector<std::uint8_t> out(luma + luma / 2, 128);
  for (int y = 0; y < c.height; ++y)
    for (int x = 0; x < c.width; ++x)
      out[static_cast<std::size_t>(y) * y_stride + x] =
          c.pixels[static_cast<std::size_t>(y) * c.width + x];
  return out;
}

}  // namespace torchinfer::test
