// Opening a file the user named must never block: a FIFO (or a character
// device) given as model, sidecar or labels would hang the element's start
// forever inside open() or read(). Everything opens through here.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

namespace torchinfer {

// Opens `path` read-only without blocking and checks it is a regular file.
// Returns the descriptor (O_CLOEXEC; the caller closes it). Throws
// Error(kNotFound) naming `what` and the path: missing, unreadable, or "not a
// regular file" (directory, FIFO, device, socket).
int open_regular_file(const std::string& path, const std::string& what);

// Opens `path` for writing (created, truncated) without blocking: a FIFO
// nobody reads yet would otherwise hold open() forever. Regular files,
// character devices (/dev/null, /dev/stdout) and a FIFO with a reader are
// written; a FIFO without a reader, a directory, a socket or a block device
// is Error(kNotFound) naming `what`, the path, what it is and what to do.
// Returns the descriptor in blocking mode (O_CLOEXEC; the caller closes it).
int open_output_file(const std::string& path, const std::string& what);

// open_output_file() as a stdio stream (mode "w"); the caller fcloses it.
std::FILE* open_output_stream(const std::string& path, const std::string& what);

// Writes all of `bytes` to `path` through open_output_file(); a short write
// is Error(kNotFound) naming `what`, the path and the system's reason.
void write_output_file(const std::string& path, const std::string& what, const std::string& bytes);

// Whole file as bytes, at most `max_bytes` (a larger one is
// Error(kConfigInvalid) saying so: these are small text files).
std::string read_regular_file(const std::string& path, const std::string& what,
                              std::size_t max_bytes);

// RAII for a descriptor from open_regular_file.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor();
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace torchinfer
