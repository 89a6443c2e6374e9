// DnsResolver against a scripted DNS server on a loopback UDP socket (a thread answering each
// query by its type): addresses of both families sorted into one list, NODATA for one family is
// fine, a failed query fails the whole answer (a half answer must not look like servers that
// left), NXDOMAIN and silence are failures.
#include "proxy/net/dns_resolver.h"

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "proxy/net/event_loop.h"

namespace {

using mcring::net::DnsAnswer;
using mcring::net::DnsResolver;
using mcring::net::EventLoop;
using mcring::net::Timer;

struct Reply {
  int rcode = 0;                  // 0 NOERROR, 2 SERVFAIL, 3 NXDOMAIN
  std::vector<std::string> data;  // raw 4- or 16-byte addresses
  bool silent = false;
};

std::string v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return std::string{static_cast<char>(a), static_cast<char>(b), static_cast<char>(c),
                     static_cast<char>(d)};
}

// Answers every query with what `script` says for its type (1: A, 28: AAAA).
class FakeDns {
 public:
  explicit FakeDns(std::function<Reply(int qtype)> script) : script_(std::move(script)) {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&sin), sizeof(sin)) == 0);
    socklen_t len = sizeof(sin);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&sin), &len);
    port_ = ntohs(sin.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeDns() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) {
        continue;
      }
      char q[512];
      sockaddr_in from{};
      socklen_t len = sizeof(from);
      ssize_t n = ::recvfrom(fd_, q, sizeof(q), 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (n < 17) {
        continue;
      }
      const int qtype = (static_cast<uint8_t>(q[n - 4]) << 8) | static_cast<uint8_t>(q[n - 3]);
      Reply r = script_(qtype);
      if (r.silent) {
        continue;
      }
      std::string out(q, static_cast<size_t>(n));  // id and question as asked
      out[2] = static_cast<char>(0x81);            // response, recursion desired
      out[3] = static_cast<char>(0x80 | r.rcode);  // recursion available
      out[6] = 0;
      out[7] = static_cast<char>(r.data.size());
      out[8] = out[9] = out[10] = out[11] = 0;
      for (const std::string& d : r.data) {
        const char rr[] = {
            static_cast<char>(0xC0),    12, 0, static_cast<char>(qtype), 0, 1, 0, 0, 0, 0, 0,
            static_cast<char>(d.size())};
        out.append(rr, sizeof(rr));
        out += d;
      }
      ::sendto(fd_, out.data(), out.size(), 0, reinterpret_cast<sockaddr*>(&from), len);
    }
  }

  std::function<Reply(int)> script_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Resolves `name` at `server` on a fresh loop; the answer, or nullopt if none came in 5 s.
std::optional<DnsAnswer> resolveAt(const std::string& server, uint32_t timeout_ms = 200) {
  EventLoop loop;
  std::string error;
  auto resolver = DnsResolver::create(loop, server, timeout_ms, &error);
  REQUIRE_MESSAGE(resolver, error);
  std::optional<DnsAnswer> got;
  REQUIRE(resolver->resolve("mc.example.test", [&](DnsAnswer a) {
    got = std::move(a);
    loop.stop();
  }));
  CHECK(resolver->busy());
  CHECK_FALSE(resolver->resolve("again.example.test", [](DnsAnswer) {}));  // one at a time
  Timer guard(loop, [&] { loop.stop(); });
  guard.start(5000);
  loop.run();
  return got;
}

TEST_CASE("A records and NODATA for AAAA: the addresses, sorted") {
  FakeDns dns([](int qtype) {
    return qtype == 1 ? Reply{0, {v4(10, 0, 0, 2), v4(10, 0, 0, 10), v4(10, 0, 0, 1)}} : Reply{};
  });
  auto a = resolveAt(dns.address());
  REQUIRE(a);
  CHECK(a->ok);
  CHECK(a->addresses == std::vector<std::string>{"10.0.0.1", "10.0.0.10", "10.0.0.2"});
}

TEST_CASE("both families in one list") {
  std::string six(16, '\0');
  six[0] = static_cast<char>(0xfd);
  six[15] = 5;
  FakeDns dns([&](int qtype) {
    return qtype == 1 ? Reply{0, {v4(10, 0, 0, 5)}} : Reply{0, {six}};
  });
  auto a = resolveAt(dns.address());
  REQUIRE(a);
  CHECK(a->ok);
  CHECK(a->addresses == std::vector<std::string>{"10.0.0.5", "fd00::5"});
}

TEST_CASE("a failed AAAA query fails the answer, even with A records") {
  FakeDns dns([](int qtype) { return qtype == 1 ? Reply{0, {v4(10, 0, 0, 1)}} : Reply{2, {}}; });
  auto a = resolveAt(dns.address());
  REQUIRE(a);
  CHECK_FALSE(a->ok);
  CHECK(a->addresses.empty());
  CHECK_FALSE(a->error.empty());
}

TEST_CASE("NXDOMAIN and NODATA for both are failures") {
  FakeDns nx([](int) { return Reply{3, {}}; });
  auto a = resolveAt(nx.address());
  REQUIRE(a);
  CHECK_FALSE(a->ok);
  CHECK(a->error == "no such name (NXDOMAIN)");
  FakeDns empty([](int) { return Reply{}; });
  auto b = resolveAt(empty.address());
  REQUIRE(b);
  CHECK_FALSE(b->ok);
  CHECK(b->error == "no address records (NODATA)");
}

TEST_CASE("a server that never answers: a timeout, reported") {
  FakeDns silent([](int) { return Reply{0, {}, true}; });
  auto a = resolveAt(silent.address(), 100);
  REQUIRE(a);
  CHECK_FALSE(a->ok);
  CHECK(a->error.find("timed out") != std::string::npos);
}

TEST_CASE("a resolver destroyed with a resolution in flight calls nothing") {
  FakeDns silent([](int) { return Reply{0, {}, true}; });
  EventLoop loop;
  std::string error;
  auto resolver = DnsResolver::create(loop, silent.address(), 100, &error);
  REQUIRE(resolver);
  bool called = false;
  REQUIRE(resolver->resolve("mc.example.test", [&](DnsAnswer) { called = true; }));
  resolver.reset();
  Timer done(loop, [&] { loop.stop(); });
  done.start(400);  // past both tries of the query that was in flight
  loop.run();
  CHECK_FALSE(called);
}

std::string srvData(uint16_t priority, uint16_t weight, uint16_t port, const std::string& target) {
  std::string d{static_cast<char>(priority >> 8), static_cast<char>(priority),
                static_cast<char>(weight >> 8),   static_cast<char>(weight),
                static_cast<char>(port >> 8),     static_cast<char>(port)};
  size_t begin = 0;
  while (begin < target.size()) {
    size_t dot = target.find('.', begin);
    size_t end = dot == std::string::npos ? target.size() : dot;
    d += static_cast<char>(end - begin);
    d += target.substr(begin, end - begin);
    begin = end + 1;
  }
  return d + '\0';
}

std::optional<mcring::net::SrvAnswer> resolveSrvAt(const std::string& server) {
  EventLoop loop;
  std::string error;
  auto resolver = DnsResolver::create(loop, server, 200, &error);
  REQUIRE_MESSAGE(resolver, error);
  std::optional<mcring::net::SrvAnswer> got;
  REQUIRE(resolver->resolveSrv("_memcache._tcp.example.test", [&](mcring::net::SrvAnswer a) {
    got = std::move(a);
    loop.stop();
  }));
  Timer guard(loop, [&] { loop.stop(); });
  guard.start(5000);
  loop.run();
  return got;
}

TEST_CASE("SRV: each target's addresses with the record's port and weight") {
  FakeDns dns([](int qtype) {
    if (qtype == 33) {
      return Reply{
          0, {srvData(0, 3, 11211, "a.example.test"), srvData(0, 1, 11212, "b.example.test")}};
    }
    return qtype == 1 ? Reply{0, {v4(10, 0, 0, 1)}} : Reply{};
  });
  auto a = resolveSrvAt(dns.address());
  REQUIRE(a);
  REQUIRE_MESSAGE(a->ok, a->error);
  REQUIRE(a->servers.size() == 2);
  CHECK(a->servers[0].address == "10.0.0.1");
  CHECK(a->servers[0].port == 11211);
  CHECK(a->servers[0].weight == 3);
  CHECK(a->servers[0].target == "a.example.test");
  CHECK(a->servers[1].port == 11212);
  CHECK(a->servers[1].weight == 1);
}

TEST_CASE("SRV: NXDOMAIN, no records, a target without an address are failures") {
  FakeDns nx([](int) { return Reply{3, {}}; });
  auto a = resolveSrvAt(nx.address());
  REQUIRE(a);
  CHECK_FALSE(a->ok);
  CHECK(a->error == "no such name (NXDOMAIN)");
  FakeDns none([](int) { return Reply{}; });
  auto b = resolveSrvAt(none.address());
  REQUIRE(b);
  CHECK_FALSE(b->ok);
  CHECK(b->error == "no SRV records");
  FakeDns lost([](int qtype) {
    return qtype == 33 ? Reply{0, {srvData(0, 1, 11211, "gone.example.test")}} : Reply{3, {}};
  });
  auto c = resolveSrvAt(lost.address());
  REQUIRE(c);
  CHECK_FALSE(c->ok);
  CHECK(c->servers.empty());
}

TEST_CASE("SRV: a silent server times out; destroyed in flight calls nothing") {
  FakeDns silent([](int) { return Reply{0, {}, true}; });
  auto a = resolveSrvAt(silent.address());
  REQUIRE(a);
  CHECK_FALSE(a->ok);
  CHECK(a->error == "request timed out");
  EventLoop loop;
  std::string error;
  auto resolver = DnsResolver::create(loop, silent.address(), 100, &error);
  bool called = false;
  REQUIRE(
      resolver->resolveSrv("_x._tcp.example.test", [&](mcring::net::SrvAnswer) { called = true; }));
  resolver.reset();
  Timer done(loop, [&] { loop.stop(); });
  done.start(300);
  loop.run();
  CHECK_FALSE(called);
}

TEST_CASE("a nameserver that is not an address is refused") {
  EventLoop loop;
  std::string error;
  CHECK_FALSE(DnsResolver::create(loop, "dns.example:53", 100, &error));
  CHECK(error == "cannot use nameserver 'dns.example:53'");
}

}  // namespace
