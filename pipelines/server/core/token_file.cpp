#include "server/core/token_file.h"

#include <cstdio>

#include "common/error.h"

namespace torchinfer::server {

std::string parse_token(const std::string& bytes, const std::string& path) {
  const std::string blank = " \t\r\n";
  const std::size_t first = bytes.find_first_not_of(blank);
  const std::size_t last = bytes.find_last_not_of(blank);
  const std::string token = first == std::string::npos ? "" : bytes.substr(first, last - first + 1);
  const std::string fix =
      "; the file must hold one token of printable ASCII, e.g. from "
      "`openssl rand -hex 32`";
  if (token.empty())
    throw Error(ErrorKind::kConfigInvalid, "token file '" + path + "': empty" + fix);
  for (std::size_t i = 0; i < token.size(); ++i) {
    const auto c = static_cast<unsigned char>(token[i]);
    if (c > 0x20 && c < 0x7f) continue;
    char what[64];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
      std::snprintf(what, sizeof what, "a blank inside the token (byte %zu)", first + i);
    else
      std::snprintf(what, sizeof what, "byte %zu is 0x%02X%s, not printable ASCII", first + i, c,
                    c == 0 ? " (NUL)" : "");
    throw Error(ErrorKind::kConfigInvalid, "token file '" + path + "': " + what + fix);
  }
  return token;
}

}  // namespace torchinfer::server
