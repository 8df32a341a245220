#include "common/utf8.h"

#include <cstdio>

namespace torchinfer {
namespace {

// Length of the valid UTF-8 sequence at text[i], or 0 if it is not one.
std::size_t sequence_length(const std::string& text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  std::size_t n;
  unsigned cp;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2, cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  const bool overlong = (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
  const bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
  if (overlong || surrogate || cp > 0x10FFFF) return 0;
  return n;
}

}  // namespace

bool is_valid_utf8(const std::string& text, std::size_t* bad_offset) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = sequence_length(text, i);
    if (n == 0) {
      if (bad_offset) *bad_offset = i;
      return false;
    }
    i += n;
  }
  return true;
}

std::string printable(const std::string& text, std::size_t max_chars) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    if (out.size() >= max_chars) {
      out += "...";
      break;
    }
    const std::size_t n = sequence_length(text, i);
    if (n == 0) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02X", static_cast<unsigned char>(text[i]));
      out += hex;
      ++i;
    } else if (n == 1 && static_cast<unsigned char>(text[i]) < 0x20) {
      out += ' ';
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  return out;
}

}  // namespace torchinfer
