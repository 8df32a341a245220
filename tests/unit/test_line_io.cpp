// The line's pure logic (pipelines/lineio): encoder wrap-around, the belt clock,
// the belt scheduler (where a part reaches the ejector, late parts, one
// decision per track id) and the pulse queue.
#include <gtest/gtest.h>

#include <limits>

#include "lineio/belt_clock.h"
#include "lineio/belt_scheduler.h"
#include "lineio/modbus_output.h"
#include "lineio/register_map.h"

namespace torchinfer {
namespace {

constexpr std::int64_t kMs = 1'000'000;

TEST(EncoderUnwrap, SixteenBitsWrapsForwardAndSteppingBackIsNotAWrap) {
  EncoderUnwrap u(16);
  EXPECT_EQ(u.update(65530), 65530);
  EXPECT_EQ(u.update(4), 65540);      // wrapped past 65535
  EXPECT_EQ(u.update(65534), 65534);  // 6 back across the wrap
  EXPECT_EQ(u.update(10), 65546);
  EXPECT_EQ(u.update(0x1000a), 65546);  // bits above 16 are ignored
}

TEST(EncoderUnwrap, ThirtyTwoBitsWrap) {
  EncoderUnwrap u(32);
  EXPECT_EQ(u.update(0xfffffff0u), 0xfffffff0ll);
  EXPECT_EQ(u.update(0x10u), 0x100000010ll);
}

TEST(EncoderUnwrap, OtherWidthsAreRefused) {
  EXPECT_THROW(EncoderUnwrap(8), std::invalid_argument);
  EXPECT_THROW(EncoderUnwrap(24), std::invalid_argument);
}

TEST(BeltClock, InterpolatesBetweenSamplesAndExtrapolatesAtTheLastSpeed) {
  BeltClock c(40 * kMs);
  EXPECT_FALSE(c.ready());
  EXPECT_TRUE(c.add_sample(0, 100));
  EXPECT_TRUE(c.add_sample(20 * kMs, 120));
  EXPECT_TRUE(c.add_sample(40 * kMs, 160));
  EXPECT_FALSE(c.add_sample(40 * kMs, 170));  // not newer: refused
  EXPECT_TRUE(c.ready());
  EXPECT_DOUBLE_EQ(c.position_at(10 * kMs), 110.0);
  EXPECT_DOUBLE_EQ(c.position_at(30 * kMs), 140.0);
  EXPECT_DOUBLE_EQ(c.speed(), 1500.0);  // 60 counts over the 40 ms window
  EXPECT_DOUBLE_EQ(c.position_at(60 * kMs), 190.0);
  EXPECT_EQ(c.time_at(190.0, 40 * kMs), 60 * kMs);
  EXPECT_EQ(c.time_at(150.0, 40 * kMs), 40 * kMs);  // already passed
  EXPECT_EQ(c.last_sample_ns(), 40 * kMs);
}

TEST(BeltClock, SpeedUsesOnlyTheWindow) {
  BeltClock c(20 * kMs);
  c.add_sample(0, 0);
  c.add_sample(100 * kMs, 100);  // 1000/s
  c.add_sample(110 * kMs, 130);
  c.add_sample(120 * kMs, 160);  // 3000/s over the last 20 ms
  EXPECT_DOUBLE_EQ(c.speed(), 3000.0);
}

// 25 counts/s read every 10 ms: in a 50 ms window the count moves by 1
// or 2, whose whole-count speed would be 20 or 40; the speed is measured
// over 16 counts instead.
TEST(BeltClock, ASlowBeltsSpeedIsMeasuredOverEnoughCounts) {
  BeltClock c(50 * kMs);
  for (int i = 0; i <= 100; i++)
    c.add_sample(i * 10 * kMs, static_cast<std::int64_t>(i * 10 * 25 / 1000));  // floor
  // Last: t=1 s, count 25. Back 16 counts: count 9, last read at t=390 ms
  // (within a count of the truth, 25: one count in 16).
  EXPECT_NEAR(c.speed(), 16.0 / 0.61, 1e-9);
}

TEST(BeltClock, AStandingBeltNeverReachesAheadAndASetSpeedAlwaysDoes) {
  BeltClock c;
  c.add_sample(0, 50);
  c.add_sample(10 * kMs, 50);
  EXPECT_EQ(c.time_at(51, 10 * kMs), std::numeric_limits<std::int64_t>::max());
  BeltClock s = BeltClock::from_speed(500.0, 1000 * kMs);
  EXPECT_TRUE(s.ready());
  EXPECT_FALSE(s.from_encoder());
  EXPECT_DOUBLE_EQ(s.position_at(1200 * kMs), 100.0);
  EXPECT_EQ(s.time_at(250.0, 1000 * kMs), 1500 * kMs);
  EXPECT_FALSE(s.add_sample(2000 * kMs, 0));
}

// A belt at 1000 counts/s from t=0; 2 counts per mm, 0.5 mm per pixel,
// reference line at x=100 px, ejector 300 mm on, lead 20 ms.
struct Line {
  BeltClock belt = BeltClock::from_speed(1000.0, 0);
  BeltScheduler sched{BeltCalibration{0.5, 100.0, 2.0}, EjectorConfig{300.0, 20 * kMs}};
};

TEST(BeltScheduler, TargetIsWhereThePartReachesTheEjectorWhateverTheVerdictsLatency) {
  Line l;
  // Seen 40 px past the line at t=100 ms: at the line at count 100 - 40,
  // at the ejector 600 counts later.
  const PartSighting seen{7, 140.0, 100 * kMs};
  EXPECT_DOUBLE_EQ(l.sched.target_count(seen, l.belt), 660.0);
  const auto fast = l.sched.decide(seen, true, 150 * kMs, l.belt);
  Line other;
  const auto slow = other.sched.decide(seen, true, 600 * kMs, other.belt);
  ASSERT_EQ(fast.outcome, DecisionOutcome::scheduled);
  ASSERT_EQ(slow.outcome, DecisionOutcome::scheduled);
  ASSERT_TRUE(fast.pulse && slow.pulse);
  EXPECT_DOUBLE_EQ(fast.pulse->target_count, 660.0);
  EXPECT_DOUBLE_EQ(slow.pulse->target_count, 660.0);
  EXPECT_EQ(fast.pulse->coil, LineCoil::reject);
  EXPECT_EQ(fast.pulse->lead_ns, 20 * kMs);
  EXPECT_FALSE(fast.pulse->at_ns);
}

TEST(BeltScheduler, ASecondDecisionForATrackIsRefusedAndCounted) {
  Line l;
  EXPECT_EQ(l.sched.decide({3, 100.0, 0}, false, 10 * kMs, l.belt).outcome,
            DecisionOutcome::scheduled);
  const auto again = l.sched.decide({3, 120.0, 5 * kMs}, true, 20 * kMs, l.belt);
  EXPECT_EQ(again.outcome, DecisionOutcome::duplicate);
  EXPECT_FALSE(again.pulse);
  EXPECT_EQ(l.sched.counts().decided, 1u);
  EXPECT_EQ(l.sched.counts().duplicates, 1u);
}

TEST(BeltScheduler, PassedPartsPulseThePassOutputUnlessTurnedOff) {
  Line l;
  EXPECT_EQ(l.sched.decide({1, 100.0, 0}, false, 0, l.belt).pulse->coil, LineCoil::pass);
  EjectorConfig no_pass{300.0, 20 * kMs};
  no_pass.pass_pulses = false;
  BeltScheduler s({0.5, 100.0, 2.0}, no_pass);
  const auto r = s.decide({1, 100.0, 0}, false, 0, l.belt);
  EXPECT_EQ(r.outcome, DecisionOutcome::scheduled);
  EXPECT_FALSE(r.pulse);
}

TEST(BeltScheduler, AVerdictAfterThePulseMomentIsLateAndFiresTheRejectAtOnce) {
  Line l;
  // Target 600 (seen on the line at t=0); the pulse moment is 580 (20 ms of
  // lead at 1000/s): a verdict at 579 ms is in time, at 581 ms late.
  EXPECT_EQ(l.sched.decide({1, 100.0, 0}, false, 579 * kMs, l.belt).outcome,
            DecisionOutcome::scheduled);
  const auto late = l.sched.decide({2, 100.0, 0}, false, 581 * kMs, l.belt);
  EXPECT_EQ(late.outcome, DecisionOutcome::late);
  ASSERT_TRUE(late.pulse);
  EXPECT_EQ(late.pulse->coil, LineCoil::reject);  // a passed part too: fail-safe
  EXPECT_TRUE(late.pulse->late);
  EXPECT_EQ(*late.pulse->at_ns, 581 * kMs);
  EXPECT_EQ(l.sched.counts().late, 1u);
}

TEST(BeltScheduler, LateGoesToTheRecheckOutputOrNowhereAsConfigured) {
  BeltClock belt = BeltClock::from_speed(1000.0, 0);
  EjectorConfig recheck{300.0, 20 * kMs};
  recheck.has_recheck = true;
  BeltScheduler a({0.5, 100.0, 2.0}, recheck);
  EXPECT_EQ(a.decide({1, 100.0, 0}, true, 900 * kMs, belt).pulse->coil, LineCoil::recheck);
  EjectorConfig keep{300.0, 20 * kMs};
  keep.reject_late = false;
  BeltScheduler b({0.5, 100.0, 2.0}, keep);
  const auto r = b.decide({1, 100.0, 0}, true, 900 * kMs, belt);
  EXPECT_EQ(r.outcome, DecisionOutcome::late_unfired);
  EXPECT_FALSE(r.pulse);
  EXPECT_EQ(b.counts().late, 1u);
}

TEST(BeltScheduler, WithoutAnEncoderReadingNothingIsScheduled) {
  BeltClock none;
  BeltScheduler s({1, 0, 1}, {100.0, 0});
  EXPECT_EQ(s.decide({1, 0, 0}, true, 0, none).outcome, DecisionOutcome::no_encoder);
  EXPECT_EQ(s.counts().no_encoder, 1u);
  EXPECT_EQ(s.counts().decided, 0u);
}

TEST(BeltScheduler, ForgetsOnlyTheOldestIdsPastItsMemory) {
  BeltClock belt = BeltClock::from_speed(1000.0, 0);
  EjectorConfig e{300.0, 0};
  e.remembered_ids = 2;
  BeltScheduler s({1, 0, 1}, e);
  for (long long id : {1, 2, 3}) s.decide({id, 0, 0}, true, 0, belt);
  EXPECT_EQ(s.decide({3, 0, 0}, true, 0, belt).outcome, DecisionOutcome::duplicate);
  EXPECT_EQ(s.decide({2, 0, 0}, true, 0, belt).outcome, DecisionOutcome::duplicate);
  EXPECT_EQ(s.decide({1, 0, 0}, true, 0, belt).outcome, DecisionOutcome::scheduled);
}

TEST(PulseQueue, ReleasesPulsesInTargetOrderWhenTheBeltLeadAheadReachesThem) {
  BeltClock belt = BeltClock::from_speed(1000.0, 0);
  PulseQueue q;
  PulsePlan a{1, LineCoil::reject, 500.0, 10 * kMs, std::nullopt, false};
  PulsePlan b{2, LineCoil::pass, 300.0, 10 * kMs, std::nullopt, false};
  PulsePlan c{3, LineCoil::reject, 0.0, 0, 250 * kMs, true};
  q.add(a);
  q.add(b);
  q.add(c);
  EXPECT_EQ(q.next_due_ns(0, belt), 250 * kMs);
  EXPECT_TRUE(q.take_due(249 * kMs, belt).empty());
  auto due = q.take_due(290 * kMs, belt);  // 290 + 10 ms lead reaches 300
  ASSERT_EQ(due.size(), 2u);
  EXPECT_EQ(due[0].track_id, 3);
  EXPECT_EQ(due[1].track_id, 2);
  EXPECT_EQ(q.next_due_ns(290 * kMs, belt), 490 * kMs);
  EXPECT_TRUE(q.take_due(489 * kMs, belt).empty());
  ASSERT_EQ(q.take_due(490 * kMs, belt).size(), 1u);
  EXPECT_EQ(q.size(), 0u);
  EXPECT_EQ(q.next_due_ns(490 * kMs, belt), std::numeric_limits<std::int64_t>::max());
}

TEST(ModbusUrl, ParsesHostPortAndUnit) {
  std::string host, err;
  int port = 0, unit = 0;
  ASSERT_TRUE(parse_modbus_url("modbus://10.0.0.5:1502?unit=3", host, port, unit, err)) << err;
  EXPECT_EQ(host, "10.0.0.5");
  EXPECT_EQ(port, 1502);
  EXPECT_EQ(unit, 3);
  ASSERT_TRUE(parse_modbus_url("modbus://plc:502", host, port, unit, err));
  EXPECT_EQ(unit, 1);
  for (const char* bad : {"tcp://plc:502", "modbus://plc", "modbus://:502", "modbus://plc:0",
                          "modbus://plc:99999", "modbus://plc:5x", "modbus://plc:502?unit=300",
                          "modbus://plc:502?slave=1", "modbus://plc:502?unit="}) {
    EXPECT_FALSE(parse_modbus_url(bad, host, port, unit, err)) << bad;
    EXPECT_NE(err.find(bad), std::string::npos) << err;
  }
}

TEST(ModbusRegisterMap, DefaultsAreUsableAndBadMapsAreExplained) {
  EXPECT_EQ(check_register_map(ModbusRegisterMap{}), "");
  ModbusRegisterMap m;
  m.reject_coil = -1;
  EXPECT_NE(check_register_map(m).find("reject coil"), std::string::npos);
  m = {};
  m.part_base = 65530;
  EXPECT_NE(check_register_map(m).find("part registers"), std::string::npos);
  m = {};
  m.encoder_bits = 24;
  EXPECT_NE(check_register_map(m).find("16 or 32"), std::string::npos);
  m = {};
  m.queue_base = 100;
  m.queue_slots = 0;
  EXPECT_NE(check_register_map(m).find("queue"), std::string::npos);
  m = {};
  m.pulse_ns = 0;
  EXPECT_NE(check_register_map(m).find("pulse width"), std::string::npos);
  m = {};
  m.unit = 300;
  EXPECT_NE(check_register_map(m).find("unit"), std::string::npos);
}

}  // namespace
}  // namespace torchinfer
