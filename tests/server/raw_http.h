// HTTP at the byte level, for what a well-behaved client library never
// sends: repeated Content-Length headers, headers without their body,
// connections that send nothing.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace torchinfer::test {

// A TCP connection to 127.0.0.1:port; -1 if it cannot connect.
inline int connect_local(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Everything the server sends until it closes, or until `timeout_s` passes
// without a byte (then what came so far, and *closed false).
inline std::string read_until_close(int fd, double timeout_s, bool* closed = nullptr) {
  timeval tv{};
  tv.tv_sec = static_cast<long>(timeout_s);
  tv.tv_usec = static_cast<long>((timeout_s - tv.tv_sec) * 1e6);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string got;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) got.append(buf, n);
  if (closed) *closed = n == 0 || (n < 0 && errno == ECONNRESET);
  return got;
}

// Sends `request` on a new connection and returns the whole answer.
inline std::string raw_exchange(int port, const std::string& request, double timeout_s = 30) {
  const int fd = connect_local(port);
  if (fd < 0) return "";
  (void)!send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string got = read_until_close(fd, timeout_s);
  close(fd);
  return got;
}

}  // namespace torchinfer::test
