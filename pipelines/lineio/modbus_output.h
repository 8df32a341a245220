// LineOutput over Modbus TCP with libmodbus. One thread owns the connection
// (libmodbus contexts are not thread-safe): it connects and reconnects with
// back-off, polls the encoder, fires pulses at their moment, turns outputs
// off after the pulse width, writes the part registers, the queue and the
// heartbeat. The caller only hands commands over (bounded queue).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>

#include "lineio/line_output.h"
#include "lineio/register_map.h"

typedef struct _modbus modbus_t;

namespace torchinfer {

struct ModbusOptions {
  std::string host = "127.0.0.1";
  int port = 502;
  ModbusRegisterMap map;
  double belt_counts_per_s = 0;  // without an encoder register: the set speed
  std::size_t queue_capacity = 1024;
  // A PLC slower than this to answer is taken as gone (reconnect).
  std::int64_t response_timeout_ns = 1'000'000'000;
  std::int64_t backoff_min_ns = 100'000'000, backoff_max_ns = 5'000'000'000;
  // 1..99: the output's thread runs SCHED_FIFO at this priority, so a busy
  // CPU (the inference threads) does not delay pulses; 0: as any thread.
  // Needs CAP_SYS_NICE (or an rtprio limit); refused, it runs on, logged.
  int realtime_priority = 0;
  // Connection changes and the first failure of each kind, from the
  // output's thread (the app prints them; reconnecting is reported while it
  // happens).
  std::function<void(const std::string&)> log;
};

// Parses modbus://HOST:PORT[?unit=N]; false with `error` set when it is not one.
bool parse_modbus_url(const std::string& url, std::string& host, int& port, int& unit,
                      std::string& error);

class ModbusOutput : public LineOutput {
 public:
  // Throws std::invalid_argument when the options do not make sense (a bad
  // register map, no encoder and no speed). Starts the thread.
  explicit ModbusOutput(ModbusOptions opt);
  ~ModbusOutput() override;
  ModbusOutput(const ModbusOutput&) = delete;
  ModbusOutput& operator=(const ModbusOutput&) = delete;

  bool pulse(const PulsePlan& p) override;
  bool publish(const LinePartRecord& r) override;
  bool enqueue(const LineQueueEntry& e) override;
  const BeltClock& belt() const override { return *belt_; }
  LineStats stats() const override;
  std::size_t drain(std::int64_t timeout_ns) override;

 private:
  using Command = std::variant<PulsePlan, LinePartRecord, LineQueueEntry>;
  bool push(Command c);
  void run();
  bool ensure_connected(std::int64_t now);
  void drop_connection(const char* what);
  void poll_encoder(std::int64_t now);
  void rebase_if_reset(std::int64_t t, std::int64_t count);
  void fire_due(std::int64_t now);
  void fire(const PulsePlan& p, std::int64_t now);
  void release_due(std::int64_t now);
  void write_part(const LinePartRecord& r);
  void write_entry(const LineQueueEntry& e);
  void beat(std::int64_t now);
  void passed_queue(std::int64_t now);
  bool write_bit(int addr, bool on);
  bool write_regs(int addr, const std::uint16_t* v, int n);
  std::int64_t next_wake(std::int64_t now) const;
  std::int64_t transit_ns() const;
  void log(const std::string& s);
  void take_priority();

  ModbusOptions opt_;
  std::unique_ptr<BeltClock> belt_;
  std::optional<EncoderUnwrap> unwrap_;
  modbus_t* ctx_ = nullptr;  // the thread's alone

  mutable std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<Command> queue_;
  bool stop_ = false;
  LineStats stats_;        // under mu_: the thread's copy, published each turn
  bool idle_flag_ = true;  // under mu_: nothing taken is left to do

  // The thread's own state.
  LineStats local_;
  PulseQueue pending_;
  std::map<int, std::int64_t> off_at_;  // coil -> when it goes off
  std::deque<std::int64_t> ahead_;      // queued parts' ejector counts not yet reached, in order
  std::int64_t next_poll_ = 0, next_beat_ = 0, next_connect_ = 0, backoff_ = 0;
  std::uint16_t beat_value_ = 0, queue_seq_ = 0;
  std::int64_t rtt_typical_ = 0;  // the encoder read's usual round trip
  int queue_slot_ = 0;
  bool was_connected_ = false;
  std::uint64_t passed_ = 0, rejected_ = 0, late_ = 0;
  std::thread thread_;
};

}  // namespace torchinfer
