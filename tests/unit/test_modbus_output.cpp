// ModbusOutput against a real Modbus TCP server on 127.0.0.1 (libmodbus'
// server side, tests/unit/modbus_server.h): what lands in which register,
// pulses on and off, the encoder read with wrap-around, and a PLC that is
// away: the caller is never held, every failure is counted, it reconnects.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <thread>

#include "lineio/modbus_output.h"
#include "modbus_server.h"

namespace torchinfer {
namespace {

constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kLong = 10'000 * kMs;  // a bound, never expected to pass

ModbusOptions options(int port) {
  ModbusOptions o;
  o.port = port;
  o.belt_counts_per_s = 1000.0;
  o.map.pulse_ns = 5 * kMs;
  o.map.heartbeat_ns = 3'600'000 * kMs;  // one beat, at the first turn
  o.map.queue_base = 100;
  o.map.queue_slots = 2;
  o.backoff_min_ns = 20 * kMs;
  o.backoff_max_ns = 40 * kMs;
  return o;
}

template <typename F>
bool wait_for(F done) {
  for (int i = 0; i < 2000 && !done(); i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return done();
}

TEST(ModbusOutput, WritesThePartsRegistersAndTheHeartbeat) {
  test::ModbusTestServer plc;
  ModbusOutput out(options(plc.port()));
  ASSERT_TRUE(out.publish({70000, 3, LineVerdictCode::reject, 0.8765}));
  ASSERT_TRUE(out.publish({70001, 1, LineVerdictCode::pass, 0.5}));
  ASSERT_TRUE(out.publish({70002, -1, LineVerdictCode::late, 2.0}));
  EXPECT_EQ(out.drain(kLong), 0u);
  // id 70002 = 1:4466; class unknown 0xffff; late; score clamped to 1.000;
  // 1 passed, 1 rejected, 1 late.
  EXPECT_EQ(plc.holding(0, 11),
            (std::vector<std::uint16_t>{1, 4466, 0xffff, 3, 1000, 0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(plc.holding(20, 1), std::vector<std::uint16_t>{1});
  const LineStats s = out.stats();
  EXPECT_EQ(s.state, LineState::connected);
  EXPECT_EQ(s.writes, 4u);
  EXPECT_EQ(s.write_failures, 0u);
}

TEST(ModbusOutput, APulseGoesOnThenOffAndOneStillOnIsMergedAndCounted) {
  test::ModbusTestServer plc;
  ModbusOutput out(options(plc.port()));
  const std::int64_t now = steady_now_ns();
  ASSERT_TRUE(out.pulse({1, LineCoil::reject, 0, 0, now, false}));
  ASSERT_TRUE(out.pulse({2, LineCoil::reject, 0, 0, now, false}));
  ASSERT_TRUE(out.pulse({3, LineCoil::pass, 0, 0, now, false}));
  EXPECT_EQ(out.drain(kLong), 0u);
  const auto w = plc.coil_writes();
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(w[0].addr, 0);  // reject on
  EXPECT_TRUE(w[0].on);
  EXPECT_EQ(w[1].addr, 1);  // pass on
  EXPECT_TRUE(w[1].on);
  int offs = 0;
  for (std::size_t i = 2; i < 4; i++) offs += !w[i].on;
  EXPECT_EQ(offs, 2);
  const LineStats s = out.stats();
  EXPECT_EQ(s.pulses_reject, 1u);
  EXPECT_EQ(s.pulses_pass, 1u);
  EXPECT_EQ(s.pulses_merged, 1u);
}

// The belt runs 1000 counts/s from the output's start: drain() returns once
// it has carried the queued parts past the ejector (the PLC fires them; the
// heartbeat goes on until then).
// A late part's fail-safe pulse: the recheck coil when there is one, else
// the reject coil; counted as recheck either way.
TEST(ModbusOutput, LatePartsGoToTheRecheckCoilOrTheReject) {
  for (int recheck : {5, -1}) {
    test::ModbusTestServer plc;
    ModbusOptions o = options(plc.port());
    o.map.recheck_coil = recheck;
    ModbusOutput out(o);
    ASSERT_TRUE(out.pulse({1, LineCoil::recheck, 0, 0, steady_now_ns(), true}));
    EXPECT_EQ(out.drain(kLong), 0u);
    const auto w = plc.coil_writes();
    ASSERT_EQ(w.size(), 2u);
    EXPECT_EQ(w[0].addr, recheck < 0 ? 0 : recheck);
    EXPECT_TRUE(w[0].on);
    EXPECT_FALSE(w[1].on);
    EXPECT_EQ(out.stats().pulses_recheck, 1u);
    EXPECT_EQ(out.stats().pulses_reject, 0u);
  }
}

TEST(ModbusOutput, QueueEntriesGoRoundTheSlotsAndDrainWaitsForTheirParts) {
  test::ModbusTestServer plc;
  ModbusOutput out(options(plc.port()));
  out.enqueue({1, 20, LineVerdictCode::reject});
  out.enqueue({2, 200, LineVerdictCode::pass});
  out.enqueue({3, -(1ll << 32) + 0xff, LineVerdictCode::reject});  // mod 2^32: 0xff
  EXPECT_EQ(out.drain(kLong), 0u);
  EXPECT_GE(out.belt().position_at(steady_now_ns()), 200.0);
  EXPECT_EQ(out.stats().queued_ahead, 0u);
  EXPECT_EQ(plc.holding(100, 8), (std::vector<std::uint16_t>{0, 0xff, 2, 3, 0, 200, 1, 2}));
}

TEST(ModbusOutput, ReadsTheEncoderAcrossItsWrap) {
  test::ModbusTestServer plc;
  plc.set_input(7, 65530);
  ModbusOptions o = options(plc.port());
  o.map.encoder_register = 7;
  o.map.encoder_poll_ns = 2 * kMs;
  ModbusOutput out(o);
  ASSERT_TRUE(wait_for([&] { return out.stats().encoder_reads >= 1; }));
  plc.set_input(7, 4);
  const auto reads = out.stats().encoder_reads;
  ASSERT_TRUE(wait_for([&] { return out.stats().encoder_reads >= reads + 2; }));
  EXPECT_DOUBLE_EQ(out.belt().position_at(out.belt().last_sample_ns()), 65540.0);
  EXPECT_EQ(out.stats().encoder_failures, 0u);
}

TEST(ModbusOutput, ReadsAThirtyTwoBitEncoderFromHoldingRegistersHighWordFirst) {
  test::ModbusTestServer plc;
  plc.set_holding(30, {0xffff, 0xfff0});
  ModbusOptions o = options(plc.port());
  o.map.encoder_register = 30;
  o.map.encoder_input = false;
  o.map.encoder_bits = 32;
  o.map.encoder_poll_ns = 2 * kMs;
  ModbusOutput out(o);
  ASSERT_TRUE(wait_for([&] { return out.stats().encoder_reads >= 1; }));
  EXPECT_DOUBLE_EQ(out.belt().position_at(out.belt().last_sample_ns()), 4294967280.0);
  plc.set_holding(30, {0, 0x10});
  const auto reads = out.stats().encoder_reads;
  ASSERT_TRUE(wait_for([&] { return out.stats().encoder_reads >= reads + 2; }));
  EXPECT_DOUBLE_EQ(out.belt().position_at(out.belt().last_sample_ns()), 4294967312.0);
  EXPECT_EQ(out.stats().encoder_resets, 0u);
}

// A PLC restarted: its counter starts again from 0. A pulse pending then
// moves with the new counter: it comes 100 counts on, not when the new
// counter reaches the old count (never, here).
TEST(ModbusOutput, ACounterResetMovesThePendingPulsesWithIt) {
  test::ModbusTestServer plc;
  plc.set_input(7, 5000);
  ModbusOptions o = options(plc.port());
  o.map.encoder_register = 7;
  o.map.encoder_poll_ns = 2 * kMs;
  ModbusOutput out(o);
  ASSERT_TRUE(wait_for([&] { return out.stats().encoder_reads >= 3; }));
  ASSERT_TRUE(out.pulse({1, LineCoil::reject, 5100.0, 0, std::nullopt, false}));
  plc.set_input(7, 0);
  ASSERT_TRUE(wait_for([&] { return out.stats().encoder_resets == 1; }));
  // The belt moves on, 10 counts every 20 ms, to 150.
  for (int c = 10; c <= 150; c += 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    plc.set_input(7, static_cast<std::uint16_t>(c));
  }
  EXPECT_EQ(out.drain(kLong), 0u);
  const auto w = plc.coil_writes();
  ASSERT_EQ(w.size(), 2u);
  EXPECT_TRUE(w[0].on);
  EXPECT_GE(w[0].encoder, 90);
  EXPECT_LE(w[0].encoder, 110);
  EXPECT_EQ(out.stats().pulses_reject, 1u);
  EXPECT_EQ(out.stats().encoder_resets, 1u);
}

// The threads of this process running SCHED_FIFO at `prio` (from
// /proc/self/task/*/stat: rt_priority and policy are fields 40 and 41).
int fifo_threads(int prio) {
  int n = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream f(task.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::istringstream rest(stat.substr(stat.rfind(')') + 2));  // after "pid (comm) "
    std::vector<std::string> fields((std::istream_iterator<std::string>(rest)),
                                    std::istream_iterator<std::string>());
    // fields[0] is field 3 (state): field k is fields[k - 3].
    if (fields.size() > 38 && fields[37] == std::to_string(prio) && fields[38] == "1") n++;
  }
  return n;
}

// With a real-time priority the output's thread runs SCHED_FIFO, or, when
// the system refuses, says so.
TEST(ModbusOutput, TakesTheRealTimePriorityOrSaysWhyNot) {
  test::ModbusTestServer plc;
  ModbusOptions o = options(plc.port());
  o.realtime_priority = 7;
  std::vector<std::string> logs;
  std::mutex mu;
  o.log = [&](const std::string& s) {
    std::lock_guard<std::mutex> lock(mu);
    logs.push_back(s);
  };
  EXPECT_EQ(fifo_threads(7), 0);
  ModbusOutput out(o);
  out.publish({1, 0, LineVerdictCode::pass, 1.0});
  EXPECT_EQ(out.drain(kLong), 0u);
  std::lock_guard<std::mutex> lock(mu);
  bool refused = false;
  for (const auto& l : logs)
    refused |= l.find("cannot run the output at real-time") != std::string::npos;
  EXPECT_EQ(fifo_threads(7) + refused, 1);
}

// A port where nobody listens.
int closed_port() {
  test::ModbusTestServer gone;
  return gone.port();
}

TEST(ModbusOutput, WithThePlcAwayNothingBlocksAndEveryLossIsCounted) {
  ModbusOptions o = options(closed_port());
  std::vector<std::string> logs;
  std::mutex mu;
  o.log = [&](const std::string& s) {
    std::lock_guard<std::mutex> lock(mu);
    logs.push_back(s);
  };
  ModbusOutput out(o);
  EXPECT_TRUE(out.publish({1, 0, LineVerdictCode::pass, 1.0}));
  EXPECT_TRUE(out.pulse({1, LineCoil::reject, 0, 0, steady_now_ns(), false}));
  EXPECT_EQ(out.drain(kLong), 0u);
  const LineStats s = out.stats();
  EXPECT_EQ(s.state, LineState::connecting);
  EXPECT_EQ(s.write_failures, 2u);
  EXPECT_EQ(s.pulses_lost, 1u);
  EXPECT_EQ(s.pulses_reject, 0u);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_FALSE(logs.empty());
  EXPECT_NE(logs[0].find("cannot connect"), std::string::npos) << logs[0];
}

TEST(ModbusOutput, ReconnectsWhenThePlcComesBack) {
  auto plc = std::make_unique<test::ModbusTestServer>();
  const int port = plc->port();
  ModbusOutput out(options(port));
  out.publish({1, 0, LineVerdictCode::pass, 1.0});
  EXPECT_EQ(out.drain(kLong), 0u);
  plc.reset();  // the PLC goes
  out.publish({2, 0, LineVerdictCode::pass, 1.0});
  EXPECT_EQ(out.drain(kLong), 0u);
  EXPECT_EQ(out.stats().write_failures, 1u);
  EXPECT_EQ(out.stats().state, LineState::reconnecting);
  plc = std::make_unique<test::ModbusTestServer>(port);
  ASSERT_TRUE(wait_for([&] { return out.stats().state == LineState::connected; }));
  out.publish({3, 0, LineVerdictCode::reject, 1.0});
  EXPECT_EQ(out.drain(kLong), 0u);
  EXPECT_EQ(plc->holding(0, 4), (std::vector<std::uint16_t>{0, 3, 0, 2}));
  EXPECT_EQ(out.stats().reconnects, 1u);
  EXPECT_EQ(out.stats().write_failures, 1u);
}

// A PLC that takes the connection and never answers holds the output's
// thread in one request; the caller's calls still return at once and what
// does not fit the queue is counted.
TEST(ModbusOutput, AFullQueueRefusesAndCountsWithoutBlocking) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ModbusOptions o = options(ntohs(a.sin_port));
  o.map.heartbeat = -1;
  o.queue_capacity = 2;
  o.response_timeout_ns = 3000 * kMs;
  ModbusOutput out(o);
  out.publish({1, 0, LineVerdictCode::pass, 1.0});
  const int peer = accept(fd, nullptr, nullptr);
  char buf[64];
  ASSERT_GT(recv(peer, buf, sizeof buf, 0), 0);  // the request is out: the thread waits
  int accepted = 0;
  for (int i = 0; i < 5; i++) accepted += out.publish({i, 0, LineVerdictCode::pass, 1.0});
  EXPECT_EQ(accepted, 2);
  EXPECT_EQ(out.stats().queue_overflow, 3u);
  close(peer);
  close(fd);
}

}  // namespace
}  // namespace torchinfer
