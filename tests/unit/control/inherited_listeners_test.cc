// InheritedListeners: inherited sockets are matched to listen addresses by the address they are
// bound to, each taken once; what is not a listening socket is closed at once, what nobody took
// is closed by closeUnused.
#include "proxy/control/inherited_listeners.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace mcring::core {
namespace {

int loopbackListener(uint16_t* port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  REQUIRE(::listen(fd, 8) == 0);
  socklen_t len = sizeof(a);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  *port = ntohs(a.sin_port);
  return fd;
}

bool isOpen(int fd) {
  return ::fcntl(fd, F_GETFD) != -1;
}

TEST_CASE("inherited sockets are taken by the address they are bound to, once") {
  uint16_t port_a = 0;
  uint16_t port_b = 0;
  const int a = loopbackListener(&port_a);
  const int b = loopbackListener(&port_b);
  const int not_listening = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  InheritedListeners inherited;
  inherited.add({a, b, not_listening}, InheritedListeners::Origin::Upgrade);
  CHECK_FALSE(isOpen(not_listening));  // refused and closed at once

  std::string error;
  auto address_b = common::SocketAddress::resolve("127.0.0.1", port_b, &error);
  REQUIRE(address_b.has_value());
  InheritedListeners::Taken taken = inherited.take(*address_b);
  CHECK(taken.fd == b);
  CHECK(taken.origin == InheritedListeners::Origin::Upgrade);
  CHECK(inherited.take(*address_b).fd == -1);  // once

  auto elsewhere = common::SocketAddress::resolve("127.0.0.2", port_a, &error);
  REQUIRE(elsewhere.has_value());
  CHECK(inherited.take(*elsewhere).fd == -1);  // same port, another address

  CHECK_FALSE(inherited.empty());
  inherited.closeUnused();
  CHECK(inherited.empty());
  CHECK_FALSE(isOpen(a));
  CHECK(isOpen(b));  // the caller's now
  ::close(b);
}

TEST_CASE("systemd's variables for another process are ignored and removed") {
  ::setenv("LISTEN_PID", "1", 1);
  ::setenv("LISTEN_FDS", "2", 1);
  InheritedListeners inherited;
  CHECK(inherited.addFromSystemd() == 0);
  CHECK(inherited.empty());
  CHECK(std::getenv("LISTEN_PID") == nullptr);
  CHECK(std::getenv("LISTEN_FDS") == nullptr);
}

}  // namespace
}  // namespace mcring::core
