// net::SendBatch and EventLoop's batched flush over real loopback TCP sockets: each queued send's
// bytes arrive and its result says how many; a full socket answers at once (what fit, then
// -EAGAIN) instead of holding the batch; a reset peer is an error. Through the loop: a pass's
// outputs go out in one submission, a connection destroyed by an earlier result's handler is
// skipped, and what a full socket did not take follows through EPOLLOUT, in order.
#include "proxy/net/send_batch.h"

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "proxy/net/event_loop.h"
#include "proxy/net/tcp_connection.h"

namespace mcring::net {
namespace {

// io_uring may be switched off on a host (kernel.io_uring_disabled); then there is nothing to
// test, and mcring says so in its start-up line. Everywhere else it must open.
bool uringExpected() {
  std::ifstream f("/proc/sys/kernel/io_uring_disabled");
  int disabled = 0;
  return !(f >> disabled) || disabled == 0;
}

// A connected loopback TCP pair: {ours, peer}.
std::pair<int, int> tcpPair() {
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  REQUIRE(::listen(listener, 4) == 0);
  socklen_t len = sizeof(a);
  REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  int peer = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(::connect(peer, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  int ours = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  REQUIRE(ours >= 0);
  ::close(listener);
  return {ours, peer};
}

// Reads exactly n bytes from a blocking socket, waiting at most 10 s for each piece.
std::string readExactly(int fd, size_t n) {
  std::string got;
  while (got.size() < n) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10000) != 1) {
      break;
    }
    char buf[65536];
    ssize_t r = ::recv(fd, buf, std::min(sizeof(buf), n - got.size()), 0);
    if (r <= 0) {
      break;
    }
    got.append(buf, static_cast<size_t>(r));
  }
  return got;
}

bool readsEof(int fd) {
  pollfd p{fd, POLLIN, 0};
  char c;
  return ::poll(&p, 1, 10000) == 1 && ::recv(fd, &c, 1, 0) == 0;
}

TEST_CASE("a batch sends each queued send and reports what each took") {
  if (!uringExpected()) {
    MESSAGE("io_uring is disabled on this host");
    return;
  }
  std::string why;
  auto batch = SendBatch::open(&why);
  REQUIRE_MESSAGE(batch != nullptr, why);
  auto [a, pa] = tcpPair();
  auto [b, pb] = tcpPair();
  std::string one = "VALUE k 0 1\r\nx\r\nEND\r\n";
  std::string p1 = "get ", p2 = "k1 k2", p3 = "\r\n";
  iovec* v = batch->pieces();
  v[0] = {one.data(), one.size()};
  batch->add(a, 1);
  v = batch->pieces();
  v[0] = {p1.data(), p1.size()};
  v[1] = {p2.data(), p2.size()};
  v[2] = {p3.data(), p3.size()};
  batch->add(b, 3);
  CHECK(batch->size() == 2);
  batch->run();
  REQUIRE(batch->results().size() == 2);
  CHECK(batch->results()[0] == static_cast<int>(one.size()));
  CHECK(batch->results()[1] == static_cast<int>(p1.size() + p2.size() + p3.size()));
  CHECK(batch->size() == 0);
  CHECK(readExactly(pa, one.size()) == one);
  CHECK(readExactly(pb, 11) == "get k1 k2\r\n");
  for (int fd : {a, pa, b, pb}) {
    ::close(fd);
  }
}

TEST_CASE("a full socket answers at once: what fit, then -EAGAIN; a reset peer is an error") {
  if (!uringExpected()) {
    MESSAGE("io_uring is disabled on this host");
    return;
  }
  auto batch = SendBatch::open(nullptr);
  REQUIRE(batch != nullptr);
  auto [a, pa] = tcpPair();  // pa never reads
  const std::string big(8 << 20, 'v');
  iovec* v = batch->pieces();
  v[0] = {const_cast<char*>(big.data()), big.size()};
  batch->add(a, 1);
  batch->run();
  const int first = batch->results()[0];
  CHECK(first > 0);
  CHECK(first < static_cast<int>(big.size()));
  v = batch->pieces();
  v[0] = {const_cast<char*>(big.data()), big.size()};
  batch->add(a, 1);
  batch->run();
  CHECK(batch->results()[0] == -EAGAIN);

  auto [b, pb] = tcpPair();
  linger hard{1, 0};
  REQUIRE(::setsockopt(pb, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard)) == 0);
  ::close(pb);  // an RST
  pollfd p{b, POLLIN, 0};
  REQUIRE(::poll(&p, 1, 10000) == 1);  // the reset has arrived
  v = batch->pieces();
  std::string line = "get k\r\n";
  v[0] = {line.data(), line.size()};
  batch->add(b, 1);
  batch->run();
  const int r = batch->results()[0];
  CHECK((r == -ECONNRESET || r == -EPIPE));
  for (int fd : {a, pa, b}) {
    ::close(fd);
  }
}

// Records what the loop tells it; may destroy another connection when its output is written.
struct Probe : ConnectionHandler {
  void onReadable() override {}
  void onWritable() override {
    ++writable;
    if (victim != nullptr) {
      victim->reset();
      victim = nullptr;
    }
  }
  void onClosed(CloseReason, int) override { ++closed; }
  int writable = 0;
  int closed = 0;
  std::unique_ptr<TcpConnection>* victim = nullptr;
};

TEST_CASE(
    "a loop pass's outputs go out in one batch; one destroyed by another's handler is skipped") {
  if (!uringExpected()) {
    MESSAGE("io_uring is disabled on this host");
    return;
  }
  EventLoop loop;
  std::string why;
  REQUIRE_MESSAGE(loop.enableSendBatching(&why), why);
  constexpr int kConns = 8;
  std::vector<Probe> probes(kConns);
  std::vector<std::unique_ptr<TcpConnection>> conns;
  std::vector<int> peers;
  for (int i = 0; i < kConns; ++i) {
    auto [ours, peer] = tcpPair();
    conns.push_back(TcpConnection::adopt(loop, ours, &probes[i]));
    peers.push_back(peer);
  }
  probes[0].victim = &conns[5];  // written before it, destroys it before its result is taken
  for (int i = 0; i < kConns; ++i) {
    conns[i]->output().append("reply " + std::to_string(i) + "\r\n");
  }
  loop.runPending();
  CHECK(loop.batchedSends() == kConns);
  CHECK(conns[5] == nullptr);
  for (int i = 0; i < kConns; ++i) {
    const std::string want = "reply " + std::to_string(i) + "\r\n";
    CHECK(readExactly(peers[i], want.size()) == want);  // #5's went out before it was destroyed
    if (i != 5) {
      CHECK(probes[i].writable == 1);
      CHECK(conns[i]->output().empty());
    }
  }
  CHECK(probes[5].writable == 0);
  CHECK(readsEof(peers[5]));
  for (int fd : peers) {
    ::close(fd);
  }
}

TEST_CASE("what a full socket did not take in the batch follows through EPOLLOUT, in order") {
  if (!uringExpected()) {
    MESSAGE("io_uring is disabled on this host");
    return;
  }
  EventLoop loop;
  REQUIRE(loop.enableSendBatching(nullptr));
  Probe slow_probe, other_probe;
  auto [s, ps] = tcpPair();
  auto [o, po] = tcpPair();
  auto slow = TcpConnection::adopt(loop, s, &slow_probe);
  auto other = TcpConnection::adopt(loop, o, &other_probe);
  std::string big;
  for (int i = 0; big.size() < (6u << 20); ++i) {
    big += "VALUE key" + std::to_string(i) + " 0 8\r\n01234567\r\n";
  }
  slow->output().append(big);  // far past what the socket buffers hold
  other->output().append("END\r\n");
  loop.runPending();
  CHECK(loop.batchedSends() == 2);
  CHECK(readExactly(po, 5) == "END\r\n");
  CHECK(slow->output().size() > 0);  // waits for room
  std::string got;
  for (int rounds = 0; got.size() < big.size() && rounds < 100000; ++rounds) {
    pollfd p{ps, POLLIN, 0};
    if (::poll(&p, 1, 10000) != 1) {
      break;
    }
    char buf[1 << 16];
    ssize_t r = ::recv(ps, buf, sizeof(buf), MSG_DONTWAIT);
    if (r > 0) {
      got.append(buf, static_cast<size_t>(r));
    }
    loop.runPending();  // EPOLLOUT: the rest of the output
  }
  CHECK(got.size() == big.size());
  CHECK(got == big);
  CHECK(slow->output().empty());
  CHECK(slow_probe.writable >= 1);
  for (int fd : {ps, po}) {
    ::close(fd);
  }
}

}  // namespace
}  // namespace mcring::net
