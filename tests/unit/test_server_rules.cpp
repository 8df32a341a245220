// torchinfer-server's rules that need no GStreamer (pipelines/server/core): removed
// cameras in the registry, the token file, what a file:// camera may name,
// the connection book, the Content-Length rule and the open files limit.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "common/error.h"
#include "server/core/http_limits.h"
#include "server/core/server_config.h"
#include "server/core/source_check.h"
#include "server/core/stream_registry.h"
#include "server/core/token_file.h"

using namespace torchinfer;
using namespace torchinfer::server;

namespace {

std::string token_error(const std::string& bytes) {
  try {
    parse_token(bytes, "/etc/tok");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/torchinfer-rules-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { (void)std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

TEST(StreamRegistry, ARemovedStreamCountsAgainstTheLimitUntilForgotten) {
  StreamRegistry<int> r(2);
  ASSERT_EQ(r.add("a", std::make_shared<int>(1)), AddResult::kAdded);
  ASSERT_EQ(r.add("b", std::make_shared<int>(2)), AddResult::kAdded);
  const auto a = r.remove("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(r.size(), 1u);
  EXPECT_EQ(r.stopping_count(), 1u);
  EXPECT_EQ(r.find("a"), nullptr);
  EXPECT_EQ(r.find_stopping("a"), a);
  EXPECT_EQ(r.add("c", std::make_shared<int>(3)), AddResult::kLimitReached);
  EXPECT_EQ(r.remove("a"), nullptr);  // not running any more
  EXPECT_EQ(r.removed(), 1u);
  ASSERT_TRUE(r.forget(a));
  EXPECT_FALSE(r.forget(a));
  EXPECT_EQ(r.stopping_count(), 0u);
  EXPECT_EQ(r.add("c", std::make_shared<int>(3)), AddResult::kAdded);
  ASSERT_EQ(r.items().size(), 2u);
  EXPECT_EQ(r.items()[0].first, "b");
  EXPECT_EQ(r.items()[1].first, "c");
}

TEST(StreamRegistry, ARemovedIdCannotComeBackWhileItStops) {
  StreamRegistry<int> r(8);
  ASSERT_EQ(r.add("cam", std::make_shared<int>(1)), AddResult::kAdded);
  const auto old = r.remove("cam");
  EXPECT_EQ(r.check("cam"), AddResult::kStopping);
  EXPECT_EQ(r.add("cam", std::make_shared<int>(2)), AddResult::kStopping);
  EXPECT_EQ(r.added(), 1u);
  ASSERT_EQ(r.stopping().size(), 1u);
  EXPECT_EQ(r.stopping()[0].first, "cam");
  ASSERT_TRUE(r.forget(old));
  EXPECT_EQ(r.add("cam", std::make_shared<int>(2)), AddResult::kAdded);
  EXPECT_EQ(*r.find("cam"), 2);
}

TEST(StreamRegistry, ForgetKnowsOnlyStoppingItems) {
  StreamRegistry<int> r(2);
  const auto a = std::make_shared<int>(1);
  ASSERT_EQ(r.add("a", a), AddResult::kAdded);
  EXPECT_FALSE(r.forget(a));  // running, not stopping
  EXPECT_FALSE(r.forget(std::make_shared<int>(1)));
  EXPECT_EQ(r.size(), 1u);
}

TEST(TokenFile, OneWordOfPrintableAscii) {
  EXPECT_EQ(parse_token("0123456789abcdef\n", "t"), "0123456789abcdef");
  EXPECT_EQ(parse_token(" \t tok-EN_~!\r\n\n", "t"), "tok-EN_~!");
}

TEST(TokenFile, ANulByteIsRefusedNamingTheFileAndTheByte) {
  EXPECT_EQ(token_error(std::string("abc\0def\n", 8)),
            "token file '/etc/tok': byte 3 is 0x00 (NUL), not printable ASCII; the file must "
            "hold one token of printable ASCII, e.g. from `openssl rand -hex 32`");
  EXPECT_EQ(token_error(std::string("\0abc", 4)).rfind("token file '/etc/tok': byte 0 is 0x00", 0),
            0u);
}

TEST(TokenFile, BlanksControlBytesAndUtf8AreRefused) {
  EXPECT_EQ(token_error(""),
            "token file '/etc/tok': empty; the file must hold one token of printable ASCII, e.g. "
            "from `openssl rand -hex 32`");
  EXPECT_EQ(token_error(" \n\n"), token_error(""));
  EXPECT_EQ(token_error("\nab cd\n").substr(0, 60),
            "token file '/etc/tok': a blank inside the token (byte 3); th");
  EXPECT_NE(token_error("ab\x01"
                        "cd")
                .find("byte 2 is 0x01, not printable ASCII"),
            std::string::npos);
  EXPECT_NE(token_error("caf\xC3\xA9").find("byte 3 is 0xC3, not printable ASCII"),
            std::string::npos);
  EXPECT_NE(token_error("ab\x7F").find("byte 2 is 0x7F"), std::string::npos);
}

TEST(FileSource, ARegularFileOrNothingMayGoToFilesrc) {
  TempDir dir;
  const std::string clip = dir.path() + "/clip.mkv";
  std::ofstream(clip) << "x";
  EXPECT_EQ(file_source_problem(clip), "");
  // Missing: filesrc says so, and the camera fails with that.
  EXPECT_EQ(file_source_problem(dir.path() + "/none.mkv"), "");
  EXPECT_EQ(file_source_problem(dir.path() + "/no/dir/clip.mkv"), "");
}

TEST(FileSource, AFifoADirectoryAndADeviceAreRefusedWithoutBlocking) {
  TempDir dir;
  const std::string fifo = dir.path() + "/clip.mkv";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(file_source_problem(fifo), "file '" + fifo +
                                           "' is not a regular file (it is a FIFO (named pipe)); "
                                           "give the path of a file");
  EXPECT_EQ(file_source_problem(dir.path()),
            "file '" + dir.path() +
                "' is not a regular file (it is a directory); give the path of a file");
  EXPECT_NE(file_source_problem("/dev/null").find("(it is a character device)"), std::string::npos);
}

TEST(ConnectionBook, AdmitsUpToTheLimitAndCountsTheRest) {
  ConnectionBook b(2);
  EXPECT_EQ(b.admit(), Admission::kServe);
  EXPECT_EQ(b.admit(), Admission::kServe);
  // Past the limit: the probes' reserve, then refusals.
  for (int i = 0; i < ConnectionBook::kProbeReserve; ++i)
    EXPECT_EQ(b.admit(), Admission::kProbesOnly) << i;
  EXPECT_EQ(b.admit(), Admission::kRefused);
  EXPECT_EQ(b.open(), 2);
  EXPECT_EQ(b.probes_open(), ConnectionBook::kProbeReserve);
  EXPECT_EQ(b.refused(), 1u);
  b.closed(Admission::kProbesOnly);
  EXPECT_EQ(b.admit(), Admission::kProbesOnly);  // its place in the reserve is free again
  b.refuse_request();                            // a request other than a probe on it
  EXPECT_EQ(b.refused(), 2u);
  for (int i = 0; i < ConnectionBook::kProbeReserve; ++i) b.closed(Admission::kProbesOnly);
  b.closed(Admission::kProbesOnly);  // never below zero
  EXPECT_EQ(b.probes_open(), 0);
  EXPECT_EQ(b.open(), 2);  // the reserve is counted apart
  b.closed();
  EXPECT_EQ(b.admit(), Admission::kServe);
  b.timed_out();
  b.accept_failed();
  b.accept_failed();
  b.closed();
  b.closed();
  b.closed();  // never below zero
  EXPECT_EQ(b.open(), 0);
  EXPECT_EQ(b.accepted(), 3u);
  EXPECT_EQ(b.prometheus(),
            "# HELP torchinfer_http_connections HTTP connections open now.\n"
            "# TYPE torchinfer_http_connections gauge\n"
            "torchinfer_http_connections 0\n"
            "# HELP torchinfer_http_connections_max max_connections.\n"
            "# TYPE torchinfer_http_connections_max gauge\n"
            "torchinfer_http_connections_max 2\n"
            "# HELP torchinfer_http_connections_accepted_total HTTP connections accepted and "
            "served.\n"
            "# TYPE torchinfer_http_connections_accepted_total counter\n"
            "torchinfer_http_connections_accepted_total 3\n"
            "# HELP torchinfer_http_connections_refused_total HTTP connections answered 503 "
            "because max_connections were open.\n"
            "# TYPE torchinfer_http_connections_refused_total counter\n"
            "torchinfer_http_connections_refused_total 2\n"
            "# HELP torchinfer_http_connections_timed_out_total HTTP connections closed after "
            "idle_timeout_s without being answered.\n"
            "# TYPE torchinfer_http_connections_timed_out_total counter\n"
            "torchinfer_http_connections_timed_out_total 1\n"
            "# HELP torchinfer_http_accept_errors_total Failed accepts (e.g. the open files limit "
            "reached); the listener pauses and resumes.\n"
            "# TYPE torchinfer_http_accept_errors_total counter\n"
            "torchinfer_http_accept_errors_total 2\n");
}

TEST(ContentLength, OneValueRepeatedOrListedIsTheLength) {
  long long n = 0;
  std::string why;
  EXPECT_TRUE(declared_body_length({}, &n, &why));
  EXPECT_EQ(n, -1);
  EXPECT_TRUE(declared_body_length({"42"}, &n, &why));
  EXPECT_EQ(n, 42);
  EXPECT_TRUE(declared_body_length({"42", " 42 "}, &n, &why));
  EXPECT_EQ(n, 42);
  EXPECT_TRUE(declared_body_length({"42, 42"}, &n, &why));
  EXPECT_EQ(n, 42);
  EXPECT_TRUE(declared_body_length({"0"}, &n, &why));
  EXPECT_EQ(n, 0);
}

TEST(ContentLength, ConflictingOrMalformedValuesAreRefused) {
  long long n = 0;
  std::string why;
  EXPECT_FALSE(declared_body_length({"5", "6"}, &n, &why));
  EXPECT_EQ(why, "conflicting Content-Length headers (5 and 6); send one");
  EXPECT_FALSE(declared_body_length({"5, 600"}, &n, &why));
  EXPECT_EQ(why, "conflicting Content-Length headers (5 and 600); send one");
  EXPECT_FALSE(declared_body_length({"-1"}, &n, &why));
  EXPECT_EQ(why, "Content-Length '-1' is not a number of bytes");
  EXPECT_FALSE(declared_body_length({""}, &n, &why));
  EXPECT_FALSE(declared_body_length({"1e3"}, &n, &why));
  EXPECT_FALSE(declared_body_length({"99999999999999999999"}, &n, &why));
  EXPECT_FALSE(declared_body_length({"\xFF"}, &n, &why));
  EXPECT_EQ(why, "Content-Length '\\xFF' is not a number of bytes");
}

TEST(OpenFilesLimit, TheSoftLimitIsRaisedToTheHardOne) {
  struct rlimit lim;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &lim), 0);
  ASSERT_GT(lim.rlim_max, 64u);
  const rlim_t hard = lim.rlim_max;
  lim.rlim_cur = 64;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lim), 0);
  const OpenFilesLimit r = raise_open_files_limit();
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.before, 64u);
  EXPECT_EQ(r.after, hard);
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &lim), 0);
  EXPECT_EQ(lim.rlim_cur, hard);
  const OpenFilesLimit again = raise_open_files_limit();
  EXPECT_EQ(again.before, hard);
  EXPECT_EQ(again.after, hard);
}

TEST(ServerConfigLimits, MaxConnectionsAndIdleTimeout) {
  const nlohmann::json models = {{{"id", "m"}, {"path", "m.pt"}}};
  ServerConfig c = parse_server_config({{"models", models}}, "s.json");
  EXPECT_EQ(c.max_connections, 256);
  EXPECT_EQ(c.idle_timeout_s, 30.0);
  c = parse_server_config({{"models", models}, {"max_connections", 8}, {"idle_timeout_s", 0.5}},
                          "s.json");
  EXPECT_EQ(c.max_connections, 8);
  EXPECT_EQ(c.idle_timeout_s, 0.5);
  for (const auto& [field, value] :
       std::vector<std::pair<std::string, nlohmann::json>>{{"max_connections", 0},
                                                           {"max_connections", 65537},
                                                           {"max_connections", "8"},
                                                           {"idle_timeout_s", 0.05},
                                                           {"idle_timeout_s", 3601}}) {
    try {
      parse_server_config({{"models", models}, {field, value}}, "s.json");
      ADD_FAILURE() << field << " " << value << " accepted";
    } catch (const FieldError& e) {
      EXPECT_EQ(e.field(), field);
    }
  }
}
