#include "common/zip_check.h"

#include <sys/stat.h>
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <vector>

#include "common/error.h"

namespace torchinfer {
namespace {

constexpr std::uint32_t kEocdSig = 0x06054b50;
constexpr std::uint32_t kZip64LocatorSig = 0x07064b50;
constexpr std::uint32_t kZip64EocdSig = 0x06064b50;
constexpr std::uint32_t kCentralSig = 0x02014b50;
constexpr std::uint32_t kLocalSig = 0x04034b50;

std::uint64_t le(const unsigned char* p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

class Archive {
 public:
  explicit Archive(const std::string& path) : path_(path), in_(path, std::ios::binary) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0)
      throw Error(ErrorKind::kNotFound, "Model file '" + path + "' not found");
    if (!S_ISREG(st.st_mode))
      throw Error(ErrorKind::kNotFound, "Model path '" + path + "' is not a file");
    if (!in_)
      throw Error(ErrorKind::kNotFound, "Model file '" + path + "' cannot be read (permissions?)");
    in_.seekg(0, std::ios::end);
    size_ = static_cast<std::uint64_t>(in_.tellg());
  }

  [[noreturn]] void corrupt(const std::string& why) const {
    throw Error(ErrorKind::kModelInvalid,
                "Model file '" + path_ + "' is corrupt or not a TorchScript archive: " + why);
  }

  std::vector<unsigned char> read(std::uint64_t offset, std::uint64_t n) {
    if (offset > size_ || n > size_ - offset)
      corrupt("truncated (an entry points past the end of the file)");
    std::vector<unsigned char> buf(n);
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(n));
    if (!in_) corrupt("read error");
    return buf;
  }

  std::uint32_t crc_of(std::uint64_t offset, std::uint64_t n) {
    if (offset > size_ || n > size_ - offset)
      corrupt("truncated (an entry points past the end of the file)");
    in_.seekg(static_cast<std::streamoff>(offset));
    std::vector<char> buf(1 << 20);
    uLong crc = crc32(0L, Z_NULL, 0);
    while (n > 0) {
      const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(n, buf.size()));
      in_.read(buf.data(), static_cast<std::streamsize>(chunk));
      if (!in_) corrupt("read error");
      crc = crc32(crc, reinterpret_cast<const Bytef*>(buf.data()), static_cast<uInt>(chunk));
      n -= chunk;
    }
    return static_cast<std::uint32_t>(crc);
  }

  std::uint64_t size() const { return size_; }

 private:
  std::string path_;
  std::ifstream in_;
  std::uint64_t size_ = 0;
};

}  // namespace

void verify_zip_archive(const std::string& path) {
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
  if (eocd < 0) a.corrupt("no zip directory found (truncated or not a TorchScript file)");
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
    const std::string name(reinterpret_cast<const char*>(h + 46), name_len);
    // Zip64 extended sizes/offset, in the order the spec lists them.
    for (std::uint64_t x = 0; x + 4 <= extra_len;) {
      const unsigned char* ex = h + 46 + name_len + x;
      const auto id = le(ex, 2), len = le(ex + 2, 2);
      if (id == 0x0001) {
        std::uint64_t f = 4;
        if (uncomp == 0xFFFFFFFF && f + 8 <= 4 + len) uncomp = le(ex + f, 8), f += 8;
        if (comp == 0xFFFFFFFF && f + 8 <= 4 + len) comp = le(ex + f, 8), f += 8;
        if (local == 0xFFFFFFFF && f + 8 <= 4 + len) local = le(ex + f, 8);
      }
      x += 4 + len;
    }
    const auto lh = a.read(local, 30);
    if (le(lh.data(), 4) != kLocalSig) a.corrupt("damaged entry header for '" + name + "'");
    const std::uint64_t data = local + 30 + le(&lh[26], 2) + le(&lh[28], 2);
    // PyTorch stores entries uncompressed; others we can only bounds-check.
    if (method == 0) {
      if (comp != uncomp) a.corrupt("inconsistent sizes for '" + name + "'");
      if (a.crc_of(data, comp) != crc) a.corrupt("checksum mismatch in '" + name + "'");
    } else if (data > a.size() || comp > a.size() - data) {
      a.corrupt("truncated entry '" + name + "'");
    }
    pos += 46 + name_len + extra_len + comment_len;
  }
}

}  // namespace torchinfer
