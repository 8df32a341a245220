// Which frames mode=detections publishes.
#include <gtest/gtest.h>

#include "export/event_filter.h"

using namespace torchinfer;

namespace {

FrameRecord classified(int top1, bool inferred = true) {
  FrameRecord r;
  r.has_inference = true;
  r.inferred = inferred;
  r.classification.push_back({top1, "c" + std::to_string(top1), 0.9});
  r.classification.push_back({top1 + 1, "other", 0.05});
  return r;
}

FrameRecord with_detections(int n, bool has_inference = true, bool inferred = true) {
  FrameRecord r;
  r.has_inference = has_inference;
  r.inferred = inferred;
  for (int i = 0; i < n; ++i) r.detections.push_back({});
  return r;
}

}  // namespace

TEST(EventFilter, FirstClassificationAndEachTop1ChangeAreEvents) {
  EventFilter f;
  const int top1[] = {2, 2, 3, 3, 3, 2, 0, 0};
  const bool want[] = {true, false, true, false, false, true, true, false};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(f.is_event(classified(top1[i])), want[i]) << "frame " << i;
}

TEST(EventFilter, AnyDetectionIsAnEvent) {
  EventFilter f;
  EXPECT_TRUE(f.is_event(with_detections(1)));
  EXPECT_TRUE(f.is_event(with_detections(3)));
  EXPECT_FALSE(f.is_event(with_detections(0)));
  EXPECT_TRUE(f.is_event(with_detections(2, /*has_inference=*/false)));  // another detector's ROIs
}

TEST(EventFilter, ReusedResultsNeverAreAndDoNotMoveTheBaseline) {
  EventFilter f;
  EXPECT_TRUE(f.is_event(classified(1)));
  EXPECT_FALSE(f.is_event(classified(4, /*inferred=*/false)));
  EXPECT_FALSE(f.is_event(with_detections(2, true, /*inferred=*/false)));
  EXPECT_FALSE(f.is_event(classified(1)));  // still 1 since the last inferred frame
  EXPECT_TRUE(f.is_event(classified(4)));
}

TEST(EventFilter, FramesWithoutResultsAreNotEventsAndResetStartsOver) {
  EventFilter f;
  EXPECT_FALSE(f.is_event(FrameRecord{}));
  EXPECT_TRUE(f.is_event(classified(1)));
  f.reset();
  EXPECT_TRUE(f.is_event(classified(1)));
}

namespace {

FrameRecord with_track_event(FrameRecord r, bool ended = true) {
  TrackEventRecord e;
  e.ended = ended;
  e.id = 5;
  e.label = "bolt";
  e.reason = ended ? "lost" : "";
  r.track_events.push_back(e);
  return r;
}

}  // namespace

// A track that ends where its object is gone: no detection left on the
// frame, still published.
TEST(EventFilter, TrackEventsAreEventsWithoutDetections) {
  EventFilter f;
  EXPECT_FALSE(f.is_event(with_detections(0)));
  EXPECT_TRUE(f.is_event(with_track_event(with_detections(0))));
  EXPECT_TRUE(f.is_event(with_track_event(with_detections(0), /*ended=*/false)));
  EXPECT_TRUE(f.is_event(with_track_event(FrameRecord{})));  // no torchinfer result
  EXPECT_FALSE(f.is_event(FrameRecord{}));
}

// torchtrack tracking-type=zero-term tracks frames that reused a result:
// their track events are news, their class still is not.
TEST(EventFilter, TrackEventsOnReusedResultsAreEventsAndKeepTheBaseline) {
  EventFilter f;
  EXPECT_TRUE(f.is_event(classified(1)));
  EXPECT_TRUE(f.is_event(with_track_event(with_detections(2, true, /*inferred=*/false))));
  EXPECT_TRUE(f.is_event(with_track_event(classified(4, /*inferred=*/false))));
  EXPECT_FALSE(f.is_event(classified(4, /*inferred=*/false)));
  EXPECT_FALSE(f.is_event(classified(1)));  // still 1 since the last inferred frame
}
