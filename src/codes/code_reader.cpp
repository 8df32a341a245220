#include "codes/code_reader.h"

// zxing-cpp 1.4's Result::text() is a std::wstring unless this is defined.
#define ZX_USE_UTF8 1
#include <ZXing/BarcodeFormat.h>
#include <ZXing/DecodeHints.h>
#include <ZXing/ReadBarcode.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <stdexcept>

#include "common/utf8.h"

namespace torchinfer {

struct CodeReader::Hints {
  ZXing::DecodeHints hints;
};

namespace {

ZXing::BarcodeFormats parse_formats(const std::string& formats) {
  // zxing-cpp throws std::invalid_argument naming the unknown token.
  return ZXing::BarcodeFormatsFromString(formats);
}

// Cut on a character boundary: a continuation byte never starts the cut.
std::string bounded_text(std::string text, bool* cut) {
  if (!is_valid_utf8(text)) text = printable(text, kMaxCodeText);
  *cut = text.size() > kMaxCodeText;
  if (!*cut) return text;
  std::size_t n = kMaxCodeText;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  text.resize(n);
  return text;
}

CodeResult to_code(const ZXing::Result& r, double x0, double y0) {
  CodeResult c;
  c.format = ZXing::ToString(r.format());
  c.text = bounded_text(r.text(), &c.text_cut);
  const auto& p = r.position();
  double xs[4], ys[4];
  for (int i = 0; i < 4; ++i) {
    xs[i] = p[i].x;
    ys[i] = p[i].y;
  }
  // 2D symbols' corners lie on their outer edge; a 1D symbol's span the
  // first and last rows and the bars it was read on.
  c.box = {x0 + *std::min_element(xs, xs + 4), y0 + *std::min_element(ys, ys + 4),
           x0 + *std::max_element(xs, xs + 4), y0 + *std::max_element(ys, ys + 4)};
  c.orientation = r.orientation();
  c.ec_level = r.ecLevel();
  return c;
}

std::vector<CodeResult> read_view(const ZXing::ImageView& view, const ZXing::DecodeHints& hints,
                                  double x0, double y0) {
  std::vector<CodeResult> out;
  for (const ZXing::Result& r : ZXing::ReadBarcodes(view, hints))
    if (r.isValid()) out.push_back(to_code(r, x0, y0));
  return out;
}

// zxing-cpp 1.4 has no inverted pass: the region's samples, inverted, in a
// dense buffer of its own.
std::vector<CodeResult> read_inverted(const LumaView& f, int x0, int y0, int w, int h,
                                      const ZXing::DecodeHints& hints) {
  std::vector<std::uint8_t> inv(static_cast<std::size_t>(w) * h);
  for (int y = 0; y < h; ++y) {
    const std::uint8_t* row = f.data + static_cast<std::size_t>(y0 + y) * f.row_stride +
                              static_cast<std::size_t>(x0) * f.pixel_stride;
    for (int x = 0; x < w; ++x)
      inv[static_cast<std::size_t>(y) * w + x] =
          255 - row[static_cast<std::size_t>(x) * f.pixel_stride];
  }
  return read_view(ZXing::ImageView(inv.data(), w, h, ZXing::ImageFormat::Lum), hints, x0, y0);
}

}  // namespace

std::string check_luma_view(const LumaView& v) {
  if (!v.data) return "no pixels";
  if (v.width < 1 || v.height < 1 || v.width > kMaxCodeViewSide || v.height > kMaxCodeViewSide)
    return "frame size " + std::to_string(v.width) + "x" + std::to_string(v.height) +
           " is outside 1.." + std::to_string(kMaxCodeViewSide);
  if (v.pixel_stride < 1 || v.pixel_stride > 8) return "pixel stride outside 1..8";
  const std::uint64_t row_span = std::uint64_t(v.width - 1) * v.pixel_stride + 1;
  if (v.row_stride < 0 || std::uint64_t(v.row_stride) < row_span)
    return "row stride " + std::to_string(v.row_stride) + " is shorter than a row";
  const std::uint64_t needed = std::uint64_t(v.height - 1) * std::uint64_t(v.row_stride) + row_span;
  if (needed > v.bytes)
    return "the view needs " + std::to_string(needed) + " bytes, the buffer has " +
           std::to_string(v.bytes);
  return {};
}

std::optional<CodeBox> code_search_area(const CodeBox& r, double padding, int width, int height) {
  if (!std::isfinite(r.x_min) || !std::isfinite(r.y_min) || !std::isfinite(r.x_max) ||
      !std::isfinite(r.y_max) || !std::isfinite(padding) || padding < 0)
    return std::nullopt;
  if (r.x_max <= r.x_min || r.y_max <= r.y_min) return std::nullopt;
  const double px = (r.x_max - r.x_min) * padding, py = (r.y_max - r.y_min) * padding;
  const double x0 = std::clamp(std::floor(r.x_min - px), 0.0, double(width));
  const double y0 = std::clamp(std::floor(r.y_min - py), 0.0, double(height));
  const double x1 = std::clamp(std::ceil(r.x_max + px), 0.0, double(width));
  const double y1 = std::clamp(std::ceil(r.y_max + py), 0.0, double(height));
  if (x1 - x0 < 1 || y1 - y0 < 1) return std::nullopt;
  return CodeBox{x0, y0, x1, y1};
}

std::string check_code_formats(const std::string& formats) {
  try {
    parse_formats(formats);
    return {};
  } catch (const std::exception& e) {
    return printable(e.what(), 200) +
           " (known: DataMatrix, QRCode, MicroQRCode, Aztec, PDF417, MaxiCode, Code128, Code39, "
           "Code93, Codabar, EAN-8, EAN-13, UPC-A, UPC-E, ITF, DataBar, DataBarExpanded)";
  }
}

CodeReader::CodeReader(const CodeOptions& options) : options_(options) {
  const std::string bad = check_code_formats(options.formats);
  if (!bad.empty()) throw std::invalid_argument("formats: " + bad);
  auto h = std::make_shared<Hints>();
  const ZXing::BarcodeFormats formats = parse_formats(options.formats);
  h->hints.setFormats(formats);
  h->hints.setTryHarder(options.try_harder);
  h->hints.setTryRotate(options.try_rotate);
  // Downscaling (zxing-cpp's second look at views over 500 px, smaller)
  // stays off when 1D formats are read: zxing-cpp 1.4 aborts the process
  // (an assert in Result::operator==, kept in Debian's build) when a 1D
  // symbol read on several lines is found again in the downscaled copy
  // (a Code 128 turned a few degrees in a 1280x720 frame does it;
  // test_code_downscale.cpp). Matrix-only readers keep it.
  const bool linear = formats.empty() ||
                      formats.testFlags(ZXing::BarcodeFormats(ZXing::BarcodeFormat::LinearCodes));
  h->hints.setTryDownscale(!linear);
  hints_ = std::move(h);
}

CodeRead CodeReader::read(const LumaView& f, const std::optional<CodeBox>& region) const {
  CodeRead out;
  out.error = check_luma_view(f);
  if (!out.error.empty()) {
    out.status = CodeReadStatus::kRefused;
    return out;
  }
  CodeBox area{0, 0, double(f.width), double(f.height)};
  if (region) {
    const std::optional<CodeBox> a = code_search_area(*region, options_.padding, f.width, f.height);
    if (!a) {
      out.status = CodeReadStatus::kRefused;
      out.error = "the region has no pixel inside the frame";
      return out;
    }
    area = *a;
  }
  const int x0 = int(area.x_min), y0 = int(area.y_min);
  const int w = int(area.x_max) - x0, h = int(area.y_max) - y0;
  try {
    const ZXing::ImageView whole(f.data, f.width, f.height, ZXing::ImageFormat::Lum, f.row_stride,
                                 f.pixel_stride);
    out.codes = read_view(whole.cropped(x0, y0, w, h), hints_->hints, x0, y0);
    if (out.codes.empty() && options_.try_invert)
      out.codes = read_inverted(f, x0, y0, w, h, hints_->hints);
  } catch (const std::exception& e) {
    out.status = CodeReadStatus::kFailed;
    out.error = std::string("zxing-cpp: ") + e.what();
    return out;
  } catch (...) {
    out.status = CodeReadStatus::kFailed;
    out.error = "zxing-cpp: unknown error";
    return out;
  }
  out.status = out.codes.empty() ? CodeReadStatus::kNotFound : CodeReadStatus::kRead;
  return out;
}

}  // namespace torchinfer
