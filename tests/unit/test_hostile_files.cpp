// Hostile inputs to the file readers: JSON nested deep enough to overflow
// any recursive walk, files that block (FIFOs), oversized files, labels that
// are not UTF-8, archives damaged inside deflated entries. Each must end in
// a torchinfer::Error naming the file, never a crash or a hang.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <vector>

#include "common/error.h"
#include "common/file_check.h"
#include "common/json_file.h"
#include "common/model_config.h"
#include "common/utf8.h"
#include "engine/zip_check.h"
#include "test_paths.h"
#include "zip_layout.h"

using namespace torchinfer;

namespace {

std::string temp_path(const std::string& name) {
  return testing::TempDir() + "hostile_" + name;
}

std::string write_temp(const std::string& name, const std::string& bytes) {
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string make_fifo(const std::string& name) {
  const std::string path = temp_path(name);
  ::unlink(path.c_str());
  EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0) << path;
  return path;
}

std::string deep_json(int levels) {
  return "{\"mean\": " + std::string(levels, '[') + std::string(levels, ']') + "}";
}

// Runs `f`, which must throw Error of `kind` whose message holds every key.
template <typename F>
void expect_error(F f, ErrorKind kind, std::initializer_list<std::string> keys) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    for (const auto& k : keys)
      EXPECT_NE(std::string(e.what()).find(k), std::string::npos) << k << " not in: " << e.what();
    EXPECT_TRUE(is_valid_utf8(e.what())) << e.what();
  }
}

std::vector<char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

using Entry = test::ZipEntry;

template <class Bytes>
std::vector<Entry> entries_of(const Bytes& z) {
  return test::zip_entries(z);
}

std::string write_bytes(const std::string& name, const std::vector<char>& bytes) {
  return write_temp(name, std::string(bytes.begin(), bytes.end()));
}

}  // namespace

// ---- JSON ------------------------------------------------------------------

// The issue's file: 100k levels, 200 kB. It used to overflow the stack.
TEST(HostileJson, DeepNestingInASidecarIsAnError) {
  const std::string path = write_temp("deep.json", deep_json(100000));
  expect_error([&] { parse_model_config(path); }, ErrorKind::kConfigInvalid,
               {path, "nested deeper than 64 levels"});
}

TEST(HostileJson, DeepNestingBesideTheModelIsAnError) {
  const std::string model = temp_path("deepnet.pt");
  const std::string sidecar = write_temp("deepnet.json", deep_json(100000));
  expect_error([&] { resolve_model_config(model, "", {}); }, ErrorKind::kConfigInvalid,
               {sidecar, "nested deeper than 64 levels"});
}

TEST(HostileJson, DepthLimitIsExact) {
  const std::string ok = std::string(64, '[') + std::string(64, ']');
  EXPECT_EQ(parse_json(ok, "body").dump().size(), 128u);
  expect_error([&] { parse_json("[" + ok + "]", "REST body"); }, ErrorKind::kConfigInvalid,
               {"REST body: nested deeper than 64 levels"});
}

// nlohmann throws out_of_range (not parse_error) for these.
TEST(HostileJson, HugeNumbersAreAnErrorNotAStrayException) {
  expect_error([] { parse_model_config_text(R"({"mean": 1e400})", "m.json"); },
               ErrorKind::kConfigInvalid, {"m.json: not valid JSON", "number overflow"});
  expect_error([] { parse_model_config_text(R"({"offset": 1e39})", "m.json"); },
               ErrorKind::kConfigInvalid, {"m.json", "'offset'"});
}

TEST(HostileJson, NotUtf8IsAnErrorWithPrintableText) {
  expect_error([] { parse_model_config_text("{\"labels\": [\"ok\", \"\xff\xfe\"]}", "m.json"); },
               ErrorKind::kConfigInvalid, {"m.json: not valid JSON", "\\xFF"});
}

TEST(HostileJson, OversizedFileIsRefusedUnread) {
  const std::string path = write_temp("big.json", "[" + std::string(kMaxJsonFileBytes, ' ') + "]");
  expect_error([&] { read_json_file(path, "model config"); }, ErrorKind::kConfigInvalid,
               {"model config '" + path + "' is larger than 16777216 bytes"});
}

TEST(HostileJson, ReadsAGoodFile) {
  const std::string path = write_temp("good.json", R"({"a": [1, {"b": 2}]})");
  EXPECT_EQ(read_json_file(path, "x")["a"][1]["b"], 2);
}

// ---- files that block or are not files -------------------------------------

TEST(HostileFiles, FifoSidecarFailsAtOnce) {
  const std::string fifo = make_fifo("fifo.json");
  expect_error([&] { parse_model_config(fifo); }, ErrorKind::kNotFound,
               {"model config '" + fifo + "'", "not a regular file", "FIFO"});
}

TEST(HostileFiles, FifoBesideTheModelFailsAtOnce) {
  const std::string fifo = make_fifo("fifonet.json");
  expect_error([&] { resolve_model_config(temp_path("fifonet.pt"), "", {}); }, ErrorKind::kNotFound,
               {fifo, "not a regular file"});
}

TEST(HostileFiles, FifoLabelsFailAtOnce) {
  const std::string fifo = make_fifo("fifo.labels");
  expect_error([&] { read_labels_file(fifo); }, ErrorKind::kNotFound,
               {"labels file '" + fifo + "'", "not a regular file"});
  ConfigOverrides o;
  o.labels_file = fifo;
  expect_error([&] { resolve_model_config("x.pt", "", o); }, ErrorKind::kNotFound,
               {fifo, "not a regular file"});
}

TEST(HostileFiles, FifoModelFailsAtOnce) {
  const std::string fifo = make_fifo("fifo.pt");
  expect_error([&] { verify_zip_archive(fifo); }, ErrorKind::kNotFound,
               {"Model file '" + fifo + "'", "not a regular file"});
}

TEST(HostileFiles, DirectoriesAndDevicesAreNotFiles) {
  expect_error([] { read_regular_file("/", "model config", 100); }, ErrorKind::kNotFound,
               {"'/' is not a regular file (it is a directory)"});
  expect_error([] { read_labels_file("/dev/zero"); }, ErrorKind::kNotFound,
               {"/dev/zero", "character device"});
  expect_error([] { verify_zip_archive("/dev/null"); }, ErrorKind::kNotFound,
               {"/dev/null", "not a regular file"});
}

// ---- outputs that block or are not files ------------------------------------

// A FIFO nobody reads held open() (and the element's start) forever.
TEST(HostileOutputs, FifoWithoutAReaderFailsAtOnce) {
  const std::string fifo = make_fifo("out.jsonl");
  expect_error([&] { open_output_file(fifo, "results file"); }, ErrorKind::kNotFound,
               {"results file '" + fifo +
                "' is a FIFO (named pipe) that no process reads; start its reader first or "
                "give the path of a file"});
}

// With a reader it is written like a file, in blocking mode (back-pressure).
TEST(HostileOutputs, FifoWithAReaderIsWritten) {
  const std::string fifo = make_fifo("read.jsonl");
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  std::FILE* f = open_output_stream(fifo, "results file");
  EXPECT_EQ(::fcntl(::fileno(f), F_GETFL) & O_NONBLOCK, 0);
  EXPECT_EQ(::fcntl(::fileno(f), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  std::fputs("{\"frame\":0}\n", f);
  EXPECT_EQ(std::fclose(f), 0);
  char buf[64] = {};
  EXPECT_EQ(::read(reader, buf, sizeof buf), 12);
  EXPECT_STREQ(buf, "{\"frame\":0}\n");
  ::close(reader);
}

TEST(HostileOutputs, RegularFileIsCreatedThenTruncated) {
  const std::string path = temp_path("out.txt");
  ::unlink(path.c_str());
  for (const char* text : {"first run, longer\n", "second\n"}) {
    std::FILE* f = open_output_stream(path, "output");
    std::fputs(text, f);
    EXPECT_EQ(std::fclose(f), 0);
    const std::vector<char> got = read_all(path);
    EXPECT_EQ(std::string(got.begin(), got.end()), text);
  }
  EXPECT_EQ(::close(open_output_file("/dev/null", "output")), 0);
}

TEST(HostileOutputs, WriteOutputFileWritesEveryByteOrNamesTheFile) {
  const std::string path = temp_path("snapshot.png");
  const std::string bytes = std::string("\x89PNG\0", 5) + std::string(200000, 'x');
  write_output_file(path, "snapshot", bytes);
  const std::vector<char> got = read_all(path);
  EXPECT_EQ(std::string(got.begin(), got.end()), bytes);
  expect_error([&] { write_output_file("/dev/full", "snapshot", bytes); }, ErrorKind::kNotFound,
               {"snapshot '/dev/full' cannot be written: No space left on device"});
  const std::string fifo = make_fifo("snapshot_fifo.png");
  expect_error([&] { write_output_file(fifo, "snapshot", bytes); }, ErrorKind::kNotFound,
               {"snapshot '" + fifo + "' is a FIFO (named pipe) that no process reads"});
}

TEST(HostileOutputs, DirectoriesSocketsAndMissingFoldersAreNamed) {
  expect_error(
      [] { open_output_file(testing::TempDir(), "--output"); }, ErrorKind::kNotFound,
      {"--output '" + testing::TempDir() + "' cannot be opened for writing: Is a directory"});
  const std::string missing = temp_path("no/such/dir/out.jsonl");
  expect_error(
      [&] { open_output_file(missing, "--output"); }, ErrorKind::kNotFound,
      {"--output '" + missing + "' cannot be opened for writing: No such file or directory"});
  const std::string sock = temp_path("out.sock");
  ::unlink(sock.c_str());
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(sock.size(), sizeof(addr.sun_path));
  std::copy(sock.begin(), sock.end(), addr.sun_path);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  expect_error([&] { open_output_file(sock, "--output"); }, ErrorKind::kNotFound,
               {"--output '" + sock +
                "' cannot be written (it is a socket); give the path of a "
                "file"});
  ::close(s);
  ::unlink(sock.c_str());
}

// ---- labels ------------------------------------------------------------------

TEST(HostileLabels, NotUtf8NamesFileAndLine) {
  const std::string path = write_temp("latin1.labels", "bolt\nwasher\nsch\xe4\x64\x65n\n");
  expect_error([&] { read_labels_file(path); }, ErrorKind::kConfigInvalid,
               {"labels file '" + path + "' line 3 is not valid UTF-8", "sch\\xE4den",
                "save the file as UTF-8"});
  // Through a sidecar, the sidecar's field is named too.
  const std::string sidecar = write_temp("latin1.json", R"({"labels": "hostile_latin1.labels"})");
  expect_error([&] { parse_model_config(sidecar); }, ErrorKind::kConfigInvalid,
               {sidecar, "'labels'", "line 3 is not valid UTF-8"});
}

TEST(HostileLabels, Utf8IsKept) {
  const std::string path = write_temp("utf8.labels", "Schraube\nRiß\r\n螺丝\n");
  EXPECT_EQ(read_labels_file(path), (std::vector<std::string>{"Schraube", "Riß", "螺丝"}));
}

TEST(Utf8, Validator) {
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("\xf0\x9f\x99\x82 \xe2\x82\xac"));
  std::size_t bad = 0;
  for (const char* s : {"\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\x80",
                        "\xe2\x82", "ok\xff"}) {
    EXPECT_FALSE(is_valid_utf8(s, &bad)) << s;
  }
  EXPECT_EQ(bad, 2u);
  EXPECT_EQ(printable("a\xffz\n"), "a\\xFFz ");
}

// ---- zip entries -----------------------------------------------------------

// TorchScript compresses its code entries: a flip there went unnoticed.
TEST(HostileZip, FlipInADeflatedEntryIsNamed) {
  const std::string model = test::model_path("hostile_net.pt");
  const auto good = read_all(model);
  ASSERT_FALSE(good.empty()) << model << ": the hostile test models are built with the tests";
  int deflated = 0;
  for (const Entry& e : entries_of(good)) {
    if (e.method != 8 || e.comp < 8) continue;
    ++deflated;
    auto bad = good;
    bad[e.data + e.comp / 2] ^= 0x10;
    const std::string path = write_bytes("flip_deflated.pt", bad);
    expect_error([&] { verify_zip_archive(path); }, ErrorKind::kModelInvalid,
                 {"Model file '" + path + "'", "'" + e.name + "'"});
  }
  EXPECT_GE(deflated, 4);
}

TEST(HostileZip, DeflatedArchiveIsAcceptedAndListed) {
  const auto names = verify_zip_archive(test::model_path("deflated.pt"));
  EXPECT_NE(std::find(names.begin(), names.end(), "archive/data.pkl"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "archive/constants.pkl"), names.end());
  EXPECT_NO_THROW(check_torchscript_layout("deflated.pt", names));
}

TEST(HostileZip, OtherCompressionMethodsAreRefused) {
  auto bad = read_all(test::model_path("hostile_net.pt"));
  const Entry e = entries_of(bad).front();
  // bzip2 (12) in both headers: consistent, but not checkable.
  bad[e.central + 10] = 12;
  bad[e.local + 8] = 12;
  const std::string path = write_bytes("bzip2.pt", bad);
  expect_error([&] { verify_zip_archive(path); }, ErrorKind::kModelInvalid,
               {path, "'" + e.name + "' uses compression method 12"});
}

TEST(HostileZip, LocalHeaderMustMatchTheDirectory) {
  auto bad = read_all(test::model_path("hostile_net.pt"));
  const Entry e = entries_of(bad)[1];
  bad[e.local + 30 + e.name.size() - 1] ^= 0x01;  // renamed in the local header only
  const std::string path = write_bytes("renamed.pt", bad);
  expect_error([&] { verify_zip_archive(path); }, ErrorKind::kModelInvalid,
               {path, "'" + e.name + "': its local header disagrees with the zip directory"});
}

TEST(HostileZip, DeflatedSizeMismatchIsRefused) {
  auto bad = read_all(test::model_path("deflated.pt"));
  const Entry e = entries_of(bad).front();
  bad[e.central + 24] ^= 0x01;  // uncompressed size in the directory
  const std::string path = write_bytes("deflated_size.pt", bad);
  expect_error([&] { verify_zip_archive(path); }, ErrorKind::kModelInvalid,
               {path, "'" + e.name + "'"});
}
