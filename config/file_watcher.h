// Notices changes to the config file with inotify on its directory (and its symlink target's).
//
// Watching the directory rather than the file sees what editors and Kubernetes actually do:
// rename a new file over the old one, or swap the ConfigMap's `..data` symlink. Any event is
// only a hint; the proxy debounces, re-reads, and skips files whose digest did not change.
// No libevent here: the proxy polls fd() with its loop.
#pragma once

#include <string>
#include <vector>

namespace mcring::config {

class FileWatcher {
 public:
  FileWatcher() = default;
  ~FileWatcher();
  FileWatcher(const FileWatcher&) = delete;
  FileWatcher& operator=(const FileWatcher&) = delete;

  // Starts watching; false (and *error) if inotify is unavailable.
  bool open(const std::string& config_path, std::string* error);
  int fd() const { return fd_; }
  // Also watch these files, the same way (the certificates, keys and credentials files the
  // config names: renewing one reloads). Replaces the previous list; watches are only added.
  void setExtraFiles(std::vector<std::string> paths);
  // Reads pending events; true if any may concern the config file: an event on a name along
  // the path to it (the file, a symlink on the way, the kubelet's `..data`), or a watched
  // directory itself going away. Events on other files (a log file next to the config) are
  // ignored, so they cannot cause reloads.
  bool drain();

 private:
  void follow(const std::string& path);
  // Resolves the paths again (a symlink may have been repointed into another directory) and
  // watches every directory and name on the way.
  void refresh();
  void addWatch(const std::string& dir);
  int fd_ = -1;
  std::string path_;
  std::vector<std::string> extra_;
  std::vector<std::string> dirs_;
  std::vector<std::string> names_;  // basenames that matter
};

}  // namespace mcring::config
