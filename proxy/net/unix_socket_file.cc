// removeStaleSocket / removeOwnSocket: lstat, then unlink only a socket (as memcached does).
#include "proxy/net/unix_socket_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mcring::net {
namespace {

const char* kindOf(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return "a regular file";
    case S_IFDIR:
      return "a directory";
    case S_IFLNK:
      return "a symbolic link";
    case S_IFIFO:
      return "a FIFO";
    default:
      return "a device";
  }
}

}  // namespace

bool removeStaleSocket(const std::string& path, std::string* error) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return true;
    }
    *error = "cannot listen on " + path + ": " + std::strerror(errno);
    return false;
  }
  if (!S_ISSOCK(st.st_mode)) {
    *error = "cannot listen on " + path + ": " + kindOf(st.st_mode) +
             " is there, not a socket; mcring removes only a stale socket (remove it yourself, "
             "or choose another path)";
    return false;
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    *error =
        "cannot listen on " + path + ": cannot remove the stale socket: " + std::strerror(errno);
    return false;
  }
  return true;
}

void removeOwnSocket(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
    ::unlink(path.c_str());
  }
}

}  // namespace mcring::net
