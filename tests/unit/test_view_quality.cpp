// Best view first (src/codes/view_quality.h): a view's quality (pixels x
// sharpness), the order views are read in, and CodeSession on workers
// giving the pool's one slot to the best view of the frame.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <vector>

#include "code_symbols.h"
#include "codes/code_session.h"
#include "codes/view_quality.h"

using namespace torchinfer;
using torchinfer::test::GreyCanvas;

namespace {

LumaView view(const GreyCanvas& c) {
  return {c.pixels.data(), c.pixels.size(), c.width, c.height, 1, c.width};
}

// A horizontal 3-tap box blur, as a moving belt smears a symbol.
GreyCanvas smeared(const GreyCanvas& c, int x0, int y0, int w, int h) {
  GreyCanvas out = c;
  for (int y = y0; y < y0 + h; ++y)
    for (int x = x0 + 1; x + 1 < x0 + w; ++x)
      out.at(x, y) =
          static_cast<std::uint8_t>((c.pixels[y * c.width + x - 1] + c.pixels[y * c.width + x] +
                                     c.pixels[y * c.width + x + 1]) /
                                    3);
  return out;
}

// Reads wait until the test opens the gate; the jobs' areas are kept.
struct HeldReads {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  std::vector<CodeJob> jobs;
  CodeRead read(const CodeJob& j) {
    std::unique_lock<std::mutex> g(m);
    jobs.push_back(CodeJob{j.id, {}, j.width, j.height, j.x0, j.y0});
    cv.notify_all();
    cv.wait(g, [this] { return open; });
    return CodeRead{};
  }
  void wait_for_a_job() {
    std::unique_lock<std::mutex> g(m);
    cv.wait(g, [this] { return !jobs.empty(); });
  }
  void release() {
    {
      std::lock_guard<std::mutex> g(m);
      open = true;
    }
    cv.notify_all();
  }
};

}  // namespace

// A 4x4 checker of 0/100 by hand: every row and column walked (step 1),
// each of their 24 steps is 100: mean 100, x 16 pixels = 1600.
TEST(ViewQuality, PixelsTimesTheMeanStepToTheNeighbours) {
  GreyCanvas c(4, 4, 0);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) c.at(x, y) = (x + y) % 2 ? 100 : 0;
  EXPECT_DOUBLE_EQ(view_quality(view(c), {0, 0, 4, 4}), 1600.0);
  GreyCanvas flat(4, 4, 77);
  EXPECT_DOUBLE_EQ(view_quality(view(flat), {0, 0, 4, 4}), 0.0);
}

TEST(ViewQuality, ASharpViewBeatsTheSameViewSmearedAndAWholeOneACutOne) {
  GreyCanvas f(300, 200);
  paste(f, test::render_symbol("DataMatrix", "SN-0007", 4), 40, 40);
  const CodeBox box{30, 30, 130, 130};
  const double sharp = view_quality(view(f), box);
  const double blurred = view_quality(view(smeared(f, 30, 30, 100, 100)), box);
  EXPECT_GT(sharp, 0.0);
  EXPECT_LT(blurred, sharp);
  // The same symbol with half of its view beyond the frame's right edge.
  EXPECT_LT(view_quality(view(f), {250, 30, 350, 130}), sharp);
}

// Nothing to read: no pixel of the area in the frame, an area narrower
// than two pixels, a view whose bytes do not cover its rows.
TEST(ViewQuality, HostileViewsAndAreasScoreZero) {
  GreyCanvas f(64, 64, 0);
  for (int i = 0; i < 64; i += 2) f.at(i, i) = 255;
  EXPECT_EQ(view_quality(view(f), {100, 100, 200, 200}), 0.0);
  EXPECT_EQ(view_quality(view(f), {-50, -50, -10, -10}), 0.0);
  EXPECT_EQ(view_quality(view(f), {10, 10, 11, 40}), 0.0);
  LumaView short_view = view(f);
  short_view.bytes = 100;
  EXPECT_EQ(view_quality(short_view, {0, 0, 64, 64}), 0.0);
  LumaView null_view;
  EXPECT_EQ(view_quality(null_view, {0, 0, 64, 64}), 0.0);
}

// A huge area is walked on every 55th row and column only; on a checker
// every step is 190 all the same.
TEST(ViewQuality, ALargeAreaIsSampledOnABoundedGrid) {
  GreyCanvas f(4000, 3000, 10);
  EXPECT_EQ(view_quality(view(f), {0, 0, 4000, 3000}), 0.0);
  for (int y = 0; y < 3000; ++y)
    for (int x = 0; x < 4000; ++x) f.at(x, y) = (x + y) % 2 ? 200 : 10;
  EXPECT_DOUBLE_EQ(view_quality(view(f), {0, 0, 4000, 3000}), 4000.0 * 3000 * 190);
}

TEST(ViewQuality, UnreadTracksFirstThenBestQualityTiesInFrameOrder) {
  std::vector<DueView> v = {{0, false, 900}, {1, true, 10}, {2, true, 50},
                            {3, false, 5},   {4, true, 50}, {5, true, 0}};
  order_best_first(v);
  std::vector<std::size_t> order;
  for (const DueView& d : v) order.push_back(d.region);
  EXPECT_EQ(order, (std::vector<std::size_t>{2, 4, 1, 5, 0, 3}));
}

// One slot in the pool, three parts due on the frame: the slot goes to the
// sharp, whole view (listed last), the others are deferred.
TEST(CodeSessionBestFirst, ThePoolsSlotGoesToTheBestViewOfTheFrame) {
  GreyCanvas f(400, 200);
  paste(f, test::render_symbol("DataMatrix", "SN-0001", 4), 250, 50);
  paste(f, test::render_symbol("DataMatrix", "SN-0002", 4), 20, 50);
  f = smeared(f, 10, 40, 100, 100);
  HeldReads held;
  CodeSessionOptions o;
  o.workers = 1;
  o.max_pending = 1;
  o.budget_ms = 0;
  o.reader.padding = 0;
  {
    CodeSession s(o, [&](const CodeJob& j) { return held.read(j); });
    s.process(view(f), {{{10, 40, 110, 140}, "part", 1},     // smeared
                        {{370, 40, 470, 140}, "part", 2},    // cut by the edge
                        {{240, 40, 340, 140}, "part", 3}});  // sharp, whole
    EXPECT_EQ(s.totals().deferred, 2u);
    held.wait_for_a_job();
    held.release();
  }  // the worker has finished
  ASSERT_EQ(held.jobs.size(), 1u);
  EXPECT_EQ(held.jobs[0].x0, 240);
  EXPECT_EQ(held.jobs[0].width, 100);
}
