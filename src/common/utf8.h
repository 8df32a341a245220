// Text from files the user supplies ends up in GstStructures, GError messages
// and JSON output, all of which require valid UTF-8.
#pragma once

#include <cstddef>
#include <string>

namespace torchinfer {

// True if `text` is well-formed UTF-8 (no overlongs, surrogates or code
// points past U+10FFFF). On false, *bad_offset is the first bad byte.
bool is_valid_utf8(const std::string& text, std::size_t* bad_offset = nullptr);

// `text` with every byte that is not part of valid UTF-8 written as \xNN and
// control characters as spaces, cut to `max_chars` bytes (with "..."): safe
// to quote foreign text inside an error message.
std::string printable(const std::string& text, std::size_t max_chars = 80);

}  // namespace torchinfer
