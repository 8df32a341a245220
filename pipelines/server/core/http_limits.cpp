#include "server/core/http_limits.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "common/utf8.h"

namespace torchinfer::server {

OpenFilesLimit raise_open_files_limit() {
  OpenFilesLimit r;
  struct rlimit lim;
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) {
    r.error = std::string("getrlimit: ") + std::strerror(errno);
    return r;
  }
  r.before = r.after = lim.rlim_cur;
  rlim_t target = lim.rlim_max;
  if (target == RLIM_INFINITY) {
    // The kernel refuses an infinite descriptor limit: its ceiling is nr_open.
    unsigned long long nr_open = 0;
    if (std::FILE* f = std::fopen("/proc/sys/fs/nr_open", "r")) {
      if (std::fscanf(f, "%llu", &nr_open) != 1) nr_open = 0;
      std::fclose(f);
    }
    if (nr_open == 0) return r;
    target = static_cast<rlim_t>(nr_open);
  }
  if (lim.rlim_cur >= target) return r;
  lim.rlim_cur = target;
  if (setrlimit(RLIMIT_NOFILE, &lim) != 0) {
    r.error = std::string("setrlimit: ") + std::strerror(errno);
    return r;
  }
  r.after = lim.rlim_cur;
  return r;
}

Admission ConnectionBook::admit() {
  if (open_ < max_) {
    open_++;
    accepted_++;
    return Admission::kServe;
  }
  if (probes_open_ < kProbeReserve) {
    probes_open_++;
    return Admission::kProbesOnly;
  }
  refused_++;
  return Admission::kRefused;
}

void ConnectionBook::closed(Admission how) {
  int& n = how == Admission::kProbesOnly ? probes_open_ : open_;
  if (n > 0) n--;
}

std::string ConnectionBook::prometheus() const {
  std::ostringstream o;
  auto family = [&](const char* name, const char* type, const char* help, std::uint64_t v) {
    o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n'
      << name << ' ' << v << '\n';
  };
  family("torchinfer_http_connections", "gauge", "HTTP connections open now.",
         static_cast<std::uint64_t>(open_));
  family("torchinfer_http_connections_max", "gauge", "max_connections.",
         static_cast<std::uint64_t>(max_));
  family("torchinfer_http_connections_accepted_total", "counter",
         "HTTP connections accepted and served.", accepted_);
  family("torchinfer_http_connections_refused_total", "counter",
         "HTTP connections answered 503 because max_connections were open.", refused_);
  family("torchinfer_http_connections_timed_out_total", "counter",
         "HTTP connections closed after idle_timeout_s without being answered.", timed_out_);
  family("torchinfer_http_accept_errors_total", "counter",
         "Failed accepts (e.g. the open files limit reached); the listener pauses and resumes.",
         accept_errors_);
  return o.str();
}

namespace {

std::string trim(const std::string& s) {
  const std::size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

}  // namespace

bool declared_body_length(const std::vector<std::string>& values, long long* length,
                          std::string* why) {
  *length = -1;
  for (const std::string& header : values) {
    for (std::size_t start = 0, end = 0; end != std::string::npos; start = end + 1) {
      end = header.find(',', start);
      const std::string v = trim(header.substr(start, end - start));
      const bool digits =
          !v.empty() && v.size() <= 18 && v.find_first_not_of("0123456789") == std::string::npos;
      if (!digits) {
        *why = "Content-Length '" + printable(v, 40) + "' is not a number of bytes";
        return false;
      }
      const long long n = std::stoll(v);
      if (*length >= 0 && n != *length) {
        *why = "conflicting Content-Length headers (" + std::to_string(*length) + " and " +
               std::to_string(n) + "); send one";
        return false;
      }
      *length = n;
    }
  }
  return true;
}

}  // namespace torchinfer::server
