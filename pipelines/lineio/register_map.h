// Where the Modbus output reads and writes, all configurable (docs/line-io.md
// has the table and what a PLC program does with each). Addresses are
// 0-based protocol addresses. 32-bit values take two registers, high word
// first.
#pragma once

#include <cstdint>
#include <string>

namespace torchinfer {

struct ModbusRegisterMap {
  int unit = 1;  // the Modbus unit (slave) id
  // Coils pulsed for a part at the ejector; -1: not used.
  int reject_coil = 0;
  int pass_coil = 1;
  int recheck_coil = -1;  // late parts when set (else they get the reject)
  std::int64_t pulse_ns = 50'000'000;
  // Holding registers of the last part: +0,+1 id; +2 class; +3 verdict code;
  // +4 score x1000; +5,+6 passed; +7,+8 rejected; +9,+10 late. -1: not written.
  int part_base = 0;
  int heartbeat = 20;  // holding register counted up every heartbeat_ns; -1: none
  std::int64_t heartbeat_ns = 1'000'000'000;
  // The encoder: -1 none (a set belt speed instead).
  int encoder_register = -1;
  bool encoder_input = true;  // input register (function 4); false: holding (3)
  int encoder_bits = 16;      // 16: one register; 32: two, high word first
  std::int64_t encoder_poll_ns = 5'000'000;
  // The shift-register queue: queue_slots entries of 4 holding registers at
  // queue_base: +0,+1 ejector count (mod 2^32); +2 verdict code; +3 sequence
  // (1..65535, written in the same request, last). -1: not used.
  int queue_base = -1;
  int queue_slots = 16;
};

// Empty when the map is usable; else what is wrong, for the operator.
std::string check_register_map(const ModbusRegisterMap& m);

}  // namespace torchinfer
