// HttpServer over real loopback sockets, with a loop on its own thread: the whole-request
// deadline closes a client that drips bytes, the connection cap sheds the longest-waiting
// connection so that a complete request is still answered, and a request carries its headers
// and the local address the client connected to.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "proxy/net/event_loop.h"
#include "proxy/net/http_server.h"

namespace {

using Clock = std::chrono::steady_clock;
using mcring::net::HttpLimits;
using mcring::net::HttpRequest;
using mcring::net::HttpResponse;
using mcring::net::HttpServer;
using mcring::net::HttpServerEvents;

int connectTo(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(port);
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&sin), sizeof(sin)) == 0);
  return fd;
}

// Whether the peer closed within timeout_ms (reads and drops anything before the close).
bool closedWithin(int fd, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    if (::poll(&p, 1, std::max(left, 1)) <= 0) {
      continue;
    }
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      return true;
    }
  }
  return false;
}

std::string exchange(uint16_t port, const std::string& request) {
  int fd = connectTo(port);
  REQUIRE(::send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size()));
  std::string reply;
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) {
      continue;
    }
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      break;
    }
    reply.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return reply;
}

struct Served {
  mcring::net::EventLoop loop;
  std::unique_ptr<HttpServer> server;
  std::thread thread;
  std::atomic<int> shed{0};
  std::atomic<int> timed_out{0};
  std::mutex mutex;
  std::vector<HttpRequest> seen;  // method, path, addresses (headers are not kept)
  std::vector<std::string> hosts;

  explicit Served(HttpLimits limits) {
    HttpServerEvents events;
    events.connection_shed = [this] { ++shed; };
    events.connection_timed_out = [this] { ++timed_out; };
    std::string error;
    server = HttpServer::open(
        loop, "127.0.0.1", 0,
        [this](const HttpRequest& r) {
          std::lock_guard<std::mutex> lock(mutex);
          HttpRequest copy = r;
          copy.headers = nullptr;
          seen.push_back(copy);
          const char* host = r.header("host");
          hosts.push_back(host != nullptr ? host : "(none)");
          return HttpResponse{200, "text/plain", "ok\n", {{"X-Test", "1"}}};
        },
        &error, limits, std::move(events));
    REQUIRE_MESSAGE(server != nullptr, error);
    thread = std::thread([this] { loop.run(); });
  }
  ~Served() {
    loop.stop();
    thread.join();
    server.reset();
  }
};

}  // namespace

TEST_CASE("a client that sends a byte at a time is closed at the whole-request deadline") {
  HttpLimits limits;
  limits.request_timeout_ms = 300;
  Served s(limits);
  int fd = connectTo(s.server->port());
  const auto start = Clock::now();
  const std::string request = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: aaaaaaaaaaaaaaaaaaaa";
  bool closed = false;
  for (char c : request) {
    if (::send(fd, &c, 1, MSG_NOSIGNAL) != 1 || closedWithin(fd, 40)) {
      closed = true;
      break;
    }
  }
  if (!closed) {
    closed = closedWithin(fd, 1000);
  }
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  CHECK(closed);
  CHECK(ms >= 250);
  CHECK(ms < 900);
  CHECK(s.timed_out.load() == 1);
  ::close(fd);
  // A prompt client is still served.
  CHECK(exchange(s.server->port(), "GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n").rfind("HTTP/1.0 200", 0) == 0);
}

TEST_CASE("at the connection cap the longest-waiting connection makes room for a new one") {
  HttpLimits limits;
  limits.max_connections = 4;
  Served s(limits);
  std::vector<int> stalled;
  for (int i = 0; i < 6; ++i) {
    stalled.push_back(connectTo(s.server->port()));
    REQUIRE(::send(stalled.back(), "G", 1, 0) == 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // an order to shed them in
  }
  std::string reply = exchange(s.server->port(), "GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n");
  CHECK(reply.rfind("HTTP/1.0 200 OK\r\n", 0) == 0);
  CHECK(reply.find("X-Test: 1\r\n") != std::string::npos);
  // 6 + 1 connections for 4 places: the three oldest stalled ones went, the newest stay.
  CHECK(closedWithin(stalled[0], 500));
  CHECK(closedWithin(stalled[1], 500));
  CHECK(closedWithin(stalled[2], 500));
  CHECK_FALSE(closedWithin(stalled[5], 100));
  CHECK(s.shed.load() == 3);
  for (int fd : stalled) {
    ::close(fd);
  }
}

TEST_CASE("a request carries its method, path, headers and the local address") {
  Served s(HttpLimits{});
  std::string reply = exchange(
      s.server->port(),
      "POST /reload?x=1 HTTP/1.1\r\nHost: Example:99\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  CHECK(reply.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  std::lock_guard<std::mutex> lock(s.mutex);
  REQUIRE(s.seen.size() == 1);
  CHECK(s.seen[0].method == "POST");
  CHECK(s.seen[0].path == "/reload");
  CHECK(s.seen[0].local_address == "127.0.0.1");
  CHECK(s.seen[0].local_port == s.server->port());
  CHECK(s.seen[0].peer == "127.0.0.1");
  CHECK(s.hosts[0] == "Example:99");
}
