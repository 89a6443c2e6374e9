// SocketAddress: resolution and printing.
#include "proxy/common/socket_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <cstring>

namespace mcring::common {

bool SocketAddress::isLoopback() const {
  if (storage.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&storage);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (storage.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&storage);
    return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
  }
  return storage.ss_family == AF_UNIX;
}

std::string SocketAddress::toString() const {
  char host[INET6_ADDRSTRLEN] = {0};
  if (storage.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&storage);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (storage.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&storage);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  if (storage.ss_family == AF_UNIX) {
    return reinterpret_cast<const sockaddr_un*>(&storage)->sun_path;
  }
  return "?";
}

std::optional<SocketAddress> SocketAddress::resolve(const std::string& host, uint16_t port,
                                                    std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string h = host;
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') {
    h = h.substr(1, h.size() - 2);
  }
  int rc = getaddrinfo(h.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    if (error != nullptr) {
      *error = "cannot resolve '" + host + "': " + gai_strerror(rc);
    }
    return std::nullopt;
  }
  SocketAddress a;
  std::memcpy(&a.storage, res->ai_addr, res->ai_addrlen);
  a.length = res->ai_addrlen;
  freeaddrinfo(res);
  return a;
}

std::optional<SocketAddress> SocketAddress::unixPath(const std::string& path, std::string* error) {
  SocketAddress a;
  auto* un = reinterpret_cast<sockaddr_un*>(&a.storage);
  if (path.size() >= sizeof(un->sun_path)) {
    if (error != nullptr) {
      *error = "unix socket path too long: " + path;
    }
    return std::nullopt;
  }
  un->sun_family = AF_UNIX;
  std::memcpy(un->sun_path, path.c_str(), path.size() + 1);
  a.length = sizeof(sockaddr_un);
  return a;
}

}  // namespace mcring::common
