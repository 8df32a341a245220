// Decision -> coil write latency and the streaming thread's cost per part
// (docs/line-io.md, "Figures"); tests/bench/plc_latency.sh runs it against
// the pymodbus PLC (line_sim_plc.py) and reads the PLC's record.
//
//   plc-latency-bench latency PORT N OUT.json
//     N pulses due at once, 20 ms apart, on the reject coil: writes each
//     hand-over moment (CLOCK_MONOTONIC ns, the clock the PLC records the
//     coil's rising edge on) to OUT.json; the script pairs them in order.
//   plc-latency-bench cost PORT N
//     N parts through the call the streaming thread makes (QaPlc::see on
//     the part's frame, then QaPlc::decided), the PLC connected, 2 ms
//     apart; prints the median and p99 of that call's time in ns.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "lineio/line_output.h"
#include "lineio/modbus_output.h"
#include "lineio/plc_settings.h"
#include "parts/qa_plc.h"

namespace {

using torchinfer::steady_now_ns;

torchinfer::PlcOptions options(const std::string& port) {
  torchinfer::PlcOptions o;
  const std::pair<const char*, std::string> set[] = {
      {"plc", "modbus://127.0.0.1:" + port},
      {"plc-encoder", "0"},
      {"ejector-distance", "1000000"},  // cost: the pulses stay pending, never due here
      {"plc-pulse-ms", "5"},
      {"plc-heartbeat-ms", "1000"}};
  for (const auto& [k, v] : set)
    if (const std::string why = torchinfer::set_plc_setting(o, k, v); !why.empty())
      throw std::runtime_error(std::string(k) + ": " + why);
  if (const auto p = torchinfer::finish_plc_options(o); !p.why.empty())
    throw std::runtime_error(p.setting + ": " + p.why);
  return o;
}

bool wait_connected(const torchinfer::LineOutput& out) {
  for (int i = 0; i < 500 && out.stats().state != torchinfer::LineState::connected; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return out.stats().state == torchinfer::LineState::connected;
}

int latency(const std::string& port, int n, const std::string& path) {
  torchinfer::ModbusOptions m = options(port).modbus;
  torchinfer::ModbusOutput out(m);
  if (!wait_connected(out)) return std::fprintf(stderr, "no PLC on port %s\n", port.c_str()), 1;
  std::vector<std::int64_t> handed;
  for (int i = 0; i < n; ++i) {
    torchinfer::PulsePlan p;
    p.track_id = i;
    p.coil = torchinfer::LineCoil::reject;
    const std::int64_t now = steady_now_ns();
    p.at_ns = now;  // due at once: the time is the output's and the PLC's alone
    handed.push_back(now);
    out.pulse(p);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  out.drain(2'000'000'000);
  const torchinfer::LineStats s = out.stats();
  std::ofstream(path) << nlohmann::json({{"handed_ns", handed},
                                         {"pulses", s.pulses_reject},
                                         {"merged", s.pulses_merged},
                                         {"write_failures", s.write_failures}})
                             .dump();
  return 0;
}

int cost(const std::string& port, int n) {
  torchinfer::qa::QaPlc plc(options(port), {"bracket"}, "plc-latency-bench");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // connected, encoder read
  std::vector<double> ns;
  for (int i = 0; i < n; ++i) {
    torchinfer::QaFrame f;
    f.width = 640;
    f.height = 480;
    torchinfer::QaPart part;
    part.id = i + 1;
    part.label = "bracket";
    part.box = {100, 100, 200, 200};
    f.parts.push_back(part);
    torchinfer::QaDecision d;
    d.part = i + 1;
    d.label = "bracket";
    d.verdict = i % 3 ? torchinfer::QaVerdict::kReject : torchinfer::QaVerdict::kPass;
    const auto t0 = std::chrono::steady_clock::now();
    plc.see(f, steady_now_ns());
    plc.decided(d, steady_now_ns());
    ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0)
                     .count());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::sort(ns.begin(), ns.end());
  const auto fig = plc.figures();
  std::printf("{\"parts\": %d, \"p50_ns\": %.0f, \"p99_ns\": %.0f, \"queue_overflow\": %llu}\n", n,
              ns[ns.size() / 2], ns[ns.size() * 99 / 100],
              static_cast<unsigned long long>(fig.line.queue_overflow));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "latency" && argc == 5) return latency(argv[2], std::stoi(argv[3]), argv[4]);
    if (mode == "cost" && argc == 4) return cost(argv[2], std::stoi(argv[3]));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plc-latency-bench: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: plc-latency-bench latency PORT N OUT.json | cost PORT N\n");
  return 2;
}
