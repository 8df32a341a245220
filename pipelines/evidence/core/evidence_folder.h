// The evidence folder, opened once (O_DIRECTORY | O_NOFOLLOW) when the store
// starts: every file is then made, renamed and deleted relative to that
// descriptor (openat, renameat, unlinkat), so a folder replaced by a
// symbolic link (or moved) after the start never sends a snapshot, a clip or
// retention's deletions anywhere else. replaced() says when the path no
// longer names the opened folder: the store then refuses its files and
// counts them (written into the old folder, their paths would lie).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace torchinfer::evidence {

class EvidenceFolder {
 public:
  // Made if missing (mode 0750); refused (Error(kConfigInvalid) naming the
  // folder and the fix) when it is a symbolic link, not a folder, or not
  // writable. A relative path is taken from the working directory.
  explicit EvidenceFolder(const std::string& given);
  ~EvidenceFolder();
  EvidenceFolder(const EvidenceFolder&) = delete;
  EvidenceFolder& operator=(const EvidenceFolder&) = delete;

  const std::string& path() const { return path_; }  // absolute, no trailing '/'
  // "" while path() still names the folder opened at the start, else why
  // not (replaced by a symbolic link or another folder; strerror when gone).
  std::string replaced() const;

  // A new file `name` in the folder, for writing (0640; never follows a
  // link; fails if it exists): its descriptor, or -1 with errno set.
  int create(const std::string& name) const;
  // 0 or an errno value.
  int rename(const std::string& from, const std::string& to) const;
  // A file written elsewhere (an absolute path) moved in as `name`.
  int move_in(const std::string& outside, const std::string& name) const;
  void remove(const std::string& name) const;
  // Size of a regular file (0 for anything else or a missing one).
  std::uint64_t size(const std::string& name) const;
  std::vector<std::string> names() const;

 private:
  std::string path_;
  int fd_ = -1;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

}  // namespace torchinfer::evidence
