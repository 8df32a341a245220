// EncodedRing (pipelines/evidence/core/encoded_ring.h): eviction by span and by bytes,
// clips from the keyframe before, frames lost early counted, one writer and
// readers at once.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "evidence/core/encoded_ring.h"

namespace ev = torchinfer::evidence;

namespace {

constexpr std::int64_t kMs = 1000000;
constexpr std::int64_t kFrame = 100 * kMs;  // 10 fps: easy numbers

ev::EncodedFrame frame(std::int64_t index, bool key, std::size_t size = 10) {
  ev::EncodedFrame f;
  f.pts_ns = index * kFrame;
  f.duration_ns = kFrame;
  f.keyframe = key;
  f.data =
      std::make_shared<const std::vector<std::uint8_t>>(size, static_cast<std::uint8_t>(index));
  return f;
}

// Frames 0..n-1, a keyframe every `gop`.
void fill(ev::EncodedRing& ring, int n, int gop, std::size_t size = 10) {
  for (int i = 0; i < n; ++i) ring.push(frame(i, i % gop == 0, size));
}

std::vector<std::int64_t> indices(const std::vector<ev::EncodedFrame>& frames) {
  std::vector<std::int64_t> out;
  for (const auto& f : frames) out.push_back(f.pts_ns / kFrame);
  return out;
}

}  // namespace

TEST(EncodedRing, KeepsTheSpanFromAKeyframe) {
  // 1 s span, keyframe every 4 frames: after frame 29 (2.9 s) the span
  // starts at 1.9 s (frame 19); the group holding it starts at frame 16.
  ev::EncodedRing ring(1000 * kMs, 1 << 20);
  fill(ring, 30, 4);
  EXPECT_EQ(ring.oldest_pts(), 16 * kFrame);
  EXPECT_EQ(ring.newest_pts(), 29 * kFrame);
  EXPECT_EQ(ring.frames(), 14u);
  EXPECT_EQ(ring.bytes(), 140u);
  EXPECT_EQ(ring.evicted_early(), 0u);
}

TEST(EncodedRing, EveryFrameAKeyframeKeepsExactlyTheSpan) {
  ev::EncodedRing ring(1000 * kMs, 1 << 20);
  fill(ring, 30, 1);
  EXPECT_EQ(ring.oldest_pts(), 19 * kFrame);
  EXPECT_EQ(ring.frames(), 11u);
}

TEST(EncodedRing, ExtractStartsAtTheKeyframeAtOrBefore) {
  ev::EncodedRing ring(10000 * kMs, 1 << 20);
  fill(ring, 30, 5);
  EXPECT_EQ(indices(ring.extract(12 * kFrame, 17 * kFrame)),
            (std::vector<std::int64_t>{10, 11, 12, 13, 14, 15, 16, 17}));
  // On a keyframe: it starts there.
  EXPECT_EQ(indices(ring.extract(15 * kFrame, 16 * kFrame)), (std::vector<std::int64_t>{15, 16}));
  // The end past the newest frame: up to the newest.
  EXPECT_EQ(indices(ring.extract(27 * kFrame, 99 * kFrame)),
            (std::vector<std::int64_t>{25, 26, 27, 28, 29}));
  const auto clip = ring.extract(3 * kFrame, 4 * kFrame);
  ASSERT_EQ(clip.size(), 5u);
  EXPECT_TRUE(clip[0].keyframe);
  EXPECT_FALSE(clip[1].keyframe);
  EXPECT_EQ((*clip[4].data)[0], 4);
}

TEST(EncodedRing, ExtractBeforeTheOldestStartsAtTheOldest) {
  ev::EncodedRing ring(1000 * kMs, 1 << 20);
  fill(ring, 30, 4);  // frames 16..29 kept
  EXPECT_EQ(indices(ring.extract(5 * kFrame, 18 * kFrame)),
            (std::vector<std::int64_t>{16, 17, 18}));
  EXPECT_TRUE(ring.extract(0, 10 * kFrame).empty());  // all of it gone
  EXPECT_TRUE(ring.extract(-5 * kFrame, -kFrame).empty());
}

TEST(EncodedRing, EmptyRing) {
  ev::EncodedRing ring(1000 * kMs, 100);
  EXPECT_TRUE(ring.extract(0, 1000 * kFrame).empty());
  EXPECT_EQ(ring.bytes(), 0u);
  EXPECT_EQ(ring.frames(), 0u);
  EXPECT_EQ(ring.oldest_pts(), -1);
  EXPECT_EQ(ring.newest_pts(), -1);
}

TEST(EncodedRing, FramesBeforeTheFirstKeyframeAreNotKept) {
  ev::EncodedRing ring(1000 * kMs, 1 << 20);
  ring.push(frame(0, false));
  ring.push(frame(1, false));
  EXPECT_EQ(ring.frames(), 0u);
  EXPECT_EQ(ring.evicted_early(), 0u);  // nothing was lost: the stream had not started
  ring.push(frame(2, true));
  ring.push(frame(3, false));
  EXPECT_EQ(indices(ring.extract(0, 10 * kFrame)), (std::vector<std::int64_t>{2, 3}));
}

TEST(EncodedRing, BytesEvictWholeGroupsEarlyAndCountThem) {
  // 10 s span (never reached), 100 bytes: 10 frames of 10 bytes. Keyframe
  // every 4: pushing frame 10 (110 bytes) drops group 0..3 (4 frames).
  ev::EncodedRing ring(10000 * kMs, 100);
  fill(ring, 10, 4);
  EXPECT_EQ(ring.evicted_early(), 0u);
  EXPECT_EQ(ring.bytes(), 100u);
  ring.push(frame(10, false));
  EXPECT_EQ(ring.evicted_early(), 4u);
  EXPECT_EQ(ring.oldest_pts(), 4 * kFrame);
  EXPECT_EQ(ring.bytes(), 70u);
  EXPECT_LE(ring.bytes(), 100u);
  // What is left still starts on a keyframe.
  EXPECT_TRUE(ring.extract(0, 100 * kFrame).front().keyframe);
}

TEST(EncodedRing, SpanEvictionIsNotCountedAsEarly) {
  ev::EncodedRing ring(500 * kMs, 1 << 20);
  fill(ring, 100, 2);
  EXPECT_EQ(ring.evicted_early(), 0u);
  EXPECT_LE(ring.frames(), 7u);  // 0.5 s + at most one group of 2
}

TEST(EncodedRing, AGroupBiggerThanTheBoundEmptiesTheRingAndCountsUntilTheNextKeyframe) {
  // Each frame 60 bytes, bound 100: the second frame of a group overflows.
  ev::EncodedRing ring(10000 * kMs, 100);
  ring.push(frame(0, true, 60));
  ring.push(frame(1, false, 60));  // 120 > 100: group 0..1 leaves
  EXPECT_EQ(ring.frames(), 0u);
  EXPECT_EQ(ring.evicted_early(), 2u);
  ring.push(frame(2, false, 60));  // no keyframe to start from: lost too
  EXPECT_EQ(ring.evicted_early(), 3u);
  ring.push(frame(3, true, 60));
  EXPECT_EQ(ring.frames(), 1u);
  EXPECT_EQ(ring.evicted_early(), 3u);
}

TEST(EncodedRing, ATimestampGoingBackIsKept) {
  ev::EncodedRing ring(1000 * kMs, 1 << 20);
  ring.push(frame(10, true));
  ring.push(frame(9, false));
  EXPECT_EQ(ring.frames(), 2u);
  EXPECT_EQ(ring.newest_pts(), 10 * kFrame);
}

TEST(EncodedRing, NegativeSpanKeepsTheLastGroup) {
  ev::EncodedRing ring(-5, 1 << 20);
  fill(ring, 10, 3);  // groups start at 0, 3, 6, 9
  EXPECT_EQ(indices(ring.extract(0, 100 * kFrame)), (std::vector<std::int64_t>{9}));
}

// One writer, three readers: every extract is a run of consecutive frames
// from a keyframe, the bounds hold throughout (run under TSan/ASan by
// scripts/sanitize.sh like the rest of the unit tests).
TEST(EncodedRing, OneWriterAndReadersAtOnce) {
  ev::EncodedRing ring(2000 * kMs, 4000);
  std::atomic<bool> done{false};
  std::atomic<int> bad{0}, extracts{0}, started{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r)
    readers.emplace_back([&] {
      started++;
      while (!done) {
        const std::int64_t newest = ring.newest_pts();
        const auto clip = ring.extract(newest - 1000 * kMs, newest);
        for (std::size_t i = 1; i < clip.size(); ++i)
          if (clip[i].pts_ns != clip[i - 1].pts_ns + kFrame) bad++;
        if (!clip.empty() && !clip.front().keyframe) bad++;
        if (ring.bytes() > 4000) bad++;
        extracts++;
      }
    });
  // A loaded machine may not run a reader before 20000 pushes are done:
  // the writer goes on until the readers have overlapped it a while.
  while (started < 3) std::this_thread::yield();
  int i = 0;
  for (; i < 20000 || extracts < 300; ++i) ring.push(frame(i, i % 7 == 0, 50));
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(extracts.load(), 0);
  // 2 s at 10 fps with 7-frame groups needs up to 27 frames of 50 bytes:
  // 4000 bytes hold 80, so the bound never cut the span.
  EXPECT_EQ(ring.evicted_early(), 0u);
  EXPECT_EQ(ring.newest_pts(), (i - 1) * kFrame);
}
