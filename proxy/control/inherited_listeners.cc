// InheritedListeners: matching inherited sockets to listen addresses by their bound address.
#include "proxy/control/inherited_listeners.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <utility>

#include "proxy/common/log.h"
#include "proxy/net/fd_passing.h"

namespace mcring::core {

namespace {
constexpr int kSystemdFirstFd = 3;  // SD_LISTEN_FDS_START
}  // namespace

const char* originName(InheritedListeners::Origin origin) {
  return origin == InheritedListeners::Origin::Systemd ? "systemd" : "the upgraded process";
}

InheritedListeners::~InheritedListeners() {
  for (const Entry& e : entries_) {
    ::close(e.fd);
  }
}

InheritedListeners::InheritedListeners(InheritedListeners&& other) noexcept
    : entries_(std::move(other.entries_)) {
  other.entries_.clear();
}

InheritedListeners& InheritedListeners::operator=(InheritedListeners&& other) noexcept {
  if (this != &other) {
    for (const Entry& e : entries_) {
      ::close(e.fd);
    }
    entries_ = std::move(other.entries_);
    other.entries_.clear();
  }
  return *this;
}

void InheritedListeners::add(const std::vector<int>& fds, Origin origin) {
  for (int fd : fds) {
    auto address = net::listeningAddress(fd);
    if (!address) {
      MCRING_LOG(Warn, "inherited fd %d from %s is not a listening stream socket: closed", fd,
                 originName(origin));
      ::close(fd);
      continue;
    }
    MCRING_LOG(Info, "inherited fd %d from %s: listening on %s", fd, originName(origin),
               address->toString().c_str());
    entries_.push_back({fd, origin, address->toString()});
  }
}

size_t InheritedListeners::addFromSystemd() {
  const char* pid_text = std::getenv("LISTEN_PID");
  const char* fds_text = std::getenv("LISTEN_FDS");
  if (pid_text == nullptr || fds_text == nullptr) {
    return 0;
  }
  char* end = nullptr;
  const long pid = std::strtol(pid_text, &end, 10);
  const bool ours = *end == '\0' && pid == static_cast<long>(::getpid());
  const long count = std::strtol(fds_text, &end, 10);
  const bool valid = *end == '\0' && count > 0 && count < 4096;
  ::unsetenv("LISTEN_PID");
  ::unsetenv("LISTEN_FDS");
  ::unsetenv("LISTEN_FDNAMES");
  if (!ours || !valid) {
    if (!ours) {
      MCRING_LOG(Info, "LISTEN_FDS is for pid %s, not this process: ignored", pid_text);
    }
    return 0;
  }
  std::vector<int> fds;
  for (int fd = kSystemdFirstFd; fd < kSystemdFirstFd + count; ++fd) {
    fds.push_back(fd);
  }
  MCRING_LOG(Notice, "systemd socket activation: %ld socket(s) passed (fd %d..%ld)", count,
             kSystemdFirstFd, kSystemdFirstFd + count - 1);
  add(fds, Origin::Systemd);
  return fds.size();
}

InheritedListeners::Taken InheritedListeners::take(const common::SocketAddress& address) {
  const std::string wanted = address.toString();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->address == wanted) {
      Taken t{it->fd, it->origin};
      entries_.erase(it);
      return t;
    }
  }
  return {};
}

void InheritedListeners::closeUnused() {
  for (const Entry& e : entries_) {
    MCRING_LOG(Warn,
               "inherited socket %s (fd %d, from %s) matches no listen address: unused, closed",
               e.address.c_str(), e.fd, originName(e.origin));
    ::close(e.fd);
  }
  entries_.clear();
}

}  // namespace mcring::core
