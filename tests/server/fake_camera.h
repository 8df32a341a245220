// Aravis' software GigE Vision camera (arv-fake-gv-camera-0.8, Debian's
// aravis-tools) on 127.0.0.1: the real GVCP/GVSP protocol on loopback.
// Only one can listen on 127.0.0.1 at a time (GVCP's port 3956 is fixed),
// so the suites that use it are not run in parallel with each other
// (tests/server/meson.build) and each names its camera by its own serial.
#pragma once

#include <signal.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "../pipelines/process.h"
#include "http_client.h"

namespace torchinfer::test {

inline const char* kNoFakeCamera =
    "arv-fake-gv-camera-0.8 did not start listening on 127.0.0.1:3956: is aravis-tools installed "
    "(scripts/setup.sh), or does another fake camera hold the port?";

class FakeCamera {
 public:
  // `lost_per_thousand`: GVSP packets the camera leaves out (-r).
  explicit FakeCamera(std::string serial, int lost_per_thousand = 0)
      : serial_(std::move(serial)), lost_(lost_per_thousand) {
    start();
  }

  std::string name() const { return "Aravis-Fake-" + serial_; }
  std::string uri() const { return "aravis://" + name(); }
  bool listening() const { return listening_; }

  // Starts it (again, after kill()); the same serial and name.
  void start() {
    std::vector<std::string> argv{"arv-fake-gv-camera-0.8", "-i", "127.0.0.1", "-s", serial_};
    if (lost_ > 0) argv.insert(argv.end(), {"-r", std::to_string(lost_)});
    if (!genicam_.empty()) argv.insert(argv.end(), {"-g", genicam_});
    child_ = std::make_unique<Child>(argv);
    listening_ = eventually(gvcp_bound, 10);
  }
  // Gone at once, as a camera whose cable is pulled.
  void kill() {
    child_.reset();
    eventually([] { return !gvcp_bound(); }, 10);
  }
  void set_lost(int lost_per_thousand) { lost_ = lost_per_thousand; }
  // Frozen (SIGSTOP): a camera that hangs without closing anything, its
  // GVCP and GVSP sockets open and silent; thaw() resumes it.
  void freeze() { child_->signal(SIGSTOP); }
  void thaw() { child_->signal(SIGCONT); }
  // SIGSTOP: a camera that stops answering without closing its socket
  // (hung firmware, a cable pulled on the camera's side); SIGCONT resumes.
  void signal(int sig) {
    if (child_) child_->signal(sig);
  }
  // The next start() serves this GenICam XML (-g): the same registers
  // under other names (twelve_bit_genicam()).
  void set_genicam(const std::string& path) { genicam_ = path; }

  // This camera's own XML with its Mono16 entry named Mono12: a camera that
  // offers Mono12 and sends 16-bit words (Aravis' fake camera has no 10/12-bit
  // pattern; its Mono16 ramp runs to 65535, which a 12-bit analysis clamps).
  // Written to `path`; false if arv-tool-0.8 cannot read the XML.
  bool write_twelve_bit_genicam(const std::string& path) const {
    const Result xml = run({"arv-tool-0.8", "-n", name(), "genicam"});
    const std::string from = "<EnumEntry Name=\"Mono16\"";
    const std::size_t at = xml.out.find(from);
    if (xml.exit_code != 0 || at == std::string::npos) return false;
    std::string text = xml.out;
    text.replace(at, from.size(), "<EnumEntry Name=\"Mono12\"");
    std::ofstream(path) << text;
    return true;
  }

  // Someone listens on 127.0.0.1:3956/udp (GVCP).
  static bool gvcp_bound() {
    std::ifstream in("/proc/net/udp");
    for (std::string line; std::getline(in, line);)
      if (line.find(" 0100007F:0F74 ") != std::string::npos) return true;
    return false;
  }

 private:
  std::string serial_;
  int lost_;
  std::string genicam_;
  bool listening_ = false;
  std::unique_ptr<Child> child_;
};

}  // namespace torchinfer::test
