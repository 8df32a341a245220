#include "lineio/modbus_output.h"

#include <modbus.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace torchinfer {

namespace {
constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

std::chrono::steady_clock::time_point at(std::int64_t ns) {
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns));
}

// A Modbus exception (the PLC answered, refusing) leaves the connection up;
// anything else (reset, timeout, bad frame) drops it.
bool connection_error(int err) {
  return !(err >= MODBUS_ENOBASE + MODBUS_EXCEPTION_ILLEGAL_FUNCTION &&
           err < MODBUS_ENOBASE + MODBUS_EXCEPTION_MAX);
}

std::uint16_t hi(std::int64_t v) {
  return static_cast<std::uint16_t>((v >> 16) & 0xffff);
}
std::uint16_t lo(std::int64_t v) {
  return static_cast<std::uint16_t>(v & 0xffff);
}
}  // namespace

std::int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool parse_modbus_url(const std::string& url, std::string& host, int& port, int& unit,
                      std::string& error) {
  const std::string scheme = "modbus://";
  error = "'" + url + "' is not modbus://HOST:PORT[?unit=N]";
  if (url.compare(0, scheme.size(), scheme) != 0) return false;
  std::string rest = url.substr(scheme.size());
  std::string query;
  if (auto q = rest.find('?'); q != std::string::npos) {
    query = rest.substr(q + 1);
    rest.resize(q);
  }
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  host = rest.substr(0, colon);
  const std::string p = rest.substr(colon + 1);
  if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos)
    return false;
  port = std::stoi(p);
  if (port < 1 || port > 65535) return false;
  unit = 1;
  if (!query.empty()) {
    const std::string key = "unit=";
    const std::string n = query.compare(0, key.size(), key) == 0 ? query.substr(key.size()) : "";
    if (n.empty() || n.size() > 3 || n.find_first_not_of("0123456789") != std::string::npos)
      return false;
    unit = std::stoi(n);
    if (unit > 247) return false;
  }
  error.clear();
  return true;
}

const char* line_state_name(LineState s) {
  switch (s) {
    case LineState::connecting:
      return "connecting";
    case LineState::connected:
      return "connected";
    case LineState::reconnecting:
      return "reconnecting";
    case LineState::stopped:
      return "stopped";
  }
  return "?";
}

ModbusOutput::ModbusOutput(ModbusOptions opt) : opt_(std::move(opt)) {
  const std::string bad = check_register_map(opt_.map);
  if (!bad.empty()) throw std::invalid_argument("Modbus register map: " + bad);
  if (opt_.map.encoder_register >= 0) {
    belt_ = std::make_unique<BeltClock>();
    unwrap_.emplace(opt_.map.encoder_bits);
  } else if (opt_.belt_counts_per_s > 0 && std::isfinite(opt_.belt_counts_per_s)) {
    belt_ =
        std::make_unique<BeltClock>(BeltClock::from_speed(opt_.belt_counts_per_s, steady_now_ns()));
  } else {
    throw std::invalid_argument(
        "the belt needs an encoder register or a belt speed above 0 (counts per second)");
  }
  if (opt_.queue_capacity == 0) opt_.queue_capacity = 1;
  ctx_ = modbus_new_tcp(opt_.host.c_str(), opt_.port);
  if (!ctx_) throw std::invalid_argument("cannot make a Modbus TCP context for " + opt_.host);
  modbus_set_slave(ctx_, opt_.map.unit);
  const auto t = opt_.response_timeout_ns;
  modbus_set_response_timeout(ctx_, static_cast<std::uint32_t>(t / 1'000'000'000),
                              static_cast<std::uint32_t>(t % 1'000'000'000 / 1000));
  backoff_ = opt_.backoff_min_ns;
  thread_ = std::thread([this] { run(); });
}

ModbusOutput::~ModbusOutput() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  modbus_free(ctx_);
}

bool ModbusOutput::push(Command c) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ || queue_.size() >= opt_.queue_capacity) {
      stats_.queue_overflow++;
      return false;
    }
    queue_.push_back(std::move(c));
    idle_flag_ = false;
  }
  wake_.notify_one();
  return true;
}

bool ModbusOutput::pulse(const PulsePlan& p) {
  return push(p);
}
bool ModbusOutput::publish(const LinePartRecord& r) {
  return push(r);
}
bool ModbusOutput::enqueue(const LineQueueEntry& e) {
  return push(e);
}

LineStats ModbusOutput::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::size_t ModbusOutput::drain(std::int64_t timeout_ns) {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait_until(lock, at(steady_now_ns() + timeout_ns),
                   [&] { return queue_.empty() && idle_flag_; });
  return stats_.pending_pulses + stats_.queued_ahead + queue_.size();
}

void ModbusOutput::log(const std::string& s) {
  if (opt_.log) opt_.log("PLC " + opt_.host + ":" + std::to_string(opt_.port) + ": " + s);
}

void ModbusOutput::take_priority() {
  if (opt_.realtime_priority <= 0) return;
  sched_param p{};
  p.sched_priority = std::min(opt_.realtime_priority, 99);
  if (const int err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &p); err != 0)
    log("cannot run the output at real-time priority " + std::to_string(p.sched_priority) + " (" +
        std::strerror(err) + "): pulses may come late when the CPU is busy");
}

void ModbusOutput::run() {
  take_priority();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    std::deque<Command> batch;
    batch.swap(queue_);
    lock.unlock();
    const std::int64_t now = steady_now_ns();
    const bool up = ensure_connected(now);
    for (auto& c : batch) {
      if (auto* p = std::get_if<PulsePlan>(&c)) pending_.add(*p);
      if (auto* r = std::get_if<LinePartRecord>(&c)) write_part(*r);
      if (auto* e = std::get_if<LineQueueEntry>(&c)) write_entry(*e);
    }
    if (up) poll_encoder(now);
    fire_due(steady_now_ns());
    release_due(steady_now_ns());
    passed_queue(steady_now_ns());
    if (up) beat(now);
    lock.lock();
    const auto overflow = stats_.queue_overflow;
    stats_ = local_;
    stats_.queue_overflow = overflow;
    stats_.pending_pulses = pending_.size() + off_at_.size();
    stats_.queued_ahead = ahead_.size();
    if (queue_.empty() && stats_.pending_pulses == 0 && ahead_.empty()) {
      idle_flag_ = true;
      idle_.notify_all();
    }
    if (!queue_.empty() || stop_) continue;
    // At least once a second: nothing is lost by a spurious turn.
    const std::int64_t t = steady_now_ns();
    wake_.wait_until(lock, at(std::min(next_wake(t), t + 1'000'000'000)));
  }
  lock.unlock();
  // Nothing stays on when the app goes.
  if (ctx_ && was_connected_)
    for (const auto& [coil, when] : off_at_) write_bit(coil, false);
  if (was_connected_) modbus_close(ctx_);
  std::lock_guard<std::mutex> relock(mu_);
  stats_.state = LineState::stopped;
  idle_flag_ = true;
  idle_.notify_all();
}

std::int64_t ModbusOutput::next_wake(std::int64_t now) const {
  std::int64_t t = pending_.next_due_ns(now + transit_ns(), *belt_) - transit_ns();
  if (!ahead_.empty()) t = std::min(t, belt_->time_at(ahead_.front(), now));
  for (const auto& [coil, when] : off_at_) t = std::min(t, when);
  if (!was_connected_) return std::min(t, next_connect_);
  if (unwrap_) t = std::min(t, next_poll_);
  if (opt_.map.heartbeat >= 0) t = std::min(t, next_beat_);
  return t;
}

bool ModbusOutput::ensure_connected(std::int64_t now) {
  if (was_connected_) return true;
  if (now < next_connect_) return false;
  if (modbus_connect(ctx_) == 0) {
    if (local_.state == LineState::reconnecting) local_.reconnects++;
    local_.state = LineState::connected;
    was_connected_ = true;
    backoff_ = opt_.backoff_min_ns;
    log("connected");
    return true;
  }
  const std::string why = modbus_strerror(errno);
  next_connect_ = now + backoff_;
  log(std::string(local_.state == LineState::connecting ? "cannot connect" : "reconnecting") +
      " (" + why + "); next try in " + std::to_string(backoff_ / 1'000'000) + " ms");
  backoff_ = std::min(backoff_ * 2, opt_.backoff_max_ns);
  return false;
}

void ModbusOutput::drop_connection(const char* what) {
  log(std::string("connection lost (") + what + "); reconnecting");
  modbus_close(ctx_);
  was_connected_ = false;
  local_.state = LineState::reconnecting;
  next_connect_ = steady_now_ns() + backoff_;
}

bool ModbusOutput::write_bit(int addr, bool on) {
  if (!was_connected_) {
    local_.write_failures++;
    return false;
  }
  local_.writes++;
  if (modbus_write_bit(ctx_, addr, on ? 1 : 0) == 1) return true;
  const int err = errno;
  local_.write_failures++;
  if (connection_error(err)) drop_connection(modbus_strerror(err));
  return false;
}

bool ModbusOutput::write_regs(int addr, const std::uint16_t* v, int n) {
  if (!was_connected_) {
    local_.write_failures++;
    return false;
  }
  local_.writes++;
  if (modbus_write_registers(ctx_, addr, n, v) == n) return true;
  const int err = errno;
  local_.write_failures++;
  if (connection_error(err)) drop_connection(modbus_strerror(err));
  return false;
}

void ModbusOutput::poll_encoder(std::int64_t now) {
  if (!unwrap_ || now < next_poll_) return;
  next_poll_ = now + opt_.map.encoder_poll_ns;
  std::uint16_t r[2] = {0, 0};
  const int n = opt_.map.encoder_bits / 16;
  const std::int64_t t0 = steady_now_ns();
  const int got = opt_.map.encoder_input
                      ? modbus_read_input_registers(ctx_, opt_.map.encoder_register, n, r)
                      : modbus_read_registers(ctx_, opt_.map.encoder_register, n, r);
  const std::int64_t t1 = steady_now_ns();
  if (got != n) {
    const int err = errno;
    local_.encoder_failures++;
    if (connection_error(err)) drop_connection(modbus_strerror(err));
    return;
  }
  local_.encoder_reads++;
  const std::uint32_t raw = n == 1 ? r[0] : (static_cast<std::uint32_t>(r[0]) << 16) | r[1];
  const std::int64_t count = unwrap_->update(raw);
  // A reading whose round trip took far longer than usual was taken at an
  // unknown moment inside it (a stalled PLC or network): it would bend the
  // belt's speed, so it is left out (counted).
  const std::int64_t rtt = t1 - t0;
  rtt_typical_ = rtt_typical_ == 0 ? rtt : rtt_typical_ + (rtt - rtt_typical_) / 16;
  if (rtt > std::max<std::int64_t>(3 * rtt_typical_, 2'000'000)) {
    local_.encoder_slow++;
    return;
  }
  // The register was read somewhere in the round trip: its middle.
  const std::int64_t t = t0 + rtt / 2;
  rebase_if_reset(t, count);
  belt_->add_sample(t, count);
  local_.last_encoder_ns = t;
}

// A write reaches the PLC about half a round trip after it leaves: pulses
// go out that much earlier so that they arrive at their moment.
std::int64_t ModbusOutput::transit_ns() const {
  return unwrap_ ? rtt_typical_ / 2 : 0;
}

// A belt does not run back 64 counts: a count that did was reset (a PLC
// restarted, a counter cleared). The pending pulses' targets move with the
// new counter so that they still land where their parts are; a part seen
// before and decided after is placed by extrapolating the new counter back.
void ModbusOutput::rebase_if_reset(std::int64_t t, std::int64_t count) {
  constexpr double kBack = 64;
  if (!belt_->ready()) return;
  const double expected = belt_->position_at(t);
  if (static_cast<double>(count) > expected - kBack) return;
  const double offset = static_cast<double>(count) - expected;
  belt_->restart();
  pending_.shift(offset);
  local_.encoder_resets++;
  log("encoder went back " + std::to_string(static_cast<long long>(-offset)) +
      " counts (counter reset?): pending pulses moved with it");
}

void ModbusOutput::fire_due(std::int64_t now) {
  for (const PulsePlan& p : pending_.take_due(now + transit_ns(), *belt_)) {
    // How far past its moment the pulse goes out, as the output sees the
    // belt: a stalled thread or a slow PLC shows here first.
    if (!p.at_ns)
      local_.max_overshoot_counts =
          std::max(local_.max_overshoot_counts,
                   belt_->position_at(now + transit_ns() + p.lead_ns) - p.target_count);
    fire(p, now);
  }
}

void ModbusOutput::fire(const PulsePlan& p, std::int64_t now) {
  int coil = opt_.map.reject_coil;
  if (p.coil == LineCoil::pass) coil = opt_.map.pass_coil;
  if (p.coil == LineCoil::recheck && opt_.map.recheck_coil >= 0) coil = opt_.map.recheck_coil;
  if (coil < 0) return;
  auto on = off_at_.find(coil);
  if (on != off_at_.end()) {
    // Still on from the part before: one edge for both (pulse narrower than
    // the parts' spacing avoids this; counted so it is seen).
    on->second = now + opt_.map.pulse_ns;
    local_.pulses_merged++;
    return;
  }
  if (!write_bit(coil, true)) {
    local_.pulses_lost++;
    log("pulse for part " + std::to_string(p.track_id) + " on " + line_coil_name(p.coil) +
        " lost (PLC unreachable)");
    return;
  }
  off_at_[coil] = now + opt_.map.pulse_ns;
  if (p.coil == LineCoil::reject) local_.pulses_reject++;
  if (p.coil == LineCoil::pass) local_.pulses_pass++;
  if (p.coil == LineCoil::recheck) local_.pulses_recheck++;
}

void ModbusOutput::release_due(std::int64_t now) {
  for (auto it = off_at_.begin(); it != off_at_.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    // An output left on is retried until it goes off (or the app ends).
    if (write_bit(it->first, false))
      it = off_at_.erase(it);
    else
      it->second = now + opt_.backoff_min_ns, ++it;
  }
}

void ModbusOutput::write_part(const LinePartRecord& r) {
  if (r.verdict == LineVerdictCode::pass) passed_++;
  if (r.verdict == LineVerdictCode::reject) rejected_++;
  if (r.verdict == LineVerdictCode::late) late_++;
  if (opt_.map.part_base < 0) return;
  const double score = std::clamp(std::isfinite(r.score) ? r.score : 0.0, 0.0, 1.0);
  const std::uint16_t v[11] = {hi(r.part_id),
                               lo(r.part_id),
                               static_cast<std::uint16_t>(r.class_id < 0 ? 0xffff : r.class_id),
                               static_cast<std::uint16_t>(r.verdict),
                               static_cast<std::uint16_t>(std::lround(score * 1000)),
                               hi(static_cast<std::int64_t>(passed_)),
                               lo(static_cast<std::int64_t>(passed_)),
                               hi(static_cast<std::int64_t>(rejected_)),
                               lo(static_cast<std::int64_t>(rejected_)),
                               hi(static_cast<std::int64_t>(late_)),
                               lo(static_cast<std::int64_t>(late_))};
  write_regs(opt_.map.part_base, v, 11);
}

void ModbusOutput::write_entry(const LineQueueEntry& e) {
  if (opt_.map.queue_base < 0) return;
  if (++queue_seq_ == 0) queue_seq_ = 1;  // 0 means "never written"
  const int slot = queue_slot_;
  queue_slot_ = (queue_slot_ + 1) % opt_.map.queue_slots;
  const std::uint16_t v[4] = {hi(e.ejector_count), lo(e.ejector_count),
                              static_cast<std::uint16_t>(e.verdict), queue_seq_};
  if (write_regs(opt_.map.queue_base + 4 * slot, v, 4))
    ahead_.insert(std::upper_bound(ahead_.begin(), ahead_.end(), e.ejector_count), e.ejector_count);
}

// The queued parts the belt has carried past the ejector: the PLC had them.
void ModbusOutput::passed_queue(std::int64_t now) {
  const double here = belt_->position_at(now);
  while (!ahead_.empty() && ahead_.front() <= here) ahead_.pop_front();
}

void ModbusOutput::beat(std::int64_t now) {
  if (opt_.map.heartbeat < 0 || now < next_beat_) return;
  next_beat_ = now + opt_.map.heartbeat_ns;
  ++beat_value_;
  write_regs(opt_.map.heartbeat, &beat_value_, 1);
}

}  // namespace torchinfer
