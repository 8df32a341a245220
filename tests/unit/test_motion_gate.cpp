// inference-gate=motion (stream/motion_gate.h): the gate's decisions on
// constructed frames, exactly (cells, threshold, min-area, hold, keyframe,
// commit), the same samples from every camera format, refused options; and
// the gate inside the StreamSession: which frames are inferred, which leave
// as still with the latest result, all of them in order with their
// timestamps.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "common/error.h"
#include "frame_accounting.h"
#include "gray_frame.h"
#include "grey_model.h"
#include "stream/motion_gate.h"
#include "stream/stream_session.h"

using namespace torchinfer;
using torchinfer::test::Gray;

namespace {

MotionGateOptions gate_options(double threshold = 8, int hold = 2, int keyframe = 100,
                               double min_area = 0) {
  MotionGateOptions o;
  o.enabled = true;
  o.threshold = threshold;
  o.hold = hold;
  o.keyframe_interval = keyframe;
  o.min_area = min_area;
  return o;
}

// Judges the frame and, as the session does, commits what is inferred.
GateDecision step(MotionGate& g, const Gray& f) {
  const GateDecision d = g.decide(f.view());
  if (d != GateDecision::kStill) g.commit();
  return d;
}

}  // namespace

TEST(MotionGate, FirstFrameThenStillThenMotionAndItsHold) {
  MotionGate g(gate_options(8, 2));
  const Gray empty(128, 64, 100);
  Gray part(128, 64, 100);
  part.add(0, 0, 64, 64, 40);  // the whole left cell brightens by 40
  EXPECT_EQ(step(g, empty), GateDecision::kFirst);
  EXPECT_EQ(g.cells(), 2);
  EXPECT_EQ(step(g, empty), GateDecision::kStill);
  EXPECT_EQ(step(g, empty), GateDecision::kStill);
  EXPECT_EQ(step(g, part), GateDecision::kMotion);
  EXPECT_EQ(g.changed_cells(), 1);
  EXPECT_EQ(step(g, part), GateDecision::kHold);  // the same as the reference now
  EXPECT_EQ(step(g, part), GateDecision::kHold);
  EXPECT_EQ(step(g, part), GateDecision::kStill);
  EXPECT_EQ(step(g, empty), GateDecision::kMotion);  // it left
}

TEST(MotionGate, ThresholdIsTheCellsMeanDifferenceInLumaLevels) {
  // One sample in 64 of the left cell changes by 255: mean 255/64 = 3.98.
  Gray one(128, 64, 0);
  one.add(4, 4, 5, 5, 255);  // the sample at (4, 4)
  MotionGate at3(gate_options(3.98));
  step(at3, Gray(128, 64, 0));
  EXPECT_EQ(step(at3, one), GateDecision::kMotion);
  MotionGate at4(gate_options(4.0));
  step(at4, Gray(128, 64, 0));
  EXPECT_EQ(step(at4, one), GateDecision::kStill);
  // Pixels between samples are not read (1/8 per side).
  Gray between(128, 64, 0);
  between.add(0, 0, 4, 4, 200);
  MotionGate any(gate_options(0.01));
  step(any, Gray(128, 64, 0));
  EXPECT_EQ(step(any, between), GateDecision::kStill);
}

TEST(MotionGate, MinAreaCountsCells) {
  // 256x128: 4x2 = 8 cells; three of them change.
  Gray three(256, 128, 50);
  three.add(0, 0, 192, 64, 30);
  MotionGate three_eighths(gate_options(8, 0, 100, 3.0 / 8));
  step(three_eighths, Gray(256, 128, 50));
  EXPECT_EQ(step(three_eighths, three), GateDecision::kMotion);
  EXPECT_EQ(three_eighths.changed_cells(), 3);
  MotionGate half(gate_options(8, 0, 100, 0.5));
  step(half, Gray(256, 128, 50));
  EXPECT_EQ(step(half, three), GateDecision::kStill);
}

TEST(MotionGate, EdgeCellsAverageTheSamplesTheyHave) {
  // 72x8: 9 samples in a row, the 9th alone in the second cell.
  Gray f(72, 8, 10);
  f.add(64, 0, 72, 8, 9);
  MotionGate g(gate_options(9));
  step(g, Gray(72, 8, 10));
  EXPECT_EQ(g.cells(), 2);
  EXPECT_EQ(step(g, f), GateDecision::kMotion);
  EXPECT_EQ(g.changed_cells(), 1);
}

TEST(MotionGate, SlowChangeAddsUpAgainstTheLastInferredFrame) {
  MotionGate g(gate_options(5, 0));
  EXPECT_EQ(step(g, Gray(128, 64, 100)), GateDecision::kFirst);
  EXPECT_EQ(step(g, Gray(128, 64, 102)), GateDecision::kStill);
  EXPECT_EQ(step(g, Gray(128, 64, 104)), GateDecision::kStill);
  EXPECT_EQ(step(g, Gray(128, 64, 106)), GateDecision::kMotion);  // 6 since frame 0
  EXPECT_EQ(step(g, Gray(128, 64, 108)), GateDecision::kStill);   // 2 since frame 3
}

TEST(MotionGate, AFrameNotCommittedLeavesTheReference) {
  MotionGate g(gate_options(8, 0));
  step(g, Gray(128, 64, 0));
  EXPECT_EQ(g.decide(Gray(128, 64, 50).view()), GateDecision::kMotion);  // busy: no commit
  EXPECT_EQ(g.decide(Gray(128, 64, 50).view()), GateDecision::kMotion);
  g.commit();
  EXPECT_EQ(g.decide(Gray(128, 64, 50).view()), GateDecision::kStill);
}

TEST(MotionGate, KeyframeEveryIntervalFramesAtLeast) {
  MotionGate g(gate_options(8, 0, 4));
  const Gray f(128, 64, 7);
  std::vector<GateDecision> got;
  for (int i = 0; i < 10; ++i) got.push_back(step(g, f));
  using D = GateDecision;
  EXPECT_EQ(got, (std::vector<D>{D::kFirst, D::kStill, D::kStill, D::kStill, D::kKeyframe,
                                 D::kStill, D::kStill, D::kStill, D::kKeyframe, D::kStill}));
  MotionGate every(gate_options(8, 0, 1));
  EXPECT_EQ(step(every, f), D::kFirst);
  EXPECT_EQ(step(every, f), D::kKeyframe);
}

TEST(MotionGate, NewSizeOrResetInfersTheNextFrame) {
  MotionGate g(gate_options());
  step(g, Gray(128, 64, 1));
  EXPECT_EQ(step(g, Gray(128, 64, 1)), GateDecision::kStill);
  EXPECT_EQ(step(g, Gray(64, 64, 1)), GateDecision::kFirst);
  EXPECT_EQ(step(g, Gray(64, 64, 1)), GateDecision::kStill);
  g.reset();
  EXPECT_EQ(step(g, Gray(64, 64, 1)), GateDecision::kFirst);
  FrameView nothing;  // unreadable: inferred, never a reference
  EXPECT_EQ(g.decide(nothing), GateDecision::kFirst);
  g.commit();
  EXPECT_EQ(step(g, Gray(64, 64, 1)), GateDecision::kStill);
}

// The same scene as YUY2, NV12, I420, RGB, BGRx, GRAY16_LE (12 bits) and a
// Bayer mosaic gives the same decisions: the left cell's luma goes 100 -> 140
// (the gate reads plane 0 only: chroma planes are left out).
struct Packed {
  PixelFormat format;
  int bpp;
  std::vector<std::uint8_t> px;
  Packed(PixelFormat f, int b, int w, int h, int left, int right)
      : format(f), bpp(b), px(std::size_t(w) * h * b, 0) {
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) put(&px[(std::size_t(y) * w + x) * b], x < 64 ? left : right);
  }
  void put(std::uint8_t* p, int l) const {
    switch (format) {
      case PixelFormat::kRGB:
      case PixelFormat::kBGRx:
        p[0] = p[1] = p[2] = std::uint8_t(l);
        break;
      case PixelFormat::kGRAY16_LE:  // 12 significant bits
        p[0] = std::uint8_t((l << 4) & 0xff);
        p[1] = std::uint8_t(l >> 4);
        break;
      default:  // YUY2: Y then U/V; planar and Bayer: one byte
        p[0] = std::uint8_t(l);
    }
  }
  FrameView view(int w, int h) const {
    FrameView v;
    v.format = format;
    v.width = w;
    v.height = h;
    v.planes[0] = px.data();
    v.strides[0] = w * bpp;
    return v;
  }
};

TEST(MotionGate, EveryFormatReadsTheSameLuma) {
  const std::pair<PixelFormat, int> formats[] = {
      {PixelFormat::kYUY2, 2},     {PixelFormat::kNV12, 1}, {PixelFormat::kI420, 1},
      {PixelFormat::kRGB, 3},      {PixelFormat::kBGRx, 4}, {PixelFormat::kGRAY16_LE, 2},
      {PixelFormat::kBayerRGGB, 1}};
  for (const auto& [f, bpp] : formats) {
    const Packed before(f, bpp, 128, 64, 100, 100), after(f, bpp, 128, 64, 140, 100);
    for (double threshold : {39.5, 40.5}) {
      MotionGateOptions o = gate_options(threshold, 0);
      o.input_bits = 12;
      MotionGate g(o);
      EXPECT_EQ(g.decide(before.view(128, 64)), GateDecision::kFirst) << to_string(f);
      g.commit();
      EXPECT_EQ(g.decide(before.view(128, 64)), GateDecision::kStill) << to_string(f);
      EXPECT_EQ(g.decide(after.view(128, 64)),
                threshold < 40 ? GateDecision::kMotion : GateDecision::kStill)
          << to_string(f) << " threshold " << threshold;
    }
  }
}

TEST(MotionGate, OptionsOutOfRangeAreRefused) {
  auto refused = [](MotionGateOptions o) {
    try {
      MotionGate g(o);
    } catch (const Error& e) {
      return e.kind() == ErrorKind::kInvalidArgument;
    }
    return false;
  };
  EXPECT_TRUE(refused(gate_options(-1)));
  EXPECT_TRUE(refused(gate_options(256)));
  EXPECT_TRUE(refused(gate_options(8, -1)));
  EXPECT_TRUE(refused(gate_options(8, 2, 0)));
  EXPECT_TRUE(refused(gate_options(8, 2, 30, -0.1)));
  EXPECT_TRUE(refused(gate_options(8, 2, 30, 1.5)));
  EXPECT_FALSE(refused(gate_options(0, 0, 1, 1)));
}

namespace {

constexpr int kSide = test::kModelSide;

// A kSide x kSide RGB frame of one grey value (one sample, one cell).
struct Pixels : FramePixels {
  std::array<std::uint8_t, kSide * kSide * 3> px{};
  int* maps;
  int* unmaps;
  Pixels(int v, int* m, int* u) : maps(m), unmaps(u) { px.fill(std::uint8_t(v)); }
  bool map(FrameView* v) override {
    ++*maps;
    v->format = PixelFormat::kRGB;
    v->width = v->height = kSide;
    v->planes[0] = px.data();
    v->strides[0] = kSide * 3;
    return true;
  }
  void unmap() override { ++*unmaps; }
};

struct Out {
  int index;
  bool inferred;
  SkipReason skip;
  std::uint64_t pts, result_pts;
};

class GatedSession : public ::testing::Test {
 protected:
  void TearDown() override {
    session.stop();
    EXPECT_TRUE(test::frames_add_up(test::counts_of(session.snapshot(false)), test::Settled::kYes));
  }
  // Frames of these grey values, pts = 1000 x index; every one popped.
  std::vector<Out> run(const std::vector<int>& values, int interval = 1, int hold = 1,
                       int keyframe = 100) {
    SessionOptions o;
    o.inference_interval = interval;
    o.preprocess_for = test::preprocess_to(kSide);
    o.gate = gate_options(8, hold, keyframe);
    BatcherOptions bo;
    bo.batch_size = 1;
    session.start(std::make_shared<Batcher>(fake.make(), bo), o);
    session.resume();
    std::vector<Out> out;
    for (std::size_t i = 0; i < values.size(); ++i) {
      int maps = 0, unmaps = 0;
      const SubmitResult r = session.submit_frame(
          OwnedRef(new int(int(i)), [](void* p) { delete static_cast<int*>(p); }), kSide, kSide,
          i * 1000, std::make_unique<Pixels>(values[i], &maps, &unmaps));
      EXPECT_NE(r.status, SubmitStatus::kDropped);
      EXPECT_EQ(maps, unmaps) << "frame " << i << " left mapped";
      std::optional<StreamOutput> p = session.pop();
      EXPECT_TRUE(p);
      if (!p) break;
      session.finish(*p);
      out.push_back({*static_cast<int*>(p->obj.get()), p->inferred, p->skip,
                     p->results ? p->results->pts : kNoTimestamp, 0});
      out.back().pts = i * 1000;
      out.back().result_pts = p->results ? p->results->pts : kNoTimestamp;
    }
    return out;
  }
  test::GreyModel fake;
  StreamSession session;
};

std::vector<int> inferred_indices(const std::vector<Out>& out) {
  std::vector<int> v;
  for (const Out& o : out)
    if (o.inferred) v.push_back(o.index);
  return v;
}

}  // namespace

// Empty belt, a part enters (60), stays 4 frames, leaves: the frame it
// enters on and `hold` (1) after it are inferred, likewise when it leaves;
// the rest leave as still with the latest result, every frame in order.
TEST_F(GatedSession, CountsStillFramesAndInfersTheFirstFrameOfMotion) {
  const std::vector<int> values = {10, 10, 10, 60, 60, 60, 60, 10, 10, 10};
  const std::vector<Out> out = run(values);
  ASSERT_EQ(out.size(), values.size());
  for (std::size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i].index, int(i)) << "in order";
  EXPECT_EQ(inferred_indices(out), (std::vector<int>{0, 3, 4, 7, 8}));
  EXPECT_TRUE(out[3].inferred) << "the first frame after motion started";
  const std::uint64_t result_of[] = {0, 0, 0, 3000, 4000, 4000, 4000, 7000, 8000, 8000};
  for (std::size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].result_pts, result_of[i]) << "frame " << i;
    if (!out[i].inferred) {
      EXPECT_EQ(out[i].skip, SkipReason::kStill) << "frame " << i;
    }
  }
  const StatsSnapshot s = session.snapshot(false);
  EXPECT_EQ(s.frames_in, 10u);
  EXPECT_EQ(s.frames_out, 10u);
  EXPECT_EQ(s.inferred, 5u);
  EXPECT_EQ(s.skipped, 5u);
  EXPECT_EQ(s.skipped_for(SkipReason::kStill), 5u);
  EXPECT_EQ(session.frames_inferred(), 5u);
}

// The gate judges only the frames inference-interval makes due; the others
// stay "interval". Keyframes bound the run of still frames.
TEST_F(GatedSession, IntervalFirstThenTheGateAndKeyframes) {
  const std::vector<Out> out = run(std::vector<int>(12, 10), 2, 0, 3);
  // Due: 0 2 4 6 8 10. Gate: first, still, still, keyframe, still, still.
  EXPECT_EQ(inferred_indices(out), (std::vector<int>{0, 6}));
  const StatsSnapshot s = session.snapshot(false);
  EXPECT_EQ(s.skipped_for(SkipReason::kInterval), 6u);
  EXPECT_EQ(s.skipped_for(SkipReason::kStill), 4u);
  EXPECT_EQ(out[2].skip, SkipReason::kStill);
  EXPECT_EQ(out[3].skip, SkipReason::kInterval);
}

// A seek (flush) forgets the reference: the first frame after it is inferred.
TEST_F(GatedSession, FirstFrameAfterAFlushIsInferred) {
  EXPECT_EQ(inferred_indices(run({5, 5, 5})), (std::vector<int>{0}));
  session.set_flushing();
  session.resume();
  int maps = 0, unmaps = 0;
  session.submit_frame(OwnedRef(new int(9), [](void* p) { delete static_cast<int*>(p); }), kSide,
                       kSide, 9000, std::make_unique<Pixels>(5, &maps, &unmaps));
  std::optional<StreamOutput> p = session.pop();
  ASSERT_TRUE(p);
  session.finish(*p);
  EXPECT_TRUE(p->inferred);
}

// drop-policy skip: a frame the gate passed but the busy model skipped is
// not what later frames are compared with; the next one with the same
// pixels is inferred (motion against the last frame that was).
TEST_F(GatedSession, AFrameSkippedAsBusyIsNotTheReference) {
  fake.hold = true;
  SessionOptions o;
  o.preprocess_for = test::preprocess_to(kSide);
  o.gate = gate_options(8, 0, 100);
  BatcherOptions bo;
  bo.batch_size = 1;
  session.start(std::make_shared<Batcher>(fake.make(), bo), o);
  session.set_skip_when_busy(true);
  session.resume();
  int maps = 0, unmaps = 0;
  auto submit = [&](int i, int value) {
    return session
        .submit_frame(OwnedRef(new int(i), [](void* p) { delete static_cast<int*>(p); }), kSide,
                      kSide, std::uint64_t(i) * 1000,
                      std::make_unique<Pixels>(value, &maps, &unmaps))
        .status;
  };
  EXPECT_EQ(submit(0, 10), SubmitStatus::kQueued);  // running, held
  fake.wait_inside(1);
  EXPECT_EQ(submit(1, 50), SubmitStatus::kQueued);  // the second batch buffer
  EXPECT_EQ(submit(2, 90), SubmitStatus::kBusy);    // motion, but no slot
  fake.release();
  session.set_skip_when_busy(false);  // frame 3 waits for a free buffer: no race
  EXPECT_EQ(submit(3, 90), SubmitStatus::kQueued) << "90 against 50, not against frame 2";
  EXPECT_EQ(submit(4, 90), SubmitStatus::kSkipped) << "still against frame 3";
  std::vector<bool> inferred;
  for (int i = 0; i < 5; ++i) {
    std::optional<StreamOutput> p = session.pop();
    ASSERT_TRUE(p);
    EXPECT_EQ(*static_cast<int*>(p->obj.get()), i);
    session.finish(*p);
    inferred.push_back(p->inferred);
  }
  EXPECT_EQ(inferred, (std::vector<bool>{true, true, false, true, false}));
  const StatsSnapshot s = session.snapshot(false);
  EXPECT_EQ(s.skipped_for(SkipReason::kBusy), 1u);
  EXPECT_EQ(s.skipped_for(SkipReason::kStill), 1u);
  EXPECT_EQ(maps, unmaps);
}
