// src/codes/code_session.h: which regions of a frame are read, when the
// whole frame is, and what each region carries.
#include <gtest/gtest.h>

#include "code_symbols.h"
#include "codes/code_session.h"

using namespace torchinfer;
using torchinfer::test::GreyCanvas;

namespace {

// Two parts side by side: a DataMatrix in [20, 120) and a QR code in
// [220, 320), both across the frame's middle row.
GreyCanvas two_parts() {
  GreyCanvas f(400, 200);
  paste(f, test::render_symbol("DataMatrix", "SN-A", 4), 30, 60);
  paste(f, test::render_symbol("QRCode", "SN-B", 4), 230, 50);
  return f;
}

LumaView view(const GreyCanvas& c) {
  return {c.pixels.data(), c.pixels.size(), c.width, c.height, 1, c.width};
}

const CodeBox kLeft{20, 40, 120, 160}, kRight{220, 30, 330, 170};

}  // namespace

TEST(SplitLabels, TrimsAndDropsEmptyItems) {
  EXPECT_EQ(split_labels(" bolt, nut ,,washer "),
            (std::vector<std::string>{"bolt", "nut", "washer"}));
  EXPECT_TRUE(split_labels(" , ").empty());
}

TEST(CodeSession, EachRegionGetsItsOwnCodeAndOnlyWantedClassesAreRead) {
  CodeSessionOptions o;
  o.classes = {"part"};
  CodeSession s(o);
  const GreyCanvas f = two_parts();
  const FrameCodes r =
      s.process(view(f), {{kLeft, "part", 1}, {kRight, "label", 2}, {kRight, "part", 3}});
  ASSERT_EQ(r.regions.size(), 3u);
  ASSERT_TRUE(r.regions[0]);
  EXPECT_EQ(r.regions[0]->code.text, "SN-A");
  EXPECT_EQ(r.regions[0]->code.format, "DataMatrix");
  EXPECT_EQ(r.regions[0]->frame, 1u);
  EXPECT_FALSE(r.regions[1]);
  ASSERT_TRUE(r.regions[2]);
  EXPECT_EQ(r.regions[2]->code.text, "SN-B");
  EXPECT_FALSE(r.full_frame);
  EXPECT_EQ(s.totals().tried, 2u);
  EXPECT_EQ(s.totals().read, 2u);
}

TEST(CodeSession, AKnownTrackCarriesItsCodeUntilTheRereadInterval) {
  CodeSessionOptions o;
  o.reread_interval = 3;
  CodeSession s(o);
  const GreyCanvas f = two_parts();
  GreyCanvas blank(400, 200);  // the symbol hidden: only a re-read can miss it
  s.process(view(f), {{kLeft, "part", 7}});
  for (int i = 0; i < 2; ++i) {
    const FrameCodes r = s.process(view(blank), {{kLeft, "part", 7}});
    ASSERT_TRUE(r.regions[0]);
    EXPECT_EQ(r.regions[0]->code.text, "SN-A");
    EXPECT_EQ(r.regions[0]->frame, 1u);
  }
  EXPECT_EQ(s.totals().skipped_known, 2u);
  // Frame 4: re-read, misses, keeps the code read on frame 1.
  const FrameCodes r = s.process(view(blank), {{kLeft, "part", 7}});
  ASSERT_TRUE(r.regions[0]);
  EXPECT_EQ(r.regions[0]->frame, 1u);
  EXPECT_EQ(s.totals().tried, 2u);
  EXPECT_EQ(s.totals().failed, 1u);
}

TEST(CodeSession, AnUntrackedRegionIsReadOnEveryFrame) {
  CodeSession s(CodeSessionOptions{});
  const GreyCanvas f = two_parts();
  for (int i = 0; i < 3; ++i) s.process(view(f), {{kLeft, "part", std::nullopt}});
  EXPECT_EQ(s.totals().tried, 3u);
  EXPECT_EQ(s.totals().read, 3u);
  EXPECT_EQ(s.totals().skipped_known, 0u);
}

TEST(CodeSession, FullFrameModes) {
  GreyCanvas f(320, 240);
  paste(f, test::render_symbol("QRCode", "WHOLE", 4), 120, 80);
  CodeSessionOptions o;
  CodeSession no_region(o);
  FrameCodes r = no_region.process(view(f), {});
  EXPECT_TRUE(r.full_frame);
  ASSERT_EQ(r.frame_codes.size(), 1u);
  EXPECT_EQ(r.frame_codes[0].text, "WHOLE");
  r = no_region.process(view(f), {{{0, 0, 10, 10}, "part", std::nullopt}});
  EXPECT_FALSE(r.full_frame);
  o.full_frame = FullFrameMode::kAlways;
  r = CodeSession(o).process(view(f), {{{0, 0, 10, 10}, "part", std::nullopt}});
  EXPECT_TRUE(r.full_frame);
  EXPECT_EQ(r.frame_codes.at(0).text, "WHOLE");
  EXPECT_FALSE(r.regions.at(0));
  o.full_frame = FullFrameMode::kNever;
  CodeSession never(o);
  r = never.process(view(f), {});
  EXPECT_FALSE(r.full_frame);
  EXPECT_EQ(never.totals().tried, 0u);
}

TEST(CodeSession, AnUnreadableFrameCountsAsAFailedRead) {
  CodeSession s(CodeSessionOptions{});
  s.unreadable_frame();
  EXPECT_EQ(s.frames(), 1u);
  EXPECT_EQ(s.totals().tried, 1u);
  EXPECT_EQ(s.totals().failed, 1u);
}

TEST(CodeSession, UnknownFormatsThrow) {
  CodeSessionOptions o;
  o.reader.formats = "NoSuchCode";
  EXPECT_THROW(CodeSession{o}, std::invalid_argument);
}
