// FileWatcher: inotify on the config file's directory (and the directory of its resolved path).
#include "config/file_watcher.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace mcring::config {
namespace {

std::string dirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) {
    return ".";
  }
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

FileWatcher::~FileWatcher() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

bool FileWatcher::open(const std::string& config_path, std::string* error) {
  fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd_ < 0) {
    *error = std::string("inotify_init1: ") + std::strerror(errno);
    return false;
  }
  addWatch(dirOf(config_path));
  char resolved[PATH_MAX];
  if (realpath(config_path.c_str(), resolved) != nullptr) {
    addWatch(dirOf(resolved));
  }
  if (dirs_.empty()) {
    *error = "cannot watch the directory of " + config_path;
    return false;
  }
  return true;
}

void FileWatcher::addWatch(const std::string& dir) {
  if (std::find(dirs_.begin(), dirs_.end(), dir) != dirs_.end()) {
    return;
  }
  uint32_t mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE |
                  IN_ATTRIB | IN_MODIFY;
  if (inotify_add_watch(fd_, dir.c_str(), mask) >= 0) {
    dirs_.push_back(dir);
  }
}

bool FileWatcher::drain() {
  alignas(inotify_event) char buf[16 * 1024];
  bool any = false;
  for (;;) {
    ssize_t n = ::read(fd_, buf, sizeof(buf));
    if (n <= 0) {
      break;
    }
    any = true;
  }
  return any;
}

}  // namespace mcring::config
