#include "mqtt_broker.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <mosquitto.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace torchinfer::test {
namespace {

constexpr auto kWait = std::chrono::seconds(20);

bool accepts_connections(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  close(fd);
  return ok;
}

int run(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  if (posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), environ) != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

Broker::Broker(BrokerConfig config, int port)
    : config_(std::move(config)), port_(port ? port : free_port()) {
  static int n = 0;
  dir_ = testing::TempDir() + "broker_" + std::to_string(getpid()) + "_" + std::to_string(n++);
  mkdir(dir_.c_str(), 0777);
  chmod(dir_.c_str(), 0777);
  std::ofstream conf(dir_ + "/mosquitto.conf");
  conf << "listener " << port_ << " 127.0.0.1\n";
  // Run as root (tests in containers): do not drop to the mosquitto user,
  // who could not read the test's files.
  if (getuid() == 0) conf << "user root\n";
  if (config_.username.empty()) {
    conf << "allow_anonymous true\n";
  } else {
    conf << "allow_anonymous false\npassword_file " << dir_ << "/passwd\n";
    const int rc = run({"/usr/bin/mosquitto_passwd", "-b", "-c", dir_ + "/passwd", config_.username,
                        config_.password});
    EXPECT_EQ(rc, 0) << "mosquitto_passwd failed";
  }
  if (config_.persistence)
    conf << "persistence true\npersistence_location " << dir_
         << "/\nqueue_qos0_messages true\nautosave_interval 0\n";
  if (config_.max_packet_size > 0) conf << "max_packet_size " << config_.max_packet_size << "\n";
  conf << "log_type error\nlog_type warning\nlog_type notice\nlog_type information\n";
}

Broker::~Broker() {
  stop();
}

bool Broker::start() {
  if (pid_ > 0) return true;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  const std::string log_path = dir_ + "/log";
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  const std::string conf = dir_ + "/mosquitto.conf";
  char* argv[] = {const_cast<char*>("/usr/sbin/mosquitto"), const_cast<char*>("-c"),
                  const_cast<char*>(conf.c_str()), nullptr};
  const int rc = posix_spawn(&pid_, argv[0], &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    pid_ = -1;
    ADD_FAILURE() << "cannot run /usr/sbin/mosquitto (install the mosquitto package)";
    return false;
  }
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (std::chrono::steady_clock::now() < deadline) {
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      ADD_FAILURE() << "mosquitto exited at start:\n" << log();
      return false;
    }
    if (accepts_connections(port_)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "mosquitto does not accept connections on " << port_ << ":\n" << log();
  return false;
}

void Broker::stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  int status;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string Broker::log() const {
  std::ifstream in(dir_ + "/log");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Subscriber::Subscriber(int port, const std::string& topic, SubscriberOptions o)
    : topic_(topic), qos_(o.qos) {
  mosquitto_lib_init();
  mosq_ = mosquitto_new(o.client_id.empty() ? nullptr : o.client_id.c_str(), !o.persistent, this);
  if (!o.username.empty()) mosquitto_username_pw_set(mosq_, o.username.c_str(), o.password.c_str());
  mosquitto_connect_callback_set(mosq_, &Subscriber::on_connect);
  mosquitto_subscribe_callback_set(mosq_, &Subscriber::on_subscribe);
  mosquitto_message_callback_set(mosq_, &Subscriber::on_message);
  mosquitto_reconnect_delay_set(mosq_, 1, 1, false);
  EXPECT_EQ(mosquitto_connect(mosq_, "127.0.0.1", port, 30), MOSQ_ERR_SUCCESS);
  mosquitto_loop_start(mosq_);
}

Subscriber::~Subscriber() {
  disconnect();
  mosquitto_destroy(mosq_);
}

void Subscriber::disconnect() {
  if (!mosq_) return;
  mosquitto_disconnect(mosq_);
  mosquitto_loop_stop(mosq_, false);
}

void Subscriber::on_connect(mosquitto* m, void* self, int rc) {
  auto* s = static_cast<Subscriber*>(self);
  if (rc == 0) mosquitto_subscribe(m, nullptr, s->topic_.c_str(), s->qos_);
}

void Subscriber::on_subscribe(mosquitto*, void* self, int, int, const int*) {
  auto* s = static_cast<Subscriber*>(self);
  std::lock_guard<std::mutex> lk(s->lock_);
  s->subscribed_ = true;
  s->cv_.notify_all();
}

void Subscriber::on_message(mosquitto*, void* self, const struct mosquitto_message* m) {
  auto* s = static_cast<Subscriber*>(self);
  std::lock_guard<std::mutex> lk(s->lock_);
  s->messages_.emplace_back(static_cast<const char*>(m->payload), m->payloadlen);
  s->cv_.notify_all();
}

bool Subscriber::wait_subscribed() {
  std::unique_lock<std::mutex> lk(lock_);
  return cv_.wait_for(lk, kWait, [this] { return subscribed_; });
}

bool Subscriber::wait_for(std::size_t n) {
  std::unique_lock<std::mutex> lk(lock_);
  return cv_.wait_for(lk, kWait, [&] { return messages_.size() >= n; });
}

std::vector<std::string> Subscriber::messages() {
  std::lock_guard<std::mutex> lk(lock_);
  return messages_;
}

}  // namespace torchinfer::test
