// Reads a zip's central directory in tests that damage model files at exact
// places (a stored or deflated entry's data, a name, a header field). Only
// what well-formed TorchScript archives use: no zip64, no comment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace torchinfer::test {

// Little-endian fields of any byte container (std::string, std::vector<char>).
template <class Bytes>
std::uint32_t zip_u32(const Bytes& b, std::size_t p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[p + i]);
  return v;
}

template <class Bytes>
std::uint16_t zip_u16(const Bytes& b, std::size_t p) {
  return static_cast<std::uint16_t>(static_cast<unsigned char>(b[p]) |
                                    static_cast<unsigned char>(b[p + 1]) << 8);
}

struct ZipEntry {
  std::string name;
  std::size_t central = 0;  // its central directory record
  std::size_t local = 0;    // its local header
  std::size_t data = 0;     // its (compressed) data
  std::size_t comp = 0, uncomp = 0;
  int method = 0;
};

template <class Bytes>
std::vector<ZipEntry> zip_entries(const Bytes& z) {
  // A missing or unbuilt test model reads as no bytes: a test failure that
  // says so, not a walk off the buffer.
  if (z.size() < 22) throw std::runtime_error("not a zip archive (test model not built?)");
  std::size_t eocd = z.size() - 22;
  while (zip_u32(z, eocd) != 0x06054b50) {
    if (eocd == 0) throw std::runtime_error("no end of central directory");
    --eocd;
  }
  std::vector<ZipEntry> out;
  std::size_t p = zip_u32(z, eocd + 16);
  for (int n = zip_u16(z, eocd + 10); n > 0; --n) {
    ZipEntry e;
    e.central = p;
    e.method = zip_u16(z, p + 10);
    e.comp = zip_u32(z, p + 20);
    e.uncomp = zip_u32(z, p + 24);
    const std::size_t name_len = zip_u16(z, p + 28);
    e.name.assign(&z[p + 46], name_len);
    e.local = zip_u32(z, p + 42);
    e.data = e.local + 30 + zip_u16(z, e.local + 26) + zip_u16(z, e.local + 28);
    out.push_back(e);
    p += 46 + name_len + zip_u16(z, p + 30) + zip_u16(z, p + 32);
  }
  return out;
}

}  // namespace torchinfer::test
