// net::IoBatch and EventLoop's batched reads and writes over real loopback TCP sockets: each
// queued send's bytes arrive and its result says how many; a full socket answers at once (what
// fit, then -EAGAIN) instead of holding the batch; a reset peer is an error. Through the loop: a
// pass's outputs go out in one submission, a connection destroyed by an earlier result's handler
// is skipped, and what a full socket did not take follows through EPOLLOUT, in order; a pass's
// readable sockets are read in one submission, each handler sees its bytes, EOF and resets are
// reported, a read that fills its room reads on, a connection destroyed or stopped by another's
// handler is left alone, and more sockets than a batch holds are all read.
#include "proxy/net/io_batch.h"

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
#include <thread>
#include <vector>

#include "proxy/net/event_loop.h"
#include "proxy/net/tcp_connection.h"

namespace mcring::net {
namespace {

// io_uring may be switched off on a host (kernel.io_uring_disabled); then there is nothing to
// test (every case is skipped), and mcring says so in its start-up line. Everywhere else it must
// open.
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

TEST_CASE("a batch sends each queued send and reports what each took" *
          doctest::skip(!uringExpected())) {
  std::string why;
  auto batch = IoBatch::open(&why);
  REQUIRE_MESSAGE(batch != nullptr, why);
  auto [a, pa] = tcpPair();
  auto [b, pb] = tcpPair();
  std::string one = "VALUE k 0 1\r\nx\r\nEND\r\n";
  std::string p1 = "get ", p2 = "k1 k2", p3 = "\r\n";
  iovec* v = batch->pieces();
  v[0] = {one.data(), one.size()};
  batch->add(IoBatch::Op::Send, a, 1);
  v = batch->pieces();
  v[0] = {p1.data(), p1.size()};
  v[1] = {p2.data(), p2.size()};
  v[2] = {p3.data(), p3.size()};
  batch->add(IoBatch::Op::Send, b, 3);
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

TEST_CASE("a full socket answers at once: what fit, then -EAGAIN; a reset peer is an error" *
          doctest::skip(!uringExpected())) {
  auto batch = IoBatch::open(nullptr);
  REQUIRE(batch != nullptr);
  auto [a, pa] = tcpPair();  // pa never reads
  const std::string big(8 << 20, 'v');
  iovec* v = batch->pieces();
  v[0] = {const_cast<char*>(big.data()), big.size()};
  batch->add(IoBatch::Op::Send, a, 1);
  batch->run();
  const int first = batch->results()[0];
  CHECK(first > 0);
  CHECK(first < static_cast<int>(big.size()));
  v = batch->pieces();
  v[0] = {const_cast<char*>(big.data()), big.size()};
  batch->add(IoBatch::Op::Send, a, 1);
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
  batch->add(IoBatch::Op::Send, b, 1);
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
    "a loop pass's outputs go out in one batch; one destroyed by another's handler is skipped" *
    doctest::skip(!uringExpected())) {
  EventLoop loop;
  std::string why;
  REQUIRE_MESSAGE(loop.enableIoBatching(&why), why);
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

TEST_CASE("what a full socket did not take in the batch follows through EPOLLOUT, in order" *
          doctest::skip(!uringExpected())) {
  EventLoop loop;
  REQUIRE(loop.enableIoBatching(nullptr));
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

// Keeps what it reads; may destroy or stop another connection when it reads.
struct Reader : ConnectionHandler {
  void onReadable() override {
    got += std::string(conn->input().contiguous(conn->input().size()));
    conn->input().drain(conn->input().size());
    ++reads;
    if (victim != nullptr) {
      victim->reset();
      victim = nullptr;
    }
    if (stop != nullptr) {
      stop->enableReading(false);
      stop = nullptr;
    }
  }
  void onClosed(CloseReason why, int) override { closed.push_back(why); }
  TcpConnection* conn = nullptr;
  std::string got;
  int reads = 0;
  std::vector<CloseReason> closed;
  std::unique_ptr<TcpConnection>* victim = nullptr;
  TcpConnection* stop = nullptr;
};

struct Readers {
  explicit Readers(EventLoop& loop, int n) : handlers(static_cast<size_t>(n)) {
    for (int i = 0; i < n; ++i) {
      auto [ours, peer] = tcpPair();
      conns.push_back(TcpConnection::adopt(loop, ours, &handlers[i]));
      handlers[i].conn = conns.back().get();
      conns.back()->enableReading(true);
      peers.push_back(peer);
    }
  }
  ~Readers() {
    for (int fd : peers) {
      if (fd >= 0) {
        ::close(fd);
      }
    }
  }
  std::vector<Reader> handlers;
  std::vector<std::unique_ptr<TcpConnection>> conns;
  std::vector<int> peers;
};

void sendAll(int fd, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t r = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    REQUIRE(r > 0);
    off += static_cast<size_t>(r);
  }
}

// Runs the loop's ready work until pred holds (each pass polls without waiting; the peers'
// bytes are already in the sockets), at most 10 s.
template <typename Pred>
bool pumpUntil(EventLoop& loop, Pred pred) {
  for (int i = 0; i < 100000 && !pred(); ++i) {
    loop.runPending();
    if (!pred()) {
      pollfd none{-1, 0, 0};
      ::poll(&none, 0, i < 100 ? 0 : 1);  // yield: loopback delivery is synchronous
    }
  }
  return pred();
}

TEST_CASE("a pass's readable sockets are read in one batch: bytes, EOF and reset each reported" *
          doctest::skip(!uringExpected())) {
  EventLoop loop;
  REQUIRE(loop.enableIoBatching(nullptr));
  Readers r(loop, 6);
  for (int i = 0; i < 4; ++i) {
    sendAll(r.peers[i], "get key" + std::to_string(i) + "\r\n");
  }
  ::shutdown(r.peers[4], SHUT_WR);  // EOF
  linger hard{1, 0};
  REQUIRE(::setsockopt(r.peers[5], SOL_SOCKET, SO_LINGER, &hard, sizeof(hard)) == 0);
  ::close(r.peers[5]);  // RST
  r.peers[5] = -1;
  CHECK(pumpUntil(loop, [&] {
    return r.handlers[3].got.size() == 10 && !r.handlers[4].closed.empty() &&
           !r.handlers[5].closed.empty();
  }));
  CHECK(loop.batchedReads() >= 6);
  for (int i = 0; i < 4; ++i) {
    CHECK(r.handlers[i].got == "get key" + std::to_string(i) + "\r\n");
    CHECK(r.handlers[i].closed.empty());
  }
  CHECK(r.handlers[4].closed == std::vector<CloseReason>{CloseReason::Eof});
  REQUIRE(r.handlers[5].closed.size() == 1);
  CHECK(r.handlers[5].closed[0] == CloseReason::Error);
}

TEST_CASE("a batched read that fills its room reads on; more sockets than a batch are all read" *
          doctest::skip(!uringExpected())) {
  EventLoop loop;
  REQUIRE(loop.enableIoBatching(nullptr));
  constexpr int kConns = IoBatch::kEntries + 44;
  Readers r(loop, kConns);
  std::string big;
  while (big.size() < 600000) {
    big += "set k" + std::to_string(big.size()) + " 0 0 5\r\nvalue\r\n";
  }
  std::thread writer([&] { sendAll(r.peers[0], big); });  // past the socket buffers
  for (int i = 1; i < kConns; ++i) {
    sendAll(r.peers[i], "get k" + std::to_string(i) + "\r\n");
  }
  CHECK(pumpUntil(loop, [&] {
    if (r.handlers[0].got.size() < big.size()) {
      return false;
    }
    for (int i = 1; i < kConns; ++i) {
      if (r.handlers[i].got.empty()) {
        return false;
      }
    }
    return true;
  }));
  writer.join();
  CHECK(r.handlers[0].got == big);
  CHECK(loop.batchedReads() >= IoBatch::kEntries);
  for (int i = 1; i < kConns; ++i) {
    CHECK(r.handlers[i].got == "get k" + std::to_string(i) + "\r\n");
  }
}

TEST_CASE("a connection destroyed or stopped by another's handler in the same batch is left alone" *
          doctest::skip(!uringExpected())) {
  EventLoop loop;
  REQUIRE(loop.enableIoBatching(nullptr));
  Readers r(loop, 3);
  r.handlers[0].victim = &r.conns[1];
  r.handlers[0].stop = r.conns[2].get();
  for (int i = 0; i < 3; ++i) {
    sendAll(r.peers[i], "get a\r\n");
  }
  CHECK(pumpUntil(loop, [&] { return r.handlers[0].reads == 1; }));
  for (int i = 0; i < 20; ++i) {
    loop.runPending();
  }
  CHECK(loop.batchedReads() == 3);  // all three were received together
  CHECK(r.conns[1] == nullptr);
  CHECK(r.handlers[1].reads == 0);
  CHECK(r.handlers[2].reads == 0);  // stopped: its bytes wait in its input
  CHECK(r.conns[2]->input().size() == 7);
  r.conns[2]->enableReading(true);
  sendAll(r.peers[2], "get b\r\n");
  CHECK(pumpUntil(loop, [&] { return r.handlers[2].got == "get a\r\nget b\r\n"; }));
  CHECK(readsEof(r.peers[1]));
}

}  // namespace
}  // namespace mcring::net
