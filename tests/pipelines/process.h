// Running the apps and launch lines as a user does: to completion, or in the
// background with their output lines collected as they come.
#pragma once

#include <arpa/inet.h>
#include <glib.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace torchinfer::test {

// A port nobody listens on now: the kernel's pick for port 0.
inline int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

inline std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

// The environment of this process with `extra` set on top.
class Environment {
 public:
  explicit Environment(const std::map<std::string, std::string>& extra) {
    envp_ = g_get_environ();
    for (const auto& [k, v] : extra) envp_ = g_environ_setenv(envp_, k.c_str(), v.c_str(), TRUE);
  }
  ~Environment() { g_strfreev(envp_); }
  gchar** get() const { return envp_; }

 private:
  gchar** envp_;
};

struct Result {
  int exit_code = -1;  // -1: killed by a signal
  std::string out, err;
};

inline Result run(const std::vector<std::string>& argv,
                  const std::map<std::string, std::string>& extra_env = {}) {
  std::vector<gchar*> args;
  for (const auto& a : argv) args.push_back(const_cast<gchar*>(a.c_str()));
  args.push_back(nullptr);
  Environment env(extra_env);
  gchar *out = nullptr, *err = nullptr;
  gint status = 0;
  GError* error = nullptr;
  Result r;
  if (!g_spawn_sync(nullptr, args.data(), env.get(), G_SPAWN_SEARCH_PATH, nullptr, nullptr, &out,
                    &err, &status, &error)) {
    ADD_FAILURE() << "cannot run " << argv[0] << ": " << error->message;
    g_error_free(error);
    return r;
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = out ? out : "";
  r.err = err ? err : "";
  g_free(out);
  g_free(err);
  return r;
}

// A background process; its stdout and stderr lines are collected as they come.
class Child {
 public:
  explicit Child(const std::vector<std::string>& argv,
                 const std::map<std::string, std::string>& extra_env = {}) {
    std::vector<gchar*> args;
    for (const auto& a : argv) args.push_back(const_cast<gchar*>(a.c_str()));
    args.push_back(nullptr);
    Environment env(extra_env);
    int out = -1, err = -1;
    GError* error = nullptr;
    if (!g_spawn_async_with_pipes(
            nullptr, args.data(), env.get(),
            static_cast<GSpawnFlags>(G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_SEARCH_PATH), nullptr,
            nullptr, &pid_, nullptr, &out, &err, &error)) {
      ADD_FAILURE() << "cannot run " << argv[0] << ": " << error->message;
      g_error_free(error);
      return;
    }
    readers_.emplace_back([this, out] { read_lines(out, out_); });
    readers_.emplace_back([this, err] { read_lines(err, err_); });
  }
  ~Child() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGCONT);  // a test may have stopped it
      kill(pid_, SIGKILL);
      wait_exit(30);
    }
    for (auto& t : readers_) t.join();
  }

  void signal(int sig) {
    if (pid_ > 0) kill(pid_, sig);
  }

  // Exit code; -1 killed by a signal; -2 still running at the timeout.
  int wait_exit(double timeout_s) {
    const auto t0 = std::chrono::steady_clock::now();
    while (!exited_ && pid_ > 0) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        // What it wrote last may still be in the pipes: a test reading its
        // output right after the exit must see all of it. Bounded, since a
        // child's own children may hold the pipes open.
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_for(lock, std::chrono::seconds(5), [&] { return pipes_closed_ == 2; });
        break;
      }
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return exited_ ? code_ : -2;
  }

  // Index of the first line from `from` on containing `text`, or -1 at the timeout.
  int wait_line_index(bool on_stderr, const std::string& text, double timeout_s,
                      std::size_t from = 0) {
    std::unique_lock<std::mutex> lock(mu_);
    int found = -1;
    cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] {
      const auto& lines = on_stderr ? err_ : out_;
      for (std::size_t i = from; i < lines.size(); ++i)
        if (lines[i].find(text) != std::string::npos) return (found = static_cast<int>(i)) >= 0;
      return false;
    });
    return found;
  }

  // The first line containing `text`, or "" at the timeout.
  std::string wait_line(bool on_stderr, const std::string& text, double timeout_s) {
    const int i = wait_line_index(on_stderr, text, timeout_s);
    std::lock_guard<std::mutex> lock(mu_);
    return i < 0 ? "" : (on_stderr ? err_ : out_)[i];
  }

  // Waits until stdout holds at least n lines.
  bool wait_lines(std::size_t n, double timeout_s) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::duration<double>(timeout_s),
                        [&] { return out_.size() >= n; });
  }

  // How many stderr lines contain `text`.
  int count_err(const std::string& text) {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const auto& l : err_) n += l.find(text) != std::string::npos;
    return n;
  }

  std::vector<std::string> out_lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return out_;
  }
  std::size_t err_line_count() {
    std::lock_guard<std::mutex> lock(mu_);
    return err_.size();
  }
  std::string err() {
    std::lock_guard<std::mutex> lock(mu_);
    std::string s;
    for (const auto& l : err_) s += l + "\n";
    return s;
  }

 private:
  void read_lines(int fd, std::vector<std::string>& into) {
    std::string partial;
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) {
      partial.append(buf, n);
      std::lock_guard<std::mutex> lock(mu_);
      for (std::size_t nl; (nl = partial.find('\n')) != std::string::npos;) {
        into.push_back(partial.substr(0, nl));
        partial.erase(0, nl + 1);
      }
      cv_.notify_all();
    }
    close(fd);
    std::lock_guard<std::mutex> lock(mu_);
    pipes_closed_++;
    cv_.notify_all();
  }

  GPid pid_ = 0;
  bool exited_ = false;
  int code_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> out_, err_;
  int pipes_closed_ = 0;  // stdout and stderr read to their end
  std::vector<std::thread> readers_;
};

inline std::vector<nlohmann::json> json_lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// mosquitto_sub on 127.0.0.1:port with `args` (topic, qos, count),
// subscribed when this returns: the broker, started with -v, logged its
// SUBSCRIBE. A client refused or gone before that (seen once in a loaded CI
// run: "Connection refused" right after the broker said it was running) is
// started again, up to 5 times; null, with a failure added, if none got
// through within `timeout_s`.
inline std::unique_ptr<Child> subscribed_mosquitto_sub(Child& broker, const std::string& port,
                                                       const std::vector<std::string>& args,
                                                       double timeout_s = 20) {
  std::vector<std::string> argv{"mosquitto_sub", "-h", "127.0.0.1", "-p", port};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto t0 = std::chrono::steady_clock::now();
  const auto waited = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  std::string why;
  for (int attempt = 0; attempt < 5 && waited() < timeout_s; ++attempt) {
    const std::size_t from = broker.err_line_count();
    auto sub = std::make_unique<Child>(argv);
    while (waited() < timeout_s) {
      if (broker.wait_line_index(true, "Received SUBSCRIBE", 0.2, from) >= 0) return sub;
      if (sub->wait_exit(0) != -2) break;  // refused or gone: start another
    }
    why += sub->err();
  }
  ADD_FAILURE() << "mosquitto_sub never subscribed: " << why << broker.err();
  return nullptr;
}

}  // namespace torchinfer::test
