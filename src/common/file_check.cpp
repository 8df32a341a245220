#include "common/file_check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace torchinfer {
namespace {

const char* type_name(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "a special file";
}

}  // namespace

FileDescriptor::~FileDescriptor() {
  if (fd_ >= 0) ::close(fd_);
}

int open_regular_file(const std::string& path, const std::string& what) {
  // O_NONBLOCK: open() of a FIFO without a writer returns at once instead of
  // waiting; fstat then tells it apart before anything reads from it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR)
      throw Error(ErrorKind::kNotFound, what + " '" + path + "' not found");
    throw Error(ErrorKind::kNotFound,
                what + " '" + path + "' cannot be opened: " + std::strerror(err));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw Error(ErrorKind::kNotFound,
                what + " '" + path + "' cannot be read: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorKind::kNotFound, what + " '" + path + "' is not a regular file (it is " +
                                          type_name(st.st_mode) + "); give the path of a file");
  }
  // Regular files never block; clear the flag so reads behave normally.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

int open_output_file(const std::string& path, const std::string& what) {
  // O_NONBLOCK: a FIFO nobody reads fails with ENXIO instead of holding
  // open() (and the caller's state change) until a reader comes.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int err = errno;
    struct stat st;
    // ENXIO is also a socket's answer: tell them apart.
    if (err == ENXIO && ::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode))
      throw Error(ErrorKind::kNotFound, what + " '" + path +
                                            "' is a FIFO (named pipe) that no process reads; "
                                            "start its reader first or give the path of a file");
    if (err == ENXIO && ::stat(path.c_str(), &st) == 0)
      throw Error(ErrorKind::kNotFound, what + " '" + path + "' cannot be written (it is " +
                                            type_name(st.st_mode) + "); give the path of a file");
    throw Error(ErrorKind::kNotFound,
                what + " '" + path + "' cannot be opened for writing: " + std::strerror(err));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw Error(ErrorKind::kNotFound,
                what + " '" + path + "' cannot be written: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorKind::kNotFound, what + " '" + path + "' cannot be written (it is " +
                                          type_name(st.st_mode) + "); give the path of a file");
  }
  // Writes then wait for a slow reader like any file would (back-pressure).
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

std::FILE* open_output_stream(const std::string& path, const std::string& what) {
  const int fd = open_output_file(path, what);
  std::FILE* f = ::fdopen(fd, "w");
  if (!f) {
    const int err = errno;
    ::close(fd);
    throw Error(ErrorKind::kNotFound,
                what + " '" + path + "' cannot be written: " + std::strerror(err));
  }
  return f;
}

void write_output_file(const std::string& path, const std::string& what, const std::string& bytes) {
  FileDescriptor fd(open_output_file(path, what));
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw Error(ErrorKind::kNotFound,
                  what + " '" + path + "' cannot be written: " + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
}

std::string read_regular_file(const std::string& path, const std::string& what,
                              std::size_t max_bytes) {
  FileDescriptor fd(open_regular_file(path, what));
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorKind::kNotFound,
                  what + " '" + path + "' cannot be read: " + std::strerror(errno));
    }
    if (n == 0) break;
    // Checked as it grows: a file still being appended to cannot run past it.
    if (out.size() + static_cast<std::size_t>(n) > max_bytes)
      throw Error(ErrorKind::kConfigInvalid, what + " '" + path + "' is larger than " +
                                                 std::to_string(max_bytes) +
                                                 " bytes; is it the right file?");
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

}  // namespace torchinfer
