// Listening sockets this process did not open: handed over by the process it upgrades
// (upgrade.h), or passed by systemd's socket activation (LISTEN_FDS). Each is matched to a
// configured listen address (a pool's listen or tls_listen, or the admin endpoint) by the
// address it is bound to; those no address claims are logged and closed once the proxy started.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "proxy/common/socket_address.h"

namespace mcring::core {

class InheritedListeners {
 public:
  enum class Origin { Upgrade, Systemd };

  InheritedListeners() = default;
  ~InheritedListeners();
  InheritedListeners(InheritedListeners&& other) noexcept;
  InheritedListeners& operator=(InheritedListeners&& other) noexcept;
  InheritedListeners(const InheritedListeners&) = delete;
  InheritedListeners& operator=(const InheritedListeners&) = delete;

  // Takes the descriptors; one that is not a listening stream socket is logged and closed.
  void add(const std::vector<int>& fds, Origin origin);
  // systemd: when LISTEN_PID is this process, the LISTEN_FDS descriptors from 3. The variables
  // are removed from the environment (a process this one starts must not take them for its
  // own). Returns how many were taken.
  size_t addFromSystemd();

  struct Taken {
    int fd = -1;  // -1: nothing inherited is bound to that address
    Origin origin = Origin::Upgrade;
  };
  // The inherited socket bound to `address`, now the caller's.
  Taken take(const common::SocketAddress& address);
  // Logs and closes every socket nobody took.
  void closeUnused();
  bool empty() const { return entries_.empty(); }

 private:
  struct Entry {
    int fd;
    Origin origin;
    std::string address;
  };
  std::vector<Entry> entries_;
};

const char* originName(InheritedListeners::Origin origin);

}  // namespace mcring::core
