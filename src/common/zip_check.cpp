#include "common/zip_check.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/error.h"
#include "common/file_check.h"
#include "common/utf8.h"

namespace torchinfer {
namespace {

constexpr std::uint32_t kEocdSig = 0x06054b50;
constexpr std::uint32_t kZip64LocatorSig = 0x07064b50;
constexpr std::uint32_t kZip64EocdSig = 0x06064b50;
constexpr std::uint32_t kCentralSig = 0x02014b50;
constexpr std::uint32_t kLocalSig = 0x04034b50;
constexpr std::uint64_t kStored = 0, kDeflated = 8;
constexpr std::size_t kChunk = 1 << 20;

const char* const kExportHint =
    "export the model as TorchScript with models/export.py, or torch.jit.trace/torch.jit.script "
    "followed by torch.jit.save";

std::uint64_t le(const unsigned char* p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

class Archive {
 public:
  explicit Archive(const std::string& path)
      : path_(path), fd_(open_regular_file(path, "Model file")) {
    struct stat st;
    if (::fstat(fd_.get(), &st) != 0)
      throw Error(ErrorKind::kNotFound, "Model file '" + path + "' cannot be read");
    size_ = static_cast<std::uint64_t>(st.st_size);
  }

  [[noreturn]] void corrupt(const std::string& why) const {
    throw Error(ErrorKind::kModelInvalid,
                "Model file '" + path_ + "' is corrupt or not a TorchScript archive: " + why);
  }

  void check_range(std::uint64_t offset, std::uint64_t n, const std::string& entry) const {
    if (offset > size_ || n > size_ - offset)
      corrupt(entry.empty()
                  ? "truncated (the zip directory points past the end of the file)"
                  : "entry '" + entry + "' is truncated (it runs past the end of the file)");
  }

  void read_into(std::uint64_t offset, unsigned char* out, std::size_t n) {
    while (n > 0) {
      const ssize_t got = ::pread(fd_.get(), out, n, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) corrupt(got == 0 ? "the file shrank while being read" : "read error");
      out += got, offset += static_cast<std::uint64_t>(got), n -= static_cast<std::size_t>(got);
    }
  }

  std::vector<unsigned char> read(std::uint64_t offset, std::uint64_t n,
                                  const std::string& entry = {}) {
    check_range(offset, n, entry);
    std::vector<unsigned char> buf(n);
    read_into(offset, buf.data(), buf.size());
    return buf;
  }

  std::uint32_t crc_of_stored(std::uint64_t offset, std::uint64_t n, const std::string& name) {
    check_range(offset, n, name);
    std::vector<unsigned char> buf(static_cast<std::size_t>(std::min<std::uint64_t>(n, kChunk)));
    uLong crc = crc32(0L, Z_NULL, 0);
    while (n > 0) {
      const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(n, buf.size()));
      read_into(offset, buf.data(), chunk);
      crc = crc32(crc, buf.data(), static_cast<uInt>(chunk));
      offset += chunk, n -= chunk;
    }
    return static_cast<std::uint32_t>(crc);
  }

  // Inflates a deflated entry in chunks (memory stays bounded whatever the
  // sizes claim) and checks what comes out against the directory.
  void check_deflated(std::uint64_t offset, std::uint64_t comp, std::uint64_t uncomp,
                      std::uint32_t crc_expected, const std::string& name) {
    check_range(offset, comp, name);
    z_stream zs{};
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) corrupt("zlib cannot be initialised");
    struct End {
      z_stream* z;
      ~End() { inflateEnd(z); }
    } end{&zs};
    std::vector<unsigned char> in(static_cast<std::size_t>(std::min<std::uint64_t>(comp, kChunk)));
    std::vector<unsigned char> out(kChunk);
    uLong crc = crc32(0L, Z_NULL, 0);
    std::uint64_t consumed = 0, produced = 0;
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
      if (zs.avail_in == 0) {
        if (consumed == comp)
          corrupt("entry '" + name + "' is cut short (deflate data ends early)");
        const std::size_t n =
            static_cast<std::size_t>(std::min<std::uint64_t>(comp - consumed, in.size()));
        read_into(offset + consumed, in.data(), n);
        consumed += n;
        zs.next_in = in.data();
        zs.avail_in = static_cast<uInt>(n);
      }
      zs.next_out = out.data();
      zs.avail_out = static_cast<uInt>(out.size());
      rc = inflate(&zs, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
        corrupt("entry '" + name + "' does not inflate (damaged deflate data)");
      const std::size_t n = out.size() - zs.avail_out;
      if (n > uncomp - produced) corrupt("entry '" + name + "' inflates to more than its size");
      crc = crc32(crc, out.data(), static_cast<uInt>(n));
      produced += n;
      if (rc == Z_BUF_ERROR && n == 0 && zs.avail_in != 0)
        corrupt("entry '" + name + "' does not inflate (damaged deflate data)");
    }
    if (produced != uncomp || consumed - zs.avail_in != comp)
      corrupt("inconsistent sizes for '" + name + "'");
    if (static_cast<std::uint32_t>(crc) != crc_expected)
      corrupt("checksum mismatch in '" + name + "'");
  }

  std::uint64_t size() const { return size_; }

 private:
  std::string path_;
  FileDescriptor fd_;
  std::uint64_t size_ = 0;
};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::vector<std::string> verify_zip_archive(const std::string& path) {
  Archive a(path);
  if (a.size() < 22) a.corrupt(a.size() == 0 ? "the file is empty" : "too short");

  // End of central directory: last 22 bytes plus an optional comment.
  const std::uint64_t tail_len = std::min<std::uint64_t>(a.size(), 22 + 65535);
  const auto tail = a.read(a.size() - tail_len, tail_len);
  std::int64_t eocd = -1;
  for (std::int64_t i = static_cast<std::int64_t>(tail_len) - 22; i >= 0; --i) {
    if (le(&tail[i], 4) == kEocdSig) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) {
    // torch.save() before PyTorch 1.6 (or _use_new_zipfile_serialization=False)
    // wrote a bare pickle: protocol opcode 0x80 first.
    unsigned char first = 0;
    a.read_into(0, &first, 1);
    if (first == 0x80)
      throw Error(ErrorKind::kModelInvalid, "Model file '" + path +
                                                "' is a pickle written by torch.save(), not "
                                                "TorchScript: " +
                                                kExportHint);
    a.corrupt("no zip directory found (truncated or not a TorchScript file)");
  }
  std::uint64_t entries = le(&tail[eocd + 10], 2);
  std::uint64_t cd_size = le(&tail[eocd + 12], 4);
  std::uint64_t cd_offset = le(&tail[eocd + 16], 4);
  if (entries == 0xFFFF || cd_offset == 0xFFFFFFFF) {
    if (eocd < 20 || le(&tail[eocd - 20], 4) != kZip64LocatorSig) a.corrupt("bad zip64 directory");
    const auto z = a.read(le(&tail[eocd - 20 + 8], 8), 56);
    if (le(z.data(), 4) != kZip64EocdSig) a.corrupt("bad zip64 directory");
    entries = le(&z[32], 8);
    cd_size = le(&z[40], 8);
    cd_offset = le(&z[48], 8);
  }
  if (entries == 0) a.corrupt("the archive is empty");
  const auto cd = a.read(cd_offset, cd_size);

  std::vector<std::string> names;
  std::uint64_t pos = 0;
  for (std::uint64_t e = 0; e < entries; ++e) {
    if (pos + 46 > cd.size() || le(&cd[pos], 4) != kCentralSig) a.corrupt("damaged zip directory");
    const unsigned char* h = &cd[pos];
    const auto method = le(h + 10, 2);
    const auto crc = static_cast<std::uint32_t>(le(h + 16, 4));
    std::uint64_t comp = le(h + 20, 4);
    std::uint64_t uncomp = le(h + 24, 4);
    const auto name_len = le(h + 28, 2), extra_len = le(h + 30, 2), comment_len = le(h + 32, 2);
    std::uint64_t local = le(h + 42, 4);
    if (pos + 46 + name_len + extra_len > cd.size()) a.corrupt("damaged zip directory");
    const std::string raw_name(reinterpret_cast<const char*>(h + 46), name_len);
    const std::string name = printable(raw_name, 200);
    // Zip64 extended sizes/offset, in the order the spec lists them.
    for (std::uint64_t x = 0; x + 4 <= extra_len;) {
      const unsigned char* ex = h + 46 + name_len + x;
      const auto id = le(ex, 2), len = le(ex + 2, 2);
      if (x + 4 + len > extra_len) break;
      if (id == 0x0001) {
        std::uint64_t f = 4;
        if (uncomp == 0xFFFFFFFF && f + 8 <= 4 + len) uncomp = le(ex + f, 8), f += 8;
        if (comp == 0xFFFFFFFF && f + 8 <= 4 + len) comp = le(ex + f, 8), f += 8;
        if (local == 0xFFFFFFFF && f + 8 <= 4 + len) local = le(ex + f, 8);
      }
      x += 4 + len;
    }
    const auto lh = a.read(local, 30, name);
    if (le(lh.data(), 4) != kLocalSig) a.corrupt("damaged entry header for '" + name + "'");
    const std::uint64_t local_name_len = le(&lh[26], 2);
    // Readers differ in which header they trust; both must say the same.
    if (local_name_len != name_len ||
        a.read(local + 30, local_name_len, name) !=
            std::vector<unsigned char>(raw_name.begin(), raw_name.end()) ||
        le(&lh[8], 2) != method)
      a.corrupt("entry '" + name + "': its local header disagrees with the zip directory");
    // Without a trailing data descriptor (flag bit 3) the local header
    // repeats CRC and sizes; a reader trusting it must see the same values.
    const auto flags = le(&lh[6], 2);
    const auto lcomp = le(&lh[18], 4), luncomp = le(&lh[22], 4);
    if (!(flags & 0x8) && (le(&lh[14], 4) != crc || (lcomp != 0xFFFFFFFF && lcomp != comp) ||
                           (luncomp != 0xFFFFFFFF && luncomp != uncomp)))
      a.corrupt("entry '" + name + "': its local header disagrees with the zip directory");
    if (flags & 0x1) a.corrupt("entry '" + name + "' is encrypted");
    const std::uint64_t data = local + 30 + local_name_len + le(&lh[28], 2);
    if (method == kStored) {
      if (comp != uncomp) a.corrupt("inconsistent sizes for '" + name + "'");
      if (a.crc_of_stored(data, comp, name) != crc)
        a.corrupt("checksum mismatch in '" + name + "'");
    } else if (method == kDeflated) {
      a.check_deflated(data, comp, uncomp, crc, name);
    } else {
      a.corrupt("entry '" + name + "' uses compression method " + std::to_string(method) +
                " (only stored and deflated entries can be checked)");
    }
    names.push_back(raw_name);
    pos += 46 + name_len + extra_len + comment_len;
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
