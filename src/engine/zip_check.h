// TorchScript files are zip archives, and libtorch 1.13 does not verify the
// entries' CRC-32: a flipped bit in the weights loads "fine" and silently
// changes every result. Checking the archive first turns that into an error.
#pragma once

#include <string>
#include <vector>

namespace torchinfer {

// Verifies every entry through libzip: the archive opened with
// ZIP_CHECKCONS (each local header must agree with the zip directory), each
// entry read to its end (stored ones checked by CRC-32, deflated ones
// inflated in chunks and checked by CRC-32 and size); any other compression
// method, and encrypted entries, are refused.
// Returns the entry names in directory order. Throws Error(kNotFound) if the
// file is missing, unreadable or not a regular file (never blocks on a FIFO),
// Error(kModelInvalid) naming the file and the damaged entry otherwise.
std::vector<std::string> verify_zip_archive(const std::string& path);

// Given a verified archive's entries, refuses what is a zip but not a
// TorchScript file (a torch.save() pickle, no `version` record) with a
// sentence saying how to make one. Error(kModelInvalid).
void check_torchscript_layout(const std::string& path, const std::vector<std::string>& entries);

}  // namespace torchinfer
