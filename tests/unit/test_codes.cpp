// src/codes: symbols rendered here (tests/common/code_symbols.h) read back
// from GRAY8, YUY2 (pixel stride 2) and NV12 (padded rows) luma views, in a
// region or the whole frame, and the once-per-track memory.
#include <gtest/gtest.h>

#include <limits>

#include "code_symbols.h"
#include "codes/code_reader.h"
#include "codes/track_codes.h"

using namespace torchinfer;
using torchinfer::test::GreyCanvas;

namespace {

LumaView gray_view(const GreyCanvas& c) {
  return {c.pixels.data(), c.pixels.size(), c.width, c.height, 1, c.width};
}

CodeOptions all_formats() {
  CodeOptions o;
  o.padding = 0;
  return o;
}

// One symbol alone on a white 320x240 frame, across its middle row:
// zxing-cpp 1.4's DataMatrix detector looks for the symbol from the middle
// of the view (docs/elements.md, torchcodes).
GreyCanvas frame_with(const std::string& format, const std::string& text, int rotation = 0) {
  GreyCanvas f(320, 240);
  const int module = std::string(format) == "Code128" ? 2 : 4;
  const GreyCanvas sym = test::render_symbol(format, text, module, rotation);
  paste(f, sym, 160 - sym.width / 2, 120 - sym.height / 2);
  return f;
}

}  // namespace

TEST(CodeReader, ReadsDataMatrixQrAndCode128WithTheirExactTexts) {
  const CodeReader reader(all_formats());
  const std::pair<const char*, const char*> cases[] = {
      {"DataMatrix", "SN-000123"}, {"QRCode", "LOT 42/7 ü"}, {"Code128", "PART-9981"}};
  for (const auto& [format, text] : cases) {
    const GreyCanvas f = frame_with(format, text);
    const CodeRead r = reader.read(gray_view(f), std::nullopt);
    ASSERT_EQ(r.status, CodeReadStatus::kRead) << format;
    ASSERT_EQ(r.codes.size(), 1u) << format;
    EXPECT_EQ(r.codes[0].format, format);
    EXPECT_EQ(r.codes[0].text, text);
    EXPECT_FALSE(r.codes[0].text_cut);
  }
}

TEST(CodeReader, TheBoxIsTheSymbolsInFramePixels) {
  const CodeReader reader(all_formats());
  const GreyCanvas sym = test::render_symbol("DataMatrix", "SN-1", 4);
  GreyCanvas f(320, 240);
  paste(f, sym, 100, 60);
  // A region around the symbol: the box comes back in frame pixels.
  const CodeRead r =
      reader.read(gray_view(f), CodeBox{90, 50, 100.0 + sym.width + 10, 60.0 + sym.height + 10});
  ASSERT_EQ(r.codes.size(), 1u);
  const CodeBox& b = r.codes[0].box;
  // The symbol proper lies inside its 2-module quiet zone (8 px).
  EXPECT_EQ(b.x_min, 108);
  EXPECT_EQ(b.y_min, 68);
  EXPECT_EQ(b.x_max, 100 + sym.width - 8);  // corners on the symbol's outer edge
  EXPECT_EQ(b.y_max, 60 + sym.height - 8);
}

TEST(CodeReader, ReadsRotatedSymbols) {
  const CodeReader reader(all_formats());
  for (int rot : {90, 180}) {
    for (const char* format : {"DataMatrix", "QRCode", "Code128"}) {
      const GreyCanvas f = frame_with(format, "ROT-77", rot);
      const CodeRead r = reader.read(gray_view(f), std::nullopt);
      ASSERT_EQ(r.codes.size(), 1u) << format << " at " << rot;
      EXPECT_EQ(r.codes[0].text, "ROT-77");
    }
  }
}

TEST(CodeReader, ACode128At90DegreesNeedsTryRotate) {
  CodeOptions o = all_formats();
  o.try_rotate = false;
  const GreyCanvas f = frame_with("Code128", "ROT-77", 90);
  EXPECT_EQ(CodeReader(o).read(gray_view(f), std::nullopt).status, CodeReadStatus::kNotFound);
}

TEST(CodeReader, ReadsOnlyInsideTheRegion) {
  const CodeReader reader(all_formats());
  GreyCanvas f(400, 200);
  paste(f, test::render_symbol("DataMatrix", "LEFT", 4), 10, 10);
  paste(f, test::render_symbol("QRCode", "RIGHT", 4), 250, 10);
  const CodeRead left = reader.read(gray_view(f), CodeBox{0, 0, 90, 90});
  ASSERT_EQ(left.codes.size(), 1u);
  EXPECT_EQ(left.codes[0].text, "LEFT");
  const CodeRead right = reader.read(gray_view(f), CodeBox{240, 0, 400, 200});
  ASSERT_EQ(right.codes.size(), 1u);
  EXPECT_EQ(right.codes[0].text, "RIGHT");
}

TEST(CodeReader, ReadsTheLumaOfYuy2AndOfPaddedNv12Rows) {
  const CodeReader reader(all_formats());
  const GreyCanvas f = frame_with("DataMatrix", "YUV-OK");
  const std::vector<std::uint8_t> yuy2 = test::to_yuy2(f);
  const LumaView yv{yuy2.data(), yuy2.size(), f.width, f.height, 2, f.width * 2};
  const CodeRead ry = reader.read(yv, CodeBox{90, 50, 230, 190});
  ASSERT_EQ(ry.codes.size(), 1u);
  EXPECT_EQ(ry.codes[0].text, "YUV-OK");
  const std::vector<std::uint8_t> nv12 = test::to_nv12(f, 384);
  const LumaView nv{nv12.data(), nv12.size(), f.width, f.height, 1, 384};
  const CodeRead rn = reader.read(nv, std::nullopt);
  ASSERT_EQ(rn.codes.size(), 1u);
  EXPECT_EQ(rn.codes[0].text, "YUV-OK");
}

TEST(CodeReader, OnlyTheAskedFormats) {
  CodeOptions o = all_formats();
  o.formats = "QRCode";
  const GreyCanvas f = frame_with("DataMatrix", "DM");
  EXPECT_EQ(CodeReader(o).read(gray_view(f), std::nullopt).status, CodeReadStatus::kNotFound);
  o.formats = "QRCode|DataMatrix";
  EXPECT_EQ(CodeReader(o).read(gray_view(f), std::nullopt).codes.at(0).text, "DM");
}

TEST(CodeReader, AnUnknownFormatIsRefusedByName) {
  CodeOptions o;
  o.formats = "DataMatrix,Barcode9000";
  EXPECT_NE(check_code_formats(o.formats).find("barcode9000"), std::string::npos);
  EXPECT_THROW(CodeReader{o}, std::invalid_argument);
  EXPECT_EQ(check_code_formats("DataMatrix,QRCode Code128"), "");
}

TEST(CodeReader, ALightOnDarkSymbolNeedsTryInvert) {
  GreyCanvas f = frame_with("DataMatrix", "INV-5");
  for (auto& p : f.pixels) p = 255 - p;
  CodeOptions o = all_formats();
  EXPECT_EQ(CodeReader(o).read(gray_view(f), std::nullopt).status, CodeReadStatus::kNotFound);
  o.try_invert = true;
  const CodeRead r = CodeReader(o).read(gray_view(f), CodeBox{90, 50, 230, 190});
  ASSERT_EQ(r.codes.size(), 1u);
  EXPECT_EQ(r.codes[0].text, "INV-5");
  EXPECT_GE(r.codes[0].box.x_min, 40);
}

TEST(CodeReader, NoiseGivesNothing) {
  GreyCanvas f(320, 240);
  noise(f, 20, 20, 200, 200, 7);
  CodeOptions o = all_formats();
  o.try_invert = true;
  const CodeRead r = CodeReader(o).read(gray_view(f), CodeBox{20, 20, 220, 220});
  EXPECT_EQ(r.status, CodeReadStatus::kNotFound);
  EXPECT_TRUE(r.codes.empty());
}

TEST(CodeReader, ALongTextIsCutOnACharacterBoundary) {
  std::string text;
  while (text.size() < kMaxCodeText + 100) text += "é";  // two bytes each
  text.insert(0, "x");                                   // so the limit falls inside a character
  GreyCanvas f(800, 800);
  paste(f, test::render_symbol("QRCode", text, 3), 10, 10);
  const CodeRead r = CodeReader(all_formats()).read(gray_view(f), std::nullopt);
  ASSERT_EQ(r.codes.size(), 1u);
  EXPECT_TRUE(r.codes[0].text_cut);
  EXPECT_EQ(r.codes[0].text.size(), kMaxCodeText - 1);
  EXPECT_EQ(r.codes[0].text, text.substr(0, kMaxCodeText - 1));
}

TEST(CodeReaderHostile, TinyAndEmptyAndOutsideRegions) {
  const CodeReader reader(all_formats());
  const GreyCanvas f = frame_with("DataMatrix", "SN");
  const LumaView v = gray_view(f);
  EXPECT_EQ(reader.read(v, CodeBox{400, 10, 500, 100}).status, CodeReadStatus::kRefused);
  EXPECT_EQ(reader.read(v, CodeBox{-100, -100, -1, -1}).status, CodeReadStatus::kRefused);
  EXPECT_EQ(reader.read(v, CodeBox{10, 10, 10, 50}).status, CodeReadStatus::kRefused);
  EXPECT_EQ(reader.read(v, CodeBox{50, 50, 40, 40}).status, CodeReadStatus::kRefused);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(reader.read(v, CodeBox{nan, 0, 10, 10}).status, CodeReadStatus::kRefused);
  // One pixel, and a region partly outside: clipped, read, nothing found.
  EXPECT_EQ(reader.read(v, CodeBox{3, 3, 4, 4}).status, CodeReadStatus::kNotFound);
  EXPECT_EQ(reader.read(v, CodeBox{300, 200, 900, 900}).status, CodeReadStatus::kNotFound);
  // A region spilling over the frame's edge still reads the symbol inside.
  EXPECT_EQ(reader.read(v, CodeBox{100, -200, 400, 440}).codes.at(0).text, "SN");
  const std::uint8_t one = 0;
  EXPECT_EQ(reader.read(LumaView{&one, 1, 1, 1, 1, 1}, std::nullopt).status,
            CodeReadStatus::kNotFound);
}

TEST(CodeReaderHostile, BadViewsAreRefused) {
  const CodeReader reader(all_formats());
  std::vector<std::uint8_t> buf(64 * 64);
  const auto status = [&](LumaView v) { return reader.read(v, std::nullopt).status; };
  EXPECT_EQ(status({nullptr, 0, 64, 64, 1, 64}), CodeReadStatus::kRefused);
  EXPECT_EQ(status({buf.data(), buf.size(), 0, 64, 1, 64}), CodeReadStatus::kRefused);
  EXPECT_EQ(status({buf.data(), buf.size(), 64, -1, 1, 64}), CodeReadStatus::kRefused);
  EXPECT_EQ(status({buf.data(), buf.size(), 64, 64, 1, 63}), CodeReadStatus::kRefused);
  EXPECT_EQ(status({buf.data(), buf.size(), 64, 64, 2, 64}), CodeReadStatus::kRefused);
  EXPECT_EQ(status({buf.data(), buf.size(), 64, 64, 0, 64}), CodeReadStatus::kRefused);
  EXPECT_EQ(status({buf.data(), buf.size(), 64, 64, 1, std::numeric_limits<int>::max()}),
            CodeReadStatus::kRefused);
  EXPECT_EQ(status({buf.data(), buf.size(), 1 << 20, 1, 1, 1 << 21}), CodeReadStatus::kRefused);
  EXPECT_EQ(status({buf.data(), buf.size() - 1, 64, 64, 1, 64}), CodeReadStatus::kRefused);
  EXPECT_NE(check_luma_view({buf.data(), buf.size() - 1, 64, 64, 1, 64}).find("4095"),
            std::string::npos);
  EXPECT_EQ(status({buf.data(), buf.size(), 64, 64, 1, 64}), CodeReadStatus::kNotFound);
}

TEST(CodeSearchArea, PaddingThenClipInWholePixels) {
  const auto a = code_search_area({10, 20, 30, 60}, 0.5, 100, 100);
  ASSERT_TRUE(a);
  EXPECT_EQ(*a, (CodeBox{0, 0, 40, 80}));
  EXPECT_EQ(*code_search_area({10.5, 20.5, 30.2, 60.7}, 0, 100, 100), (CodeBox{10, 20, 31, 61}));
  EXPECT_FALSE(code_search_area({10, 20, 30, 60}, -0.1, 100, 100));
}

namespace {

CodeRead found(const std::string& text) {
  CodeRead r;
  r.status = CodeReadStatus::kRead;
  r.codes.push_back(CodeResult{"DataMatrix", text, false, {}, 0, ""});
  return r;
}

}  // namespace

TEST(TrackCodes, AReadTrackIsSkippedUntilTheRereadInterval) {
  TrackCodes m(10);
  EXPECT_TRUE(m.due(7, 1));
  m.record(7, 1, CodeRead{});  // not found
  EXPECT_TRUE(m.due(7, 2));    // tried again on the next view
  m.record(7, 2, found("SN-7"));
  for (std::uint64_t f = 3; f <= 11; ++f) EXPECT_FALSE(m.due(7, f)) << f;
  EXPECT_TRUE(m.due(7, 12));    // 10 frames after the read
  m.record(7, 12, CodeRead{});  // a failed re-read keeps the code
  const TrackCode* t = m.find(7);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->code->text, "SN-7");
  EXPECT_EQ(*t->read_at, 2u);
  EXPECT_EQ(t->tries, 3u);
  EXPECT_EQ(t->failures, 2u);
  const CodeTotals& c = m.totals();
  EXPECT_EQ(c.tried, 3u);
  EXPECT_EQ(c.read, 1u);
  EXPECT_EQ(c.failed, 2u);
  EXPECT_EQ(c.skipped_known, 9u);
}

TEST(TrackCodes, IntervalZeroNeverRereadsAndUntrackedReadsOnlyCount) {
  TrackCodes m(0);
  m.due(1, 1);
  m.record(1, 1, found("A"));
  EXPECT_FALSE(m.due(1, 1000000));
  m.record(std::nullopt, 5, found("B"));
  m.record(std::nullopt, 6, CodeRead{});
  EXPECT_EQ(m.tracks(), 1u);
  EXPECT_EQ(m.totals().tried, 3u);
  EXPECT_EQ(m.totals().read, 2u);
  EXPECT_EQ(m.totals().failed, 1u);
  EXPECT_EQ(m.totals().skipped_known, 1u);
}

TEST(TrackCodes, BoundedByForgettingTheTrackSeenLongestAgo) {
  TrackCodes m(0, 2);
  m.due(1, 1);
  m.due(2, 2);
  m.due(1, 3);  // 1 seen again
  m.due(3, 4);  // 2 goes
  EXPECT_TRUE(m.find(1));
  EXPECT_FALSE(m.find(2));
  EXPECT_TRUE(m.find(3));
  EXPECT_EQ(m.totals().forgotten, 1u);
}
