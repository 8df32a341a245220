// TorchScript files are zip archives, and libtorch 1.13 does not verify the
// entries' CRC-32: a flipped bit in the weights loads "fine" and silently
// changes every result. Checking the archive first turns that into an error.
#pragma once

#include <string>

namespace torchinfer {

// Throws Error(kNotFound) if unreadable, Error(kModelInvalid) naming the file
// and the damaged entry if the archive is truncated or an entry's CRC differs.
void verify_zip_archive(const std::string& path);

}  // namespace torchinfer
