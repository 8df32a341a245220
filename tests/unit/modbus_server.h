// A Modbus TCP server on 127.0.0.1 made with libmodbus' own server side, in
// a thread of the test: a real peer for ModbusOutput's unit tests (the line
// simulator's tests use pymodbus, an independent implementation).
#pragma once

#include <modbus.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace torchinfer::test {

class ModbusTestServer {
 public:
  // port 0: any free port (port() tells which).
  explicit ModbusTestServer(int port = 0);
  ~ModbusTestServer();
  int port() const { return port_; }

  struct CoilWrite {
    int addr;
    bool on;
    std::uint16_t encoder;  // input register 7 when the write came
  };
  std::vector<CoilWrite> coil_writes();
  std::vector<std::uint16_t> holding(int addr, int n);
  void set_input(int addr, std::uint16_t v);
  // Several registers at once: no client reads half of them.
  void set_holding(int addr, std::vector<std::uint16_t> v);

 private:
  void run();
  void serve(int fd);

  modbus_t* ctx_ = nullptr;
  modbus_mapping_t* map_ = nullptr;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<CoilWrite> coils_;
  std::vector<int> clients_;
  std::thread thread_;
};

}  // namespace torchinfer::test
