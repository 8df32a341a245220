// The bearer token of --token-file. It travels in an HTTP header, so only
// bytes a header can carry make a token a client can send: anything else
// (a NUL, a control character, UTF-8) would start a server no request can
// unlock.
#pragma once

#include <string>

namespace torchinfer::server {

// The token in `bytes` (the file's content; surrounding blanks and line
// ends dropped). Throws Error(kConfigInvalid) naming `path` when it is empty,
// has more than one word, or holds a byte other than printable ASCII (the
// byte and its offset named).
std::string parse_token(const std::string& bytes, const std::string& path);

}  // namespace torchinfer::server
