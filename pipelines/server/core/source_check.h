// A file:// camera's path is opened by filesrc inside a state change; a
// FIFO (or a device) there would block that open forever. Checked before
// a pipeline is built, without blocking.
#pragma once

#include <string>

namespace torchinfer::server {

// Empty when `path` may go to filesrc: a regular file, or nothing there (the
// camera then fails with filesrc's "not found", as a camera whose file
// disappears does). Otherwise why not, naming the path (a FIFO, a directory,
// a device, a socket, unreadable).
std::string file_source_problem(const std::string& path);

}  // namespace torchinfer::server
