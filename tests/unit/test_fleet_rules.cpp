// Many boxes (pipelines/server/core/shard.h, probes.h): the stable hash, rendezvous
// ownership and how little of it moves when the fleet grows, the K/N and
// host name parsers, the shard label on Prometheus text, and /readyz's
// rules with their grace period.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <set>

#include "common/error.h"
#include "server/core/metrics_text.h"
#include "server/core/probes.h"
#include "server/core/server_config.h"
#include "server/core/shard.h"

namespace torchinfer::server {
namespace {

std::vector<std::string> ids(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("cam-" + std::to_string(i));
  return out;
}

TEST(StableHash, Fnv1a64MatchesThePublishedTestVectors) {
  // From the FNV reference (isthe.com/chongo/tech/comp/fnv): "", "a", "foobar".
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ULL);
}

TEST(StableHash, Mix64IsSplitMix64sFinaliser) {
  // SplitMix64 seeded with 0 yields mix64(0x9e3779b97f4a7c15) first.
  EXPECT_EQ(mix64(0x9e3779b97f4a7c15ULL), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(mix64(0), 0u);
}

TEST(StableHash, OwnersAreFixedAcrossBuilds) {
  // Pinned values: a change to the hash would move every plant's cameras.
  EXPECT_EQ(rendezvous_weight("cam0", 0), mix64(fnv1a64(std::string("cam0\0\0\0\0\0", 9))));
  EXPECT_EQ(rendezvous_weight("cam0", 1), mix64(fnv1a64(std::string("cam0\0\1\0\0\0", 9))));
  std::string owners;
  for (int i = 0; i < 8; ++i) owners += std::to_string(owner_shard("cam" + std::to_string(i), 2));
  // Computed independently from the formula in shard.h (Python, 64-bit wrap).
  EXPECT_EQ(owners, "10001111");
}

TEST(Rendezvous, EveryIdHasExactlyOneOwnerInRange) {
  for (int n = 1; n <= 16; ++n)
    for (const auto& id : ids(500)) {
      const int k = owner_shard(id, n);
      ASSERT_GE(k, 0);
      ASSERT_LT(k, n);
    }
  EXPECT_EQ(owner_shard("anything", 1), 0);
}

TEST(Rendezvous, SharesAreEvenWithinFivePercentOverTenThousandIds) {
  for (int n : {2, 3, 8, 16}) {
    std::vector<int> count(n);
    for (const auto& id : ids(10000)) count[owner_shard(id, n)]++;
    const double expected = 10000.0 / n;
    for (int k = 0; k < n; ++k)
      EXPECT_NEAR(count[k], expected, 0.05 * expected + 4 * std::sqrt(expected))
          << "shard " << k << " of " << n;
  }
}

// Growing N to N+1 moves exactly the ids the new shard wins, and no id
// between old shards; the share is 1/(N+1) up to sampling noise (three
// standard deviations of a binomial over 10 000 ids). The figures are
// printed for docs/deployment.md.
TEST(Rendezvous, GrowingTheFleetMovesAtMostOneInNPlusOne) {
  const std::vector<std::string> all = ids(10000);
  for (int n = 1; n <= 16; ++n) {
    int moved = 0;
    for (const auto& id : all) {
      const int before = owner_shard(id, n), after = owner_shard(id, n + 1);
      if (before != after) {
        ASSERT_EQ(after, n) << id << " moved between old shards " << before << " -> " << after;
        moved++;
      }
    }
    const double share = moved / 10000.0, bound = 1.0 / (n + 1);
    const double noise = 3 * std::sqrt(bound * (1 - bound) / 10000.0);
    std::printf("N %2d -> %2d: moved %4d of 10000 = %.4f (1/(N+1) = %.4f)\n", n, n + 1, moved,
                share, bound);
    EXPECT_LE(share, bound + noise) << "N " << n;
    EXPECT_GE(share, bound - noise) << "N " << n;
  }
}

TEST(ShardFlag, ParsesKOfN) {
  const ShardSpec s = parse_shard("3/16", "--shard");
  EXPECT_EQ(s.index, 3);
  EXPECT_EQ(s.count, 16);
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(parse_shard("0/1", "--shard").count, 1);
}

void expect_refused(const std::string& text, const std::string& part) {
  try {
    parse_shard(text, "--shard");
    ADD_FAILURE() << "accepted " << text;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("--shard: ", 0), 0u) << e.what();
  }
}

TEST(ShardFlag, RefusesWhatIsNotKOfN) {
  expect_refused("", "empty: give K/N");
  expect_refused("3", "is not K/N");
  expect_refused("1/", "is not K/N");
  expect_refused("/4", "is not K/N");
  expect_refused("-1/4", "is not K/N");
  expect_refused("1/4x", "is not K/N");
  expect_refused("1 /4", "is not K/N");
  expect_refused("99999999999/4", "is not K/N");
  expect_refused("4/4", "run from 0 to 3");
  expect_refused("0/0", "out of range");
  expect_refused("0/1025", "out of range");
}

TEST(ShardFlag, OrdinalIsTheHostNamesTrailingNumber) {
  EXPECT_EQ(ordinal_from_hostname("torchinfer-3"), 3);
  EXPECT_EQ(ordinal_from_hostname("plant-a-torchinfer-12"), 12);
  EXPECT_EQ(ordinal_from_hostname("x-0"), 0);
  for (const char* bad : {"torchinfer", "torchinfer-", "torchinfer-3a", "torchinfer-3.local", ""})
    EXPECT_THROW(ordinal_from_hostname(bad), Error) << bad;
}

TEST(ShardFlag, ResolvesInTheDocumentedOrder) {
  ShardSources s;
  EXPECT_FALSE(resolve_shard(s).enabled);
  s.config_shard = "1/3";
  EXPECT_EQ(resolve_shard(s).index, 1);
  s.flag = "2/3";
  EXPECT_EQ(resolve_shard(s).index, 2);  // the flag wins over the config
  s = {};
  s.from_hostname = true;
  s.hostname = "torchinfer-2";
  s.config_count = 4;
  ShardSpec r = resolve_shard(s);
  EXPECT_EQ(r.index, 2);
  EXPECT_EQ(r.count, 4);
  s.flag_count = 5;
  EXPECT_EQ(resolve_shard(s).count, 5);  // --shards over the config's
}

TEST(ShardFlag, RefusesContradictionsAndMissingCounts) {
  ShardSources s;
  s.from_hostname = true;
  s.hostname = "torchinfer-1";
  EXPECT_THROW(resolve_shard(s), Error);  // no N anywhere
  s.config_count = 1;
  EXPECT_THROW(resolve_shard(s), Error);  // ordinal 1 of 1 does not exist
  s = {};
  s.config_count = 4;
  EXPECT_THROW(resolve_shard(s), Error);  // a split config but no K: not every camera here
  s.flag = "1/4";
  s.from_hostname = true;
  EXPECT_THROW(resolve_shard(s), Error);  // both ways at once
  s = {};
  s.config_shard = "1/4";
  s.config_count = 3;
  EXPECT_THROW(resolve_shard(s), Error);  // the config disagrees with itself
}

TEST(ShardConfig, SharedConfigIsBoundByMaxStreamsPerShardNotInAll) {
  nlohmann::json c = {{"models", {{{"id", "m"}, {"path", "/m.pt"}}}},
                      {"max_streams", 2},
                      {"streams", nlohmann::json::array()}};
  for (int i = 0; i < 5; ++i)
    c["streams"].push_back({{"id", "c" + std::to_string(i)}, {"uri", "file:///a.mkv"}});
  EXPECT_THROW(parse_server_config(c, "s.json"), FieldError);
  c["shards"] = 4;
  const ServerConfig parsed = parse_server_config(c, "s.json");
  EXPECT_EQ(parsed.streams.size(), 5u);
  EXPECT_EQ(parsed.shards, 4);
}

TEST(ShardConfig, BadShardFieldsNameTheField) {
  nlohmann::json c = {{"models", {{{"id", "m"}, {"path", "/m.pt"}}}}};
  for (const auto& [field, value] :
       std::vector<std::pair<std::string, nlohmann::json>>{{"shard", "2/2"},
                                                           {"shard", 1},
                                                           {"shards", 0},
                                                           {"shards", 1025},
                                                           {"ready_grace_s", -1}}) {
    nlohmann::json bad = c;
    bad[field] = value;
    try {
      parse_server_config(bad, "s.json");
      ADD_FAILURE() << field << " " << value << " accepted";
    } catch (const FieldError& e) {
      EXPECT_EQ(e.field(), field) << e.what();
    }
  }
}

TEST(ShardLabel, AddsTheLabelToEverySampleAndNoComment) {
  const std::string in =
      "# HELP a_total A.\n# TYPE a_total counter\na_total 3\n"
      "b{stream=\"x\",model=\"m\"} 1.5\nc{} 2\n";
  EXPECT_EQ(add_constant_label(in, "shard", "1"),
            "# HELP a_total A.\n# TYPE a_total counter\na_total{shard=\"1\"} 3\n"
            "b{shard=\"1\",stream=\"x\",model=\"m\"} 1.5\nc{shard=\"1\"} 2\n");
  EXPECT_EQ(add_constant_label("", "shard", "0"), "");
  EXPECT_EQ(add_constant_label("x 1", "shard", "0"), "x{shard=\"0\"} 1");
}

// The publish-loss alert's series: only streams that publish have it.
TEST(MqttSeries, CountsEachResultOfAPublishingStreamOnly) {
  MetricsSnapshot m;
  StreamFigures pub, quiet;
  pub.id = "a";
  pub.model = "m";
  pub.mqtt = true;
  pub.mqtt_published = 7;
  pub.mqtt_failed = 2;
  pub.mqtt_dropped = 1;
  quiet.id = "b";
  quiet.model = "m";
  m.streams = {pub, quiet};
  const std::string text = render_prometheus(m);
  const std::string series = "torchinfer_stream_mqtt_messages_total{stream=\"a\",model=\"m\",";
  EXPECT_NE(text.find(series + "result=\"published\"} 7\n"), std::string::npos) << text;
  EXPECT_NE(text.find(series + "result=\"failed\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find(series + "result=\"dropped\"} 1\n"), std::string::npos);
  EXPECT_EQ(text.find("torchinfer_stream_mqtt_messages_total{stream=\"b\""), std::string::npos);
  EXPECT_NE(text.find("# TYPE torchinfer_stream_mqtt_messages_total counter\n"), std::string::npos);
}

// Probes ------------------------------------------------------------------

TEST(Readiness, ReadyWhenEveryCameraRuns) {
  StateClock clock;
  const std::vector<CameraState> cams = {{"a", "running"}, {"b", "running"}};
  clock.observe(cams, 0);
  const Readiness r = evaluate_readiness(cams, clock, 100, 30, true, false);
  EXPECT_TRUE(r.ready);
  EXPECT_TRUE(r.reasons.empty());
  EXPECT_TRUE(evaluate_readiness({}, clock, 0, 30, true, false).ready);  // no cameras
}

TEST(Readiness, StartingAndReconnectingAreToleratedForTheGracePeriodOnly) {
  StateClock clock;
  std::vector<CameraState> cams = {{"a", "starting"}, {"b", "running"}};
  clock.observe(cams, 10);
  EXPECT_TRUE(evaluate_readiness(cams, clock, 39.9, 30, true, false).ready);
  Readiness r = evaluate_readiness(cams, clock, 40, 30, true, false);
  ASSERT_FALSE(r.ready);
  ASSERT_EQ(r.reasons.size(), 1u);
  EXPECT_EQ(r.reasons[0]["stream"], "a");
  EXPECT_EQ(r.reasons[0]["state"], "starting");
  EXPECT_DOUBLE_EQ(r.reasons[0]["for_s"].get<double>(), 30);
  EXPECT_DOUBLE_EQ(r.reasons[0]["grace_s"].get<double>(), 30);
  // Running, then reconnecting: the grace period starts again at the change.
  cams[0].state = "running";
  clock.observe(cams, 41);
  cams[0].state = "reconnecting";
  clock.observe(cams, 50);
  EXPECT_TRUE(evaluate_readiness(cams, clock, 79, 30, true, false).ready);
  r = evaluate_readiness(cams, clock, 80, 30, true, false);
  ASSERT_EQ(r.reasons.size(), 1u);
  EXPECT_EQ(r.reasons[0]["state"], "reconnecting");
}

// A machine-vision camera losing most frames (degraded) still counts as
// running; one that delivers no complete frame (stalled) gets the grace of
// a reconnection and then makes the shard not ready, naming it.
TEST(Readiness, DegradedCountsAsRunningAndStalledGetsTheGraceOnly) {
  StateClock clock;
  std::vector<CameraState> cams = {{"a", "degraded"}, {"b", "running"}};
  clock.observe(cams, 0);
  EXPECT_TRUE(evaluate_readiness(cams, clock, 1000, 30, true, false).ready);
  cams[0].state = "stalled";
  clock.observe(cams, 100);
  EXPECT_TRUE(evaluate_readiness(cams, clock, 129.9, 30, true, false).ready);
  const Readiness r = evaluate_readiness(cams, clock, 130, 30, true, false);
  ASSERT_FALSE(r.ready);
  ASSERT_EQ(r.reasons.size(), 1u);
  EXPECT_EQ(r.reasons[0]["stream"], "a");
  EXPECT_EQ(r.reasons[0]["state"], "stalled");
  EXPECT_DOUBLE_EQ(r.reasons[0]["for_s"].get<double>(), 30);
  EXPECT_DOUBLE_EQ(r.reasons[0]["grace_s"].get<double>(), 30);
}

TEST(Readiness, FailedAndEndedCamerasAreNotReadyAtOnce) {
  StateClock clock;
  const std::vector<CameraState> cams = {{"a", "failed"}, {"b", "ended"}, {"c", "running"}};
  clock.observe(cams, 0);
  const Readiness r = evaluate_readiness(cams, clock, 0, 30, true, false);
  ASSERT_FALSE(r.ready);
  ASSERT_EQ(r.reasons.size(), 2u);
  EXPECT_EQ(r.reasons[0]["stream"], "a");
  EXPECT_EQ(r.reasons[0]["state"], "failed");
  EXPECT_FALSE(r.reasons[0].contains("grace_s"));
  EXPECT_EQ(r.reasons[1]["stream"], "b");
  EXPECT_EQ(r.reasons[1]["state"], "ended");
}

TEST(Readiness, RemovedCamerasStillStoppingDoNotCount) {
  StateClock clock;
  const std::vector<CameraState> cams = {{"a", "stopping"}, {"a", "running"}};
  clock.observe(cams, 0);
  EXPECT_TRUE(evaluate_readiness(cams, clock, 0, 30, true, false).ready);
}

TEST(Readiness, ModelsNotLoadedOrDrainingIsNotReady) {
  StateClock clock;
  Readiness r = evaluate_readiness({}, clock, 0, 30, false, false);
  ASSERT_EQ(r.reasons.size(), 1u);
  EXPECT_EQ(r.reasons[0]["reason"], "models are not loaded yet");
  r = evaluate_readiness({}, clock, 0, 30, true, true);
  ASSERT_EQ(r.reasons.size(), 1u);
  EXPECT_NE(r.reasons[0]["reason"].get<std::string>().find("draining"), std::string::npos);
}

TEST(Readiness, AnUnseenCameraHasAgeZeroAndAGoneOneIsForgotten) {
  StateClock clock;
  EXPECT_EQ(clock.age("a", 5), 0);
  clock.observe({{"a", "starting"}}, 1);
  EXPECT_EQ(clock.age("a", 5), 4);
  clock.observe({}, 6);
  EXPECT_EQ(clock.age("a", 7), 0);
  // Added again: its own new start, not the old one's.
  clock.observe({{"a", "starting"}}, 8);
  EXPECT_EQ(clock.age("a", 9), 1);
}

}  // namespace
}  // namespace torchinfer::server
