// torchinfer-server's per-stream state machine, latency window and stream
// registry (ids, limit), without GStreamer.
#include <gtest/gtest.h>

#include "server/core/stream_health.h"
#include "server/core/stream_registry.h"

using namespace torchinfer::server;

TEST(StreamHealth, StartsRunsAndEnds) {
  StreamHealth h;
  EXPECT_EQ(h.state(), StreamState::kStarting);
  h.on_frame();
  EXPECT_EQ(h.state(), StreamState::kRunning);
  h.on_eos();
  EXPECT_EQ(h.state(), StreamState::kEnded);
  h.on_frame();  // nothing comes back from an end
  EXPECT_EQ(h.state(), StreamState::kEnded);
  EXPECT_EQ(h.reconnects(), 0u);
}

TEST(StreamHealth, OutageCountsOnceAndReconnectOnResume) {
  StreamHealth h;
  h.on_frame();
  h.on_source_lost("rtsp: error: refused");
  // Frames queued before the loss still come out: no recovery yet.
  h.on_frame();
  h.on_source_lost("rtsp: error: refused again");  // retries of one outage
  EXPECT_EQ(h.state(), StreamState::kReconnecting);
  EXPECT_EQ(h.disconnects(), 1u);
  EXPECT_EQ(h.reconnects(), 0u);
  EXPECT_EQ(h.last_error(), "rtsp: error: refused again");
  h.on_source_resumed();
  EXPECT_EQ(h.state(), StreamState::kRunning);
  EXPECT_EQ(h.reconnects(), 1u);
  // Recovered: the outage's reason moves to previous_error.
  EXPECT_EQ(h.last_error(), "");
  EXPECT_EQ(h.previous_error(), "rtsp: error: refused again");
  h.on_frame();
  h.on_source_resumed();  // not after an outage: nothing to count
  EXPECT_EQ(h.reconnects(), 1u);
  h.on_source_lost("rtsp: no frames");
  h.on_source_resumed();
  EXPECT_EQ(h.disconnects(), 2u);
  EXPECT_EQ(h.reconnects(), 2u);
  // The reason stays visible after recovery, for the operator, as history.
  EXPECT_EQ(h.last_error(), "");
  EXPECT_EQ(h.previous_error(), "rtsp: no frames");
  h.on_source_lost("rtsp: gone");  // down again: the new reason is the error
  EXPECT_EQ(h.last_error(), "rtsp: gone");
  EXPECT_EQ(h.previous_error(), "rtsp: no frames");
}

TEST(StreamHealth, FirstErrorIsKeptAndFailedIsFinal) {
  StreamHealth h;
  h.on_error("infer: Model file 'x.pt' not found");
  h.on_error("source: state change failed");
  EXPECT_EQ(h.state(), StreamState::kFailed);
  EXPECT_EQ(h.last_error(), "infer: Model file 'x.pt' not found");
  EXPECT_EQ(h.errors(), 2u);
  h.on_frame();
  h.on_source_lost("x");
  EXPECT_EQ(h.state(), StreamState::kFailed);
  h.on_stopping();
  EXPECT_EQ(h.state(), StreamState::kStopping);
}

TEST(StreamHealth, StateNames) {
  const char* names[] = {"starting", "running",  "reconnecting", "ended",
                         "failed",   "stopping", "degraded",     "stalled"};
  for (int i = 0; i < kStreamStateCount; ++i)
    EXPECT_STREQ(to_string(static_cast<StreamState>(i)), names[i]);
}

TEST(LatencyWindow, QuantilesOverRecentSumOverAll) {
  LatencyWindow w(100);
  EXPECT_EQ(w.quantile(0.5), 0);
  for (int i = 1; i <= 100; ++i) w.add(i / 1000.0);
  EXPECT_DOUBLE_EQ(w.quantile(0.5), 0.050);
  EXPECT_DOUBLE_EQ(w.quantile(0.99), 0.099);
  EXPECT_DOUBLE_EQ(w.quantile(1.0), 0.100);
  EXPECT_DOUBLE_EQ(w.quantile(0.0), 0.001);
  EXPECT_EQ(w.count(), 100u);
  EXPECT_NEAR(w.sum(), 5.050, 1e-9);
  for (int i = 0; i < 100; ++i) w.add(1.0);  // the window forgets, the sum does not
  EXPECT_DOUBLE_EQ(w.quantile(0.5), 1.0);
  EXPECT_EQ(w.count(), 200u);
  EXPECT_NEAR(w.sum(), 105.050, 1e-9);
  w.add(-1);
  w.add(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(w.count(), 200u);
}

TEST(StreamRegistry, IdsAreUniqueAndLimited) {
  StreamRegistry<int> r(2);
  EXPECT_EQ(r.add("a", std::make_shared<int>(1)), AddResult::kAdded);
  EXPECT_EQ(r.add("a", std::make_shared<int>(2)), AddResult::kDuplicateId);
  EXPECT_EQ(r.add("b", std::make_shared<int>(3)), AddResult::kAdded);
  EXPECT_EQ(r.add("c", std::make_shared<int>(4)), AddResult::kLimitReached);
  EXPECT_EQ(r.check("c"), AddResult::kLimitReached);
  EXPECT_EQ(*r.find("a"), 1);
  EXPECT_EQ(r.find("c"), nullptr);
  EXPECT_EQ(r.remove("zzz"), nullptr);
  EXPECT_EQ(*r.remove("a"), 1);
  EXPECT_EQ(r.size(), 1u);
  // "a" is stopping until forgotten: it holds its place and its id.
  EXPECT_EQ(r.add("c", std::make_shared<int>(4)), AddResult::kLimitReached);
  ASSERT_TRUE(r.forget(r.find_stopping("a")));
  EXPECT_EQ(r.add("c", std::make_shared<int>(4)), AddResult::kAdded);
  ASSERT_EQ(r.items().size(), 2u);
  EXPECT_EQ(r.items()[0].first, "b");  // in the order added
  EXPECT_EQ(r.items()[1].first, "c");
  EXPECT_EQ(r.added(), 3u);
  EXPECT_EQ(r.removed(), 1u);
}
