// The files mcring writes besides sockets: its log (-o) and its pid file (-p). Neither is opened
// through a symbolic link (O_NOFOLLOW): in a directory others can write to, a link planted at the
// name would otherwise make mcring append to, or truncate, whatever file it points at.
#pragma once

#include <sys/types.h>

#include <string>

namespace mcring::common {

// Opens `path` for appending (created 0666 minus the umask if missing). Refuses a symlink, a
// directory and a FIFO; a regular file or a character device (/dev/null) is fine. -1 and
// *error (naming the file) on failure.
int openLogFile(const std::string& path, std::string* error);

// A pid file: opened (created if missing) before the proxy starts, so a bad path stops mcring
// before it binds anything; written once it runs; removed at exit.
class PidFile {
 public:
  PidFile() = default;
  ~PidFile();
  PidFile(const PidFile&) = delete;
  PidFile& operator=(const PidFile&) = delete;

  // Refuses a symlink, anything but a regular file, and a file with other hard links (it could
  // be someone else's file linked here).
  bool open(const std::string& path, std::string* error);
  // Replaces the file's content with the pid and a newline.
  bool write(pid_t pid, std::string* error);
  // Exit: removes the file. `started` false (the proxy did not start): removes it only if this
  // process created it, so the pid file of another instance that holds the port stays.
  void remove(bool started);

 private:
  std::string path_;
  int fd_ = -1;
  bool created_ = false;
};

}  // namespace mcring::common
