// The app side of the line simulator (tests/bench/line_sim.py runs it
// against line_sim_plc.py; docs/line-io.md, "Simulator"). Parts appear at
// the camera's reference line at random spacing along the belt, each good
// or bad; its verdict comes 50-600 ms (--latency-ms) after its frame. Two
// rules run side by side on two Modbus connections to the same PLC:
//  - sync: the core's BeltScheduler + ModbusOutput (coils 0 reject, 1 pass,
//    or with --mode queue the PLC's part queue at 100),
//  - fixed: what users build today, a pulse a fixed time after the frame
//    (distance / nominal speed), coils 2 reject, 3 pass.
// Writes one JSON line per part (--parts-out) and a summary on stdout.
#include <chrono>
#include <cstdio>
#include <deque>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "bench_args.h"
#include "lineio/belt_scheduler.h"
#include "lineio/modbus_output.h"

namespace ti = torchinfer;

namespace {

constexpr std::int64_t kMs = 1'000'000;

struct Config {
  int port = 0, parts = 200;
  unsigned seed = 1;
  double speed = 1000, spacing_min = 30, spacing_max = 90, distance = 1200;
  double latency_min_ms = 50, latency_max_ms = 600, lead_ms = 20;
  bool queue_mode = false;
  int rt_priority = 0;
  std::string parts_out;
};

struct Part {
  long long id;
  bool bad;
  ti::PartSighting seen;
  std::int64_t decide_ns;
};

ti::ModbusOptions output_options(const Config& c, bool sync) {
  ti::ModbusOptions o;
  o.port = c.port;
  o.realtime_priority = c.rt_priority;
  o.map.pulse_ns = 5 * kMs;
  o.map.heartbeat = sync ? 20 : -1;
  o.map.part_base = sync ? 0 : -1;
  if (sync) {
    o.map.encoder_register = 0;
    o.map.encoder_poll_ns = 2 * kMs;
    o.map.queue_base = c.queue_mode ? 100 : -1;
  } else {
    o.map.reject_coil = 2;
    o.map.pass_coil = 3;
    o.belt_counts_per_s = c.speed;  // unused: every fixed pulse is timed
  }
  o.log = [sync](const std::string& s) {
    std::fprintf(stderr, "line-sim-driver (%s): %s\n", sync ? "sync" : "fixed", s.c_str());
  };
  return o;
}

const char* outcome_name(ti::DecisionOutcome o) {
  switch (o) {
    case ti::DecisionOutcome::scheduled:
      return "scheduled";
    case ti::DecisionOutcome::late:
      return "late";
    case ti::DecisionOutcome::late_unfired:
      return "late-unfired";
    case ti::DecisionOutcome::duplicate:
      return "duplicate";
    case ti::DecisionOutcome::no_encoder:
      return "no-encoder";
  }
  return "?";
}

class Sim {
 public:
  explicit Sim(const Config& c)
      : c_(c),
        sync_(output_options(c, true)),
        fixed_(output_options(c, false)),
        sched_({1.0, 0.0, 1.0}, {c.distance, static_cast<std::int64_t>(c.lead_ms * kMs)}),
        rng_(c.seed) {}

  int run();

 private:
  void appear(std::int64_t now);
  void decide(const Part& p, std::int64_t now);
  nlohmann::json stats(const ti::LineStats& s) const;

  Config c_;
  ti::ModbusOutput sync_, fixed_;
  ti::BeltScheduler sched_;
  std::mt19937_64 rng_;
  std::deque<Part> waiting_;  // seen, verdict not yet come
  std::uint64_t fixed_late_ = 0;
  long long next_id_ = 1;
  double next_pos_ = 0, offset_ = 10;
  FILE* parts_ = nullptr;
};

void Sim::appear(std::int64_t now) {
  std::uniform_real_distribution<double> lat(c_.latency_min_ms, c_.latency_max_ms);
  std::bernoulli_distribution bad(0.5);
  // One pixel is one count here: the part crossed the line at next_pos_
  // and is seen in this frame (about offset_ counts later: the frames come
  // when they come) where the belt has carried it since.
  Part p{next_id_++, bad(rng_), {0, sync_.belt().position_at(now) - next_pos_, now}, 0};
  p.seen.track_id = p.id;
  p.decide_ns = now + static_cast<std::int64_t>(lat(rng_) * kMs);
  // In time order: the verdicts' latencies differ, the queue is kept sorted.
  auto at = waiting_.end();
  while (at != waiting_.begin() && (at - 1)->decide_ns > p.decide_ns) --at;
  waiting_.insert(at, p);
  std::uniform_real_distribution<double> gap(c_.spacing_min, c_.spacing_max), offset(0, 20);
  next_pos_ += gap(rng_);
  offset_ = offset(rng_);
}

void Sim::decide(const Part& p, std::int64_t now) {
  nlohmann::json line = {{"id", p.id},
                         {"bad", p.bad},
                         {"frame_ns", p.seen.frame_ns},
                         {"offset", p.seen.along_px},
                         {"decide_ns", now}};
  const auto r = sched_.decide(p.seen, p.bad, now, sync_.belt());
  line["sync"] = {{"outcome", outcome_name(r.outcome)}, {"target", r.target_count}};
  if (c_.queue_mode && r.outcome == ti::DecisionOutcome::scheduled) {
    sync_.enqueue({p.id, static_cast<std::int64_t>(std::llround(r.target_count)),
                   p.bad ? ti::LineVerdictCode::reject : ti::LineVerdictCode::pass});
  } else if (r.pulse) {
    sync_.pulse(*r.pulse);
  }
  sync_.publish({p.id, 0, p.bad ? ti::LineVerdictCode::reject : ti::LineVerdictCode::pass, 1.0});
  // The fixed rule: the travel time at the nominal speed, minus the lead.
  const std::int64_t at =
      p.seen.frame_ns +
      static_cast<std::int64_t>((c_.distance - p.seen.along_px) / c_.speed * 1e9) -
      static_cast<std::int64_t>(c_.lead_ms * kMs);
  const bool late = now > at;
  fixed_late_ += late;
  ti::PulsePlan f{
      p.id, p.bad || late ? ti::LineCoil::reject : ti::LineCoil::pass, 0, 0, late ? now : at, late};
  fixed_.pulse(f);
  line["fixed"] = {{"at_ns", at}, {"late", late}};
  if (parts_) std::fprintf(parts_, "%s\n", line.dump().c_str());
}

int Sim::run() {
  parts_ = c_.parts_out.empty() ? nullptr : std::fopen(c_.parts_out.c_str(), "w");
  for (int i = 0; i < 2000 && !sync_.belt().ready(); i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (!sync_.belt().ready()) {
    std::fprintf(stderr, "line-sim-driver: no encoder reading from 127.0.0.1:%d\n", c_.port);
    return 2;
  }
  next_pos_ = sync_.belt().position_at(ti::steady_now_ns()) + c_.spacing_max;
  int seen = 0;
  while (seen < c_.parts || !waiting_.empty()) {
    const std::int64_t now = ti::steady_now_ns();
    if (seen < c_.parts && sync_.belt().position_at(now) >= next_pos_ + offset_)
      appear(now), seen++;
    while (!waiting_.empty() && waiting_.front().decide_ns <= now) {
      decide(waiting_.front(), now);
      waiting_.pop_front();
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  // End of stream: the parts still on the belt get their pulses.
  const std::int64_t travel = static_cast<std::int64_t>(c_.distance / (0.4 * c_.speed) * 1e9);
  const std::size_t left = sync_.drain(travel + 2000 * kMs) + fixed_.drain(2000 * kMs);
  if (parts_) std::fclose(parts_);
  nlohmann::json out = {{"sync", stats(sync_.stats())},
                        {"fixed", stats(fixed_.stats())},
                        {"decided", sched_.counts().decided},
                        {"late", sched_.counts().late},
                        {"duplicates", sched_.counts().duplicates},
                        {"fixed_late", fixed_late_},
                        {"undrained", left}};
  std::printf("%s\n", out.dump().c_str());
  return left == 0 ? 0 : 1;
}

nlohmann::json Sim::stats(const ti::LineStats& s) const {
  return {
      {"state", ti::line_state_name(s.state)}, {"pulses_reject", s.pulses_reject},
      {"pulses_pass", s.pulses_pass},          {"pulses_lost", s.pulses_lost},
      {"pulses_merged", s.pulses_merged},      {"writes", s.writes},
      {"write_failures", s.write_failures},    {"queue_overflow", s.queue_overflow},
      {"encoder_reads", s.encoder_reads},      {"encoder_failures", s.encoder_failures},
      {"encoder_slow", s.encoder_slow},        {"max_overshoot_counts", s.max_overshoot_counts}};
}

}  // namespace

int main(int argc, char** argv) {
  bench::Args a;
  a.parse(argc, argv);
  Config c;
  c.port = a.num("port", 0);
  c.parts = a.num("parts", c.parts);
  c.seed = static_cast<unsigned>(a.num("seed", 1));
  auto real = [&](const char* k, double def) {
    return std::atof(a.str(k, std::to_string(def)).c_str());
  };
  c.speed = real("speed", c.speed);
  c.spacing_min = real("spacing-min", c.spacing_min);
  c.spacing_max = real("spacing-max", c.spacing_max);
  c.distance = real("distance", c.distance);
  c.latency_min_ms = real("latency-min-ms", c.latency_min_ms);
  c.latency_max_ms = real("latency-max-ms", c.latency_max_ms);
  c.lead_ms = real("lead-ms", c.lead_ms);
  c.queue_mode = a.str("mode", "fire") == "queue";
  c.rt_priority = a.num("rt-priority", 0);
  c.parts_out = a.str("parts-out", "");
  if (argc < 2 || c.port <= 0 || c.parts <= 0 || c.speed <= 0) {
    std::fprintf(stderr,
                 "usage: line-sim-driver run --port N [--parts N] [--speed counts/s] "
                 "[--distance counts] [--mode fire|queue] [--parts-out FILE] ...\n");
    return 2;
  }
  try {
    Sim sim(c);
    return sim.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "line-sim-driver: %s\n", e.what());
    return 2;
  }
}
