#include "evidence/core/evidence_folder.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace torchinfer::evidence {
namespace {

[[noreturn]] void refuse(const std::string& dir, const std::string& what) {
  throw Error(ErrorKind::kConfigInvalid, "evidence dir '" + dir + "' " + what);
}

// mkdir -p with mode 0750 for the folders it makes (evidence may show
// people on the line: not for every local user).
void make_dirs(const std::string& dir) {
  std::string cur;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    cur = dir.substr(0, pos);
    if (cur.empty()) continue;
    if (::mkdir(cur.c_str(), 0750) != 0 && errno != EEXIST)
      refuse(dir, "cannot be created (" + cur + ": " + std::strerror(errno) +
                      "); name a folder this process can write");
  }
}

std::string absolute(const std::string& given) {
  if (given.empty())
    throw Error(ErrorKind::kConfigInvalid,
                "evidence dir is empty: name a folder for the snapshots and clips");
  std::string dir = given;
  if (dir[0] != '/') {
    char cwd[4096];
    if (!::getcwd(cwd, sizeof cwd)) refuse(given, "is relative: give an absolute path");
    dir = std::string(cwd) + "/" + dir;
  }
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

// The folder must be a real directory: a symbolic link could send the files
// (and retention's deletions) somewhere nobody meant.
void check_kind(const std::string& dir) {
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT)
      refuse(dir, std::string("cannot be read (") + std::strerror(errno) +
                      "); name a folder this process can write");
    make_dirs(dir);
    if (::lstat(dir.c_str(), &st) != 0)
      refuse(dir, std::string("cannot be created: ") + std::strerror(errno));
  }
  if (S_ISLNK(st.st_mode)) refuse(dir, "is a symbolic link; name the folder it points to itself");
  if (!S_ISDIR(st.st_mode))
    refuse(dir, "exists and is not a folder; name a folder (it is created if missing)");
}

}  // namespace

EvidenceFolder::EvidenceFolder(const std::string& given) : path_(absolute(given)) {
  check_kind(path_);
  // O_NOFOLLOW: a link swapped in since the check is refused, not followed.
  fd_ = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd_ < 0)
    refuse(path_, std::string("cannot be opened (") + std::strerror(errno) +
                      "); name a folder (not a symbolic link) this process can write");
  struct stat st;
  ::fstat(fd_, &st);
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  // Writing is the only test that also catches a read-only mount and root
  // on a folder it may not write.
  const std::string probe = ".torchinfer-write-probe-" + std::to_string(::getpid());
  const int p = create(probe);
  if (p < 0) {
    const int err = errno;
    ::close(fd_);
    refuse(path_, std::string("is not writable (") + std::strerror(err) +
                      "); name a folder this process can write");
  }
  ::close(p);
  remove(probe);
}

EvidenceFolder::~EvidenceFolder() {
  if (fd_ >= 0) ::close(fd_);
}

std::string EvidenceFolder::replaced() const {
  struct stat st;
  if (::lstat(path_.c_str(), &st) != 0) return std::strerror(errno);  // gone: ENOENT
  if (S_ISLNK(st.st_mode))
    return "the evidence folder was replaced by a symbolic link since the start; files are not "
           "written through it: put the folder back or restart with a folder";
  if (!S_ISDIR(st.st_mode) || st.st_dev != dev_ || st.st_ino != ino_)
    return "the evidence folder was replaced since the start; files are not written into the "
           "new one: put the folder back or restart";
  return {};
}

int EvidenceFolder::create(const std::string& name) const {
  return ::openat(fd_, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
}

int EvidenceFolder::rename(const std::string& from, const std::string& to) const {
  return ::renameat(fd_, from.c_str(), fd_, to.c_str()) == 0 ? 0 : errno;
}

int EvidenceFolder::move_in(const std::string& outside, const std::string& name) const {
  return ::renameat(AT_FDCWD, outside.c_str(), fd_, name.c_str()) == 0 ? 0 : errno;
}

void EvidenceFolder::remove(const std::string& name) const {
  ::unlinkat(fd_, name.c_str(), 0);
}

std::uint64_t EvidenceFolder::size(const std::string& name) const {
  struct stat st;
  return ::fstatat(fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)
             ? static_cast<std::uint64_t>(st.st_size)
             : 0;
}

std::vector<std::string> EvidenceFolder::names() const {
  std::vector<std::string> out;
  const int dup = ::openat(fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = dup >= 0 ? ::fdopendir(dup) : nullptr;
  if (!d) {
    if (dup >= 0) ::close(dup);
    return out;
  }
  while (dirent* ent = ::readdir(d)) {
    const std::string name = ent->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  ::closedir(d);
  return out;
}

}  // namespace torchinfer::evidence
