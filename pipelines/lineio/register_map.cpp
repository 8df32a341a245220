#include "lineio/register_map.h"

namespace torchinfer {

namespace {
bool in_range(int addr, int n) {
  return addr >= 0 && addr + n <= 65536;
}
}  // namespace

std::string check_register_map(const ModbusRegisterMap& m) {
  if (m.unit < 0 || m.unit > 247) return "unit " + std::to_string(m.unit) + " is not 0..247";
  for (int coil : {m.reject_coil, m.pass_coil, m.recheck_coil})
    if (coil < -1 || coil > 65535) return "coil " + std::to_string(coil) + " is not -1..65535";
  if (m.reject_coil < 0) return "a reject coil is needed (reject_coil 0..65535)";
  if (m.pulse_ns < 1'000'000 || m.pulse_ns > 10'000'000'000)
    return "pulse width must be 1 ms .. 10 s";
  if (m.part_base != -1 && !in_range(m.part_base, 11))
    return "part registers (11 from part_base) must lie in 0..65535";
  if (m.heartbeat < -1 || m.heartbeat > 65535) return "heartbeat register is not -1..65535";
  if (m.heartbeat_ns < 10'000'000) return "heartbeat period must be at least 10 ms";
  if (m.encoder_bits != 16 && m.encoder_bits != 32) return "encoder width must be 16 or 32 bits";
  if (m.encoder_register != -1 && !in_range(m.encoder_register, m.encoder_bits / 16))
    return "encoder register must lie in 0..65535";
  if (m.encoder_poll_ns < 1'000'000 || m.encoder_poll_ns > 1'000'000'000)
    return "encoder poll period must be 1 ms .. 1 s";
  if (m.queue_base != -1 &&
      (m.queue_slots < 1 || m.queue_slots > 1024 || !in_range(m.queue_base, 4 * m.queue_slots)))
    return "the part queue (4 registers x queue_slots, 1..1024 slots) must lie in 0..65535";
  return {};
}

}  // namespace torchinfer
