// zxing-cpp 1.4 aborts the whole process (an assert in Result::operator==;
// Debian's build keeps asserts) when a 1D symbol read on several lines of a
// large view is found again in zxing-cpp's downscaled copy of the view:
// seen on 1280x720 frames with a Code 128 turned by a few degrees
// (tests/bench/codes_vs_zxing.py). CodeReader keeps downscaling off when
// 1D formats are read.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "code_symbols.h"
#include "codes/code_reader.h"

using namespace torchinfer;
using torchinfer::test::GreyCanvas;

namespace {

// `symbol` turned by `degrees` about its centre, drawn (nearest sample)
// centred at (cx, cy) on a light canvas.
void paste_turned(GreyCanvas& canvas, const GreyCanvas& symbol, double degrees, double cx,
                  double cy) {
  const double a = degrees * M_PI / 180, c = std::cos(a), s = std::sin(a);
  const double r = std::hypot(symbol.width, symbol.height) / 2 + 2;
  for (int y = static_cast<int>(cy - r); y <= static_cast<int>(cy + r); ++y)
    for (int x = static_cast<int>(cx - r); x <= static_cast<int>(cx + r); ++x) {
      const double dx = x - cx, dy = y - cy;
      const int u = static_cast<int>(std::floor(c * dx + s * dy + symbol.width / 2.0));
      const int v = static_cast<int>(std::floor(-s * dx + c * dy + symbol.height / 2.0));
      if (u < 0 || v < 0 || u >= symbol.width || v >= symbol.height) continue;
      canvas.at(x, y) = symbol.pixels[static_cast<std::size_t>(v) * symbol.width + u] ? 200 : 40;
    }
}

GreyCanvas tilted_code128_frame() {
  GreyCanvas f(1280, 720, 200);
  paste_turned(f, test::render_symbol("Code128", "PART-000000", 3), 5, 896, 360);
  return f;
}

CodeRead read_frame(const GreyCanvas& f) {
  const CodeReader reader(CodeOptions{});
  return reader.read({f.pixels.data(), f.pixels.size(), f.width, f.height, 1, f.width},
                     std::nullopt);
}

}  // namespace

// In a child process first: before the fix the read aborts the child.
TEST(CodeReaderDownscale, ATiltedCode128InALargeFrameIsReadWithoutAborting) {
  const GreyCanvas f = tilted_code128_frame();
  EXPECT_EXIT(
      {
        read_frame(f);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
  if (HasFailure()) return;  // it would abort this process too
  const CodeRead r = read_frame(f);
  ASSERT_EQ(r.status, CodeReadStatus::kRead) << r.error;
  ASSERT_EQ(r.codes.size(), 1u);
  EXPECT_EQ(r.codes[0].format, "Code128");
  EXPECT_EQ(r.codes[0].text, "PART-000000");
}
