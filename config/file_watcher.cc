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
  path_ = config_path;
  refresh();
  if (dirs_.empty()) {
    *error = "cannot watch the directory of " + config_path;
    return false;
  }
  return true;
}

void FileWatcher::setExtraFiles(std::vector<std::string> paths) {
  extra_ = std::move(paths);
  if (fd_ >= 0) {
    refresh();
  }
}

void FileWatcher::refresh() {
  if (std::find(names_.begin(), names_.end(), "..data") == names_.end()) {
    names_.push_back("..data");  // Kubernetes ConfigMap (and Secret) projection swaps this symlink
  }
  follow(path_);
  for (const std::string& p : extra_) {
    follow(p);
  }
}

void FileWatcher::follow(const std::string& path) {
  auto addName = [this](const std::string& n) {
    if (std::find(names_.begin(), names_.end(), n) == names_.end()) {
      names_.push_back(n);
    }
  };
  // Follow the symlink chain by hand, so that every link on the way is watched by name.
  std::string p = path;
  for (int hops = 0; hops < 16; ++hops) {
    addWatch(dirOf(p));
    size_t slash = p.rfind('/');
    addName(slash == std::string::npos ? p : p.substr(slash + 1));
    char target[PATH_MAX];
    ssize_t n = readlink(p.c_str(), target, sizeof(target) - 1);
    if (n <= 0) {
      break;
    }
    target[n] = '\0';
    std::string t(target);
    p = (!t.empty() && t[0] == '/') ? t : dirOf(p) + "/" + t;
  }
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) != nullptr) {
    std::string r(resolved);
    addWatch(dirOf(r));
    addName(r.substr(r.rfind('/') + 1));
  }
}

void FileWatcher::addWatch(const std::string& dir) {
  if (std::find(dirs_.begin(), dirs_.end(), dir) != dirs_.end()) {
    return;
  }
  uint32_t mask =
      IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB | IN_MODIFY;
  if (inotify_add_watch(fd_, dir.c_str(), mask) >= 0) {
    dirs_.push_back(dir);
  }
}

bool FileWatcher::drain() {
  alignas(inotify_event) char buf[16 * 1024];
  bool relevant = false;
  for (;;) {
    ssize_t n = ::read(fd_, buf, sizeof(buf));
    if (n <= 0) {
      break;
    }
    for (ssize_t off = 0; off < n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_Q_OVERFLOW)) {
        relevant = true;
        continue;
      }
      std::string name = ev->len > 0 ? std::string(ev->name) : std::string();
      if (std::find(names_.begin(), names_.end(), name) != names_.end()) {
        relevant = true;
      }
    }
  }
  if (relevant) {
    refresh();  // a link may now point somewhere new
  }
  return relevant;
}

}  // namespace mcring::config
