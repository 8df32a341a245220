#include "engine/zip_check.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/error.h"
#include "common/file_check.h"
#include "common/utf8.h"

namespace torchinfer {
namespace {

constexpr std::size_t kChunk = 1 << 20;

const char* const kExportHint =
    "export the model as TorchScript with models/export.py, or torch.jit.trace/torch.jit.script "
    "followed by torch.jit.save";

[[noreturn]] void corrupt(const std::string& path, const std::string& why) {
  throw Error(ErrorKind::kModelInvalid,
              "Model file '" + path + "' is corrupt or not a TorchScript archive: " + why);
}

struct CloseArchive {
  void operator()(zip_t* za) const { zip_discard(za); }
};
using Archive = std::unique_ptr<zip_t, CloseArchive>;

struct CloseEntry {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::uint64_t bytes_at(const unsigned char* p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

bool read_at(int fd, std::uint64_t offset, unsigned char* out, std::size_t n) {
  while (n > 0) {
    const ssize_t got = ::pread(fd, out, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    out += got, offset += static_cast<std::uint64_t>(got), n -= static_cast<std::size_t>(got);
  }
  return true;
}

// libzip (1.7, Debian 12) refuses a local header that disagrees with the zip
// directory (ZIP_CHECKCONS) without saying which entry's: this names it,
// reading the 32-bit directory the way libzip compared it (name, method, and
// CRC and sizes when the header has no data descriptor). "" when it cannot
// tell (a zip64 directory, an unreadable record).
std::string disagreeing_entry(int fd, std::uint64_t size) {
  const std::uint64_t tail_len = std::min<std::uint64_t>(size, 22 + 65535);
  std::vector<unsigned char> tail(tail_len);
  if (!read_at(fd, size - tail_len, tail.data(), tail.size())) return {};
  std::int64_t eocd = static_cast<std::int64_t>(tail_len) - 22;
  while (eocd >= 0 && bytes_at(&tail[eocd], 4) != 0x06054b50) --eocd;
  if (eocd < 0) return {};
  std::uint64_t pos = bytes_at(&tail[eocd + 16], 4);
  for (std::uint64_t n = bytes_at(&tail[eocd + 10], 2); n > 0; --n) {
    unsigned char c[46], l[30];
    if (!read_at(fd, pos, c, 46) || bytes_at(c, 4) != 0x02014b50) return {};
    const std::uint64_t name_len = bytes_at(c + 28, 2);
    std::string name(name_len, '\0'), local_name(name_len, '\0');
    auto* raw = reinterpret_cast<unsigned char*>(name.data());
    const std::uint64_t local = bytes_at(c + 42, 4);
    if (!read_at(fd, pos + 46, raw, name_len) || !read_at(fd, local, l, 30)) return {};
    const bool descriptor = bytes_at(l + 6, 2) & 0x8;
    if (bytes_at(l, 4) != 0x04034b50 || bytes_at(l + 26, 2) != name_len ||
        !read_at(fd, local + 30, reinterpret_cast<unsigned char*>(local_name.data()), name_len) ||
        local_name != name || bytes_at(l + 8, 2) != bytes_at(c + 10, 2) ||
        (!descriptor && !std::equal(l + 14, l + 26, c + 16)))
      return name;
    pos += 46 + name_len + bytes_at(c + 30, 2) + bytes_at(c + 32, 2);
  }
  return {};
}

// What an archive libzip would not open is, in words.
[[noreturn]] void refuse_archive(const std::string& path, int fd, std::uint64_t size, int code) {
  if (code == ZIP_ER_NOZIP) {
    // torch.save() before PyTorch 1.6 (or _use_new_zipfile_serialization=False)
    // wrote a bare pickle: protocol opcode 0x80 first.
    unsigned char first = 0;
    if (read_at(fd, 0, &first, 1) && first == 0x80)
      throw Error(ErrorKind::kModelInvalid,
                  "Model file '" + path +
                      "' is a pickle written by torch.save(), not TorchScript: " + kExportHint);
    corrupt(path, "no zip directory found (truncated or not a TorchScript file)");
  }
  if (code == ZIP_ER_INCONS) {
    const std::string entry = disagreeing_entry(fd, size);
    corrupt(path, entry.empty() ? "its zip directory disagrees with the entries it lists"
                                : "entry '" + printable(entry, 200) +
                                      "': its local header disagrees with the zip directory");
  }
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  const std::string why = zip_error_strerror(&error);
  zip_error_fini(&error);
  corrupt(path, why);
}

// Reads the entry to its end: libzip inflates it and checks CRC-32 and size
// against the directory as the last bytes come.
void check_entry(const std::string& path, zip_t* za, zip_uint64_t i, const zip_stat_t& st,
                 const std::string& name, std::vector<unsigned char>& buf) {
  if (st.encryption_method != ZIP_EM_NONE) corrupt(path, "entry '" + name + "' is encrypted");
  if (st.comp_method != ZIP_CM_STORE && st.comp_method != ZIP_CM_DEFLATE)
    corrupt(path, "entry '" + name + "' uses compression method " + std::to_string(st.comp_method) +
                      " (only stored and deflated entries can be checked)");
  std::unique_ptr<zip_file_t, CloseEntry> f(zip_fopen_index(za, i, 0));
  if (!f) corrupt(path, "entry '" + name + "' cannot be read: " + zip_strerror(za));
  std::uint64_t produced = 0;
  zip_int64_t n;
  while ((n = zip_fread(f.get(), buf.data(), buf.size())) > 0) {
    produced += static_cast<std::uint64_t>(n);
    // Memory and time stay bounded whatever the data inflates to.
    if (produced > st.size) corrupt(path, "entry '" + name + "' inflates to more than its size");
  }
  if (n == 0) return;
  const int code = zip_error_code_zip(zip_file_get_error(f.get()));
  if (code == ZIP_ER_CRC) corrupt(path, "checksum mismatch in '" + name + "'");
  if (code == ZIP_ER_INCONS) corrupt(path, "inconsistent sizes for '" + name + "'");
  if (code == ZIP_ER_ZLIB || code == ZIP_ER_COMPRESSED_DATA)
    corrupt(path, "entry '" + name + "' does not inflate (damaged deflate data)");
  corrupt(path, "entry '" + name + "' cannot be read: " + zip_file_strerror(f.get()));
}

}  // namespace

std::vector<std::string> verify_zip_archive(const std::string& path) {
  FileDescriptor fd(open_regular_file(path, "Model file"));
  struct stat info;
  if (::fstat(fd.get(), &info) != 0)
    throw Error(ErrorKind::kNotFound, "Model file '" + path + "' cannot be read");
  const auto size = static_cast<std::uint64_t>(info.st_size);
  if (size < 22) corrupt(path, size == 0 ? "the file is empty" : "too short");
  // libzip reads the regular file opened here (never a FIFO that would
  // block), through a duplicate it closes itself once it opened the archive.
  const int lent = ::dup(fd.get());
  if (lent < 0) throw Error(ErrorKind::kNotFound, "Model file '" + path + "' cannot be read");
  int code = 0;
  Archive za(zip_fdopen(lent, ZIP_CHECKCONS | ZIP_RDONLY, &code));
  if (!za) {
    ::close(lent);
    refuse_archive(path, fd.get(), size, code);
  }
  const zip_int64_t entries = zip_get_num_entries(za.get(), 0);
  if (entries <= 0) corrupt(path, "the archive is empty");
  std::vector<std::string> names;
  std::vector<unsigned char> buf(kChunk);
  for (zip_uint64_t i = 0; i < static_cast<zip_uint64_t>(entries); ++i) {
    zip_stat_t st;
    if (zip_stat_index(za.get(), i, ZIP_FL_ENC_RAW, &st) != 0 || !(st.valid & ZIP_STAT_NAME))
      corrupt(path, "damaged zip directory");
    const std::string raw = st.name;
    check_entry(path, za.get(), i, st, printable(raw, 200), buf);
    names.push_back(raw);
  }
  return names;
}

void check_torchscript_layout(const std::string& path, const std::vector<std::string>& entries) {
  auto has = [&](const char* tail) {
    return std::any_of(entries.begin(), entries.end(),
                       [&](const std::string& n) { return ends_with(n, tail); });
  };
  // torch.save() of a state_dict or of a whole nn.Module: pickled tensors
  // and class references, but no compiled code or constants.
  if (has("/data.pkl") && !has("/constants.pkl") &&
      !std::any_of(entries.begin(), entries.end(),
                   [](const std::string& n) { return n.find("/code/") != std::string::npos; }))
    throw Error(ErrorKind::kModelInvalid,
                "Model file '" + path +
                    "' was written by torch.save() (a state_dict or pickled nn.Module), not "
                    "TorchScript: " +
                    kExportHint);
  if (!has("/version"))
    throw Error(ErrorKind::kModelInvalid,
                "Model file '" + path +
                    "' is a zip archive without the 'version' record every TorchScript file has: "
                    "it was not written by torch.jit.save; " +
                    kExportHint);
}

}  // namespace torchinfer
