#include "server/core/source_check.h"

#include <sys/stat.h>

#include <cerrno>

#include "common/file_check.h"

namespace torchinfer::server {

std::string file_source_problem(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 && (errno == ENOENT || errno == ENOTDIR)) return "";
  // The element's model files take the same path: a non-blocking open and
  // fstat, so the answer is about the file that was actually opened.
  try {
    FileDescriptor fd(open_regular_file(path, "file"));
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace torchinfer::server
