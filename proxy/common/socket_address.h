// A resolved socket address (IPv4, IPv6 or unix path), resolved once off the hot path.
#pragma once

#include <sys/socket.h>

#include <optional>
#include <string>

namespace mcring::common {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
  bool isUnix() const { return storage.ss_family == AF_UNIX; }
  bool isLoopback() const;
  std::string toString() const;

  // host:port with a numeric or resolvable host (getaddrinfo; blocking, so never on a worker's
  // request path). Returns nullopt and sets *error on failure.
  static std::optional<SocketAddress> resolve(const std::string& host, uint16_t port,
                                              std::string* error);
  static std::optional<SocketAddress> unixPath(const std::string& path, std::string* error);
};

}  // namespace mcring::common
