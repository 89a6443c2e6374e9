// openLogFile and PidFile: O_NOFOLLOW opens, then fstat of what was opened.
#include "proxy/common/written_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mcring::common {
namespace {

std::string openError(const char* what, const std::string& path, int err) {
  if (err == ELOOP) {
    return std::string(what) + " '" + path +
           "' is a symbolic link; mcring does not write through one (give the file it points "
           "to, or another path)";
  }
  return std::string("cannot open ") + what + " '" + path + "': " + std::strerror(err);
}

}  // namespace

int openLogFile(const std::string& path, std::string* error) {
  // O_NONBLOCK for the open only: a FIFO with no reader is refused (ENXIO) instead of hanging.
  const int fd =
      ::open(path.c_str(),
             O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0666);
  if (fd < 0) {
    *error = openError("log file", path, errno);
    return -1;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode))) {
    *error = "log file '" + path + "' is not a regular file";
    ::close(fd);
    return -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

PidFile::~PidFile() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

bool PidFile::open(const std::string& path, std::string* error) {
  path_ = path;
  const int flags = O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
  // Created here, or left by an earlier run (or another instance): tell which.
  fd_ = ::open(path.c_str(), flags | O_CREAT | O_EXCL, 0644);
  created_ = fd_ >= 0;
  if (fd_ < 0 && errno == EEXIST) {
    fd_ = ::open(path.c_str(), flags);
  }
  if (fd_ < 0) {
    *error = openError("pid file", path, errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    *error = "pid file '" + path + "' is not a regular file";
  } else if (st.st_nlink > 1) {
    *error = "pid file '" + path + "' has other hard links; mcring does not overwrite it";
  } else {
    return true;
  }
  ::close(fd_);
  fd_ = -1;
  return false;
}

bool PidFile::write(pid_t pid, std::string* error) {
  const std::string text = std::to_string(pid) + "\n";
  if (::ftruncate(fd_, 0) != 0 ||
      ::pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    *error = "cannot write pid file '" + path_ + "': " + std::strerror(errno);
    return false;
  }
  return true;
}

void PidFile::remove(bool started) {
  if (fd_ < 0) {
    return;
  }
  ::close(fd_);
  fd_ = -1;
  if (started || created_) {
    ::unlink(path_.c_str());
  }
}

}  // namespace mcring::common
