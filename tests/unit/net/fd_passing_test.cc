// net::sendWithFds / receiveWithFds / listeningAddress over a real socketpair: a listening socket
// passed in a message is the same socket on the other side (it accepts what connects to the
// address), the tag arrives, a closed peer and a timeout are errors, and only listening stream
// sockets have a listening address.
#include "proxy/net/fd_passing.h"

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace mcring::net {
namespace {

int loopbackListener() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  REQUIRE(::listen(fd, 8) == 0);
  return fd;
}

TEST_CASE("a listening socket passed over SCM_RIGHTS keeps its address and accepts") {
  int pair[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) == 0);
  const int listener = loopbackListener();
  auto before = listeningAddress(listener);
  REQUIRE(before.has_value());
  std::string error;
  REQUIRE(sendWithFds(pair[0], "listeners", {listener}, &error));
  REQUIRE(sendWithFds(pair[0], "end", {}, &error));
  ::close(listener);  // the copy in flight keeps the socket open

  std::string tag;
  std::vector<int> fds;
  REQUIRE(receiveWithFds(pair[1], 1000, &tag, &fds, &error));
  CHECK(tag == "listeners");
  REQUIRE(fds.size() == 1);
  auto after = listeningAddress(fds[0]);
  REQUIRE(after.has_value());
  CHECK(after->toString() == before->toString());

  int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(::connect(client, after->get(), after->length) == 0);
  int accepted = ::accept(fds[0], nullptr, nullptr);
  CHECK(accepted >= 0);
  ::close(accepted);
  ::close(client);

  std::vector<int> none;
  REQUIRE(receiveWithFds(pair[1], 1000, &tag, &none, &error));
  CHECK(tag == "end");
  CHECK(none.empty());
  ::close(fds[0]);
  ::close(pair[0]);
  CHECK_FALSE(receiveWithFds(pair[1], 1000, &tag, &none, &error));
  CHECK(error.find("closed") != std::string::npos);
  ::close(pair[1]);
}

TEST_CASE("no message within the timeout is an error") {
  int pair[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) == 0);
  std::string tag;
  std::string error;
  std::vector<int> fds;
  CHECK_FALSE(receiveWithFds(pair[1], 20, &tag, &fds, &error));
  CHECK(error.find("no message") != std::string::npos);
  ::close(pair[0]);
  ::close(pair[1]);
}

TEST_CASE("only a listening stream socket has a listening address") {
  const int listener = loopbackListener();
  CHECK(listeningAddress(listener).has_value());
  const int unbound = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  CHECK_FALSE(listeningAddress(unbound).has_value());
  const int datagram = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  CHECK_FALSE(listeningAddress(datagram).has_value());
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  CHECK_FALSE(listeningAddress(pipe_fds[0]).has_value());
  for (int fd : {listener, unbound, datagram, pipe_fds[0], pipe_fds[1]}) {
    ::close(fd);
  }
}

}  // namespace
}  // namespace mcring::net
