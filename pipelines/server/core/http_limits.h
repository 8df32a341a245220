// What bounds torchinfer-server's HTTP side, without GLib: the open files
// limit, the count of connections against max_connections, and the
// Content-Length rule. The glue (pipelines/server/http_listener.cpp) does
// the sockets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace torchinfer::server {

// Every connection, every camera's files and sockets are descriptors; the
// usual soft limit (1024) is far below the hard one. Raises the soft
// RLIMIT_NOFILE to the hard limit.
struct OpenFilesLimit {
  std::uint64_t before = 0, after = 0;
  std::string error;  // why it could not be read or raised
};
OpenFilesLimit raise_open_files_limit();

// Open connections against max_connections, and what happened to the rest.
// Past max_connections, kProbeReserve more are let in for the probes only
// (/livez, /readyz, /startupz, /healthz): slow clients holding every place
// must not get the server restarted by its own liveness probe. Any other
// request on such a connection is answered 503 (refuse_request()).
// Main loop only.
enum class Admission { kServe, kProbesOnly, kRefused };

class ConnectionBook {
 public:
  static constexpr int kProbeReserve = 8;
  explicit ConnectionBook(int max_connections) : max_(max_connections) {}
  int max_connections() const { return max_; }
  int open() const { return open_; }
  int probes_open() const { return probes_open_; }

  // A new connection: served, let in for the probes only (past
  // max_connections, while the reserve has room), or refused (counted).
  Admission admit();
  // A connection admitted as `how` has gone.
  void closed(Admission how = Admission::kServe);
  // A request other than a probe on a probes-only connection: answered 503.
  void refuse_request() { refused_++; }
  // Closed because it sent no complete request within idle_timeout_s.
  void timed_out() { timed_out_++; }
  // accept() failed (EMFILE: the open files limit); the listener pauses.
  void accept_failed() { accept_errors_++; }

  std::uint64_t accepted() const { return accepted_; }
  std::uint64_t refused() const { return refused_; }
  std::uint64_t timed_out_count() const { return timed_out_; }
  std::uint64_t accept_errors() const { return accept_errors_; }

  // Prometheus text of these figures (torchinfer_http_connections...).
  std::string prometheus() const;

 private:
  int max_;
  int open_ = 0, probes_open_ = 0;
  std::uint64_t accepted_ = 0, refused_ = 0, timed_out_ = 0, accept_errors_ = 0;
};

// The body length a request declares in its Content-Length headers, given
// every value as sent (a header may repeat, a value may be a list). -1: no
// Content-Length. False with the reason when a value is not a number or
// two disagree: such a request's end cannot be told, so it is refused
// (request smuggling relies on servers that pick one).
bool declared_body_length(const std::vector<std::string>& values, long long* length,
                          std::string* why);

}  // namespace torchinfer::server
