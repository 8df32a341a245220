#include "modbus_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace torchinfer::test {

ModbusTestServer::ModbusTestServer(int port) {
  ctx_ = modbus_new_tcp("127.0.0.1", port);
  map_ = modbus_mapping_new(256, 0, 512, 64);
  listen_fd_ = ctx_ && map_ ? modbus_tcp_listen(ctx_, 4) : -1;
  if (listen_fd_ < 0) throw std::runtime_error("test Modbus server cannot listen");
  sockaddr_in a{};
  socklen_t len = sizeof a;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] { run(); });
}

ModbusTestServer::~ModbusTestServer() {
  stop_ = true;
  thread_.join();
  for (int fd : clients_) close(fd);
  close(listen_fd_);
  modbus_mapping_free(map_);
  modbus_free(ctx_);
}

std::vector<ModbusTestServer::CoilWrite> ModbusTestServer::coil_writes() {
  std::lock_guard<std::mutex> lock(mu_);
  return coils_;
}

std::vector<std::uint16_t> ModbusTestServer::holding(int addr, int n) {
  std::lock_guard<std::mutex> lock(mu_);
  return {map_->tab_registers + addr, map_->tab_registers + addr + n};
}

void ModbusTestServer::set_input(int addr, std::uint16_t v) {
  std::lock_guard<std::mutex> lock(mu_);
  map_->tab_input_registers[addr] = v;
}

void ModbusTestServer::set_holding(int addr, std::vector<std::uint16_t> v) {
  std::lock_guard<std::mutex> lock(mu_);
  std::copy(v.begin(), v.end(), map_->tab_registers + addr);
}

void ModbusTestServer::run() {
  while (!stop_) {
    fd_set fds;
    FD_ZERO(&fds);
    FD_SET(listen_fd_, &fds);
    int top = listen_fd_;
    for (int fd : clients_) FD_SET(fd, &fds), top = std::max(top, fd);
    timeval tv{0, 20000};
    if (select(top + 1, &fds, nullptr, nullptr, &tv) <= 0) continue;
    if (FD_ISSET(listen_fd_, &fds)) {
      const int fd = accept(listen_fd_, nullptr, nullptr);
      if (fd >= 0) clients_.push_back(fd);
    }
    for (int fd : std::vector<int>(clients_))
      if (FD_ISSET(fd, &fds)) serve(fd);
  }
}

void ModbusTestServer::serve(int fd) {
  std::uint8_t q[MODBUS_TCP_MAX_ADU_LENGTH];
  modbus_set_socket(ctx_, fd);
  const int n = modbus_receive(ctx_, q);
  if (n <= 0) {
    close(fd);
    clients_.erase(std::find(clients_.begin(), clients_.end(), fd));
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  const int h = modbus_get_header_length(ctx_);
  if (q[h] == MODBUS_FC_WRITE_SINGLE_COIL)
    coils_.push_back({(q[h + 1] << 8) | q[h + 2], q[h + 3] == 0xff, map_->tab_input_registers[7]});
  modbus_reply(ctx_, q, n, map_);
}

}  // namespace torchinfer::test
