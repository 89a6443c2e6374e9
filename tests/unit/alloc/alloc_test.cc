// Allocations per request of the running data plane, counted: the whole proxy runs in this
// process (one worker) in front of three real memcached servers, a client on a socket sends warm
// requests one at a time, and every operator new and every libevent allocation made meanwhile
// by any thread of the process but the proxy's main thread is counted. After warm-up, get, set
// and a 3-key get must each average at most one allocation per request. (The main thread's
// periodic work, the hot-key report each second, is not per request: counted, it made the
// figure depend on how long the measured requests took, 0.29 on a loaded machine.)
//
// MCRING_ALLOC_SITES=1 prints where the allocations of the measured phase come from.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <execinfo.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "proxy/common/log.h"
#include "proxy/control/proxy.h"
#include "proxy/net/event_loop.h"

extern char** environ;

// operator delete below frees what operator new got from malloc: the pair is consistent.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace {

std::atomic<uint64_t> g_allocs{0};
std::atomic<bool> g_sites{false};

// Up to kSites distinct call stacks of allocations made while g_sites is set.
constexpr int kSites = 64;
constexpr int kDepth = 10;
struct Site {
  void* frames[kDepth];
  int depth;
  std::atomic<uint64_t> count;
};
Site g_site[kSites];
std::atomic<int> g_site_count{0};
thread_local bool t_in_hook = false;

// The proxy's main thread (Proxy::run): not counted.
std::atomic<std::thread::id> g_main_loop{};

void noteAllocation() {
  if (std::this_thread::get_id() == g_main_loop.load(std::memory_order_relaxed)) {
    return;
  }
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  if (!g_sites.load(std::memory_order_relaxed) || t_in_hook) {
    return;
  }
  t_in_hook = true;
  void* frames[kDepth + 2];
  int depth = backtrace(frames, kDepth + 2) - 2;
  void** f = frames + 2;
  int n = g_site_count.load();
  for (int i = 0; i < n; ++i) {
    if (g_site[i].depth == depth && std::memcmp(g_site[i].frames, f, sizeof(void*) * depth) == 0) {
      g_site[i].count.fetch_add(1);
      t_in_hook = false;
      return;
    }
  }
  if (n < kSites) {
    int i = g_site_count.fetch_add(1);
    if (i < kSites) {
      std::memcpy(g_site[i].frames, f, sizeof(void*) * depth);
      g_site[i].depth = depth;
      g_site[i].count = 1;
    }
  }
  t_in_hook = false;
}

void* countingMalloc(size_t n) {
  noteAllocation();
  return std::malloc(n);
}
void* countingRealloc(void* p, size_t n) {
  noteAllocation();
  return std::realloc(p, n);
}
void countingFree(void* p) { std::free(p); }

}  // namespace

void* operator new(size_t n) {
  noteAllocation();
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) {
    throw std::bad_alloc();
  }
  return p;
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  noteAllocation();
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace {

uint16_t freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

int connectTo(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

int connectWithin(uint16_t port, int ms) {
  for (int waited = 0; waited < ms; waited += 10) {
    int fd = connectTo(port);
    if (fd >= 0) {
      return fd;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

struct Memcached {
  pid_t pid = -1;
  uint16_t port = 0;
  bool start() {
    for (int attempt = 0; attempt < 5 && pid < 0; ++attempt) {
      port = freePort();
      std::string p = std::to_string(port);
      const char* argv[] = {"memcached", "-l", "127.0.0.1", "-p", p.c_str(), "-U", "0", "-m", "64",
                            "-u", "root", nullptr};
      pid_t child;
      if (posix_spawnp(&child, "memcached", nullptr, nullptr, const_cast<char**>(argv),
                       environ) != 0) {
        return false;
      }
      int fd = connectWithin(port, 3000);
      if (fd < 0) {
        ::kill(child, SIGKILL);
        ::waitpid(child, nullptr, 0);
        continue;
      }
      ::close(fd);
      pid = child;
    }
    return pid > 0;
  }
  ~Memcached() {
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

// One request, its whole reply read (it must end with `end`). Buffers are the caller's: the
// client allocates nothing.
bool roundTrip(int fd, const char* req, size_t n, const char* end, char* buf, size_t cap) {
  if (::send(fd, req, n, 0) != static_cast<ssize_t>(n)) {
    return false;
  }
  size_t got = 0;
  const size_t elen = std::strlen(end);
  while (got < cap) {
    ssize_t r = ::recv(fd, buf + got, cap - got, 0);
    if (r <= 0) {
      return false;
    }
    got += static_cast<size_t>(r);
    if (got >= elen && std::memcmp(buf + got - elen, end, elen) == 0) {
      return true;
    }
  }
  return false;
}

struct Workload {
  const char* name;
  std::vector<std::string> requests;  // cycled through
  const char* end;
};

void printSites() {
  int n = std::min(g_site_count.load(), kSites);
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) {
    order[i] = i;
  }
  std::sort(order.begin(), order.end(),
            [](int a, int b) { return g_site[a].count > g_site[b].count; });
  for (int k = 0; k < n && k < 12; ++k) {
    Site& s = g_site[order[k]];
    std::fprintf(stderr, "--- %llu allocations from:\n", static_cast<unsigned long long>(s.count));
    backtrace_symbols_fd(s.frames, s.depth, 2);
  }
}

}  // namespace

TEST_CASE("warm requests allocate at most once per request") {
  Memcached backends[3];
  for (Memcached& m : backends) {
    REQUIRE(m.start());
  }
  const uint16_t port = freePort();
  char path[] = "/tmp/mcring-alloc-XXXXXX";
  int cfd = mkstemp(path);
  REQUIRE(cfd >= 0);
  ::close(cfd);
  {
    std::ofstream conf(path);
    conf << "alpha:\n  listen: 127.0.0.1:" << port << "\n  hash: fnv1a_64\n"
         << "  distribution: ketama\n  timeout: 2000\n";
    // MCRING_ALLOC_REPLICAS=N: the replicated data plane (writes to N servers, failover reads).
    if (const char* replicas = std::getenv("MCRING_ALLOC_REPLICAS")) {
      conf << "  replicas: " << replicas << "\n";
    }
    conf << "  servers:\n";
    for (Memcached& m : backends) {
      conf << "    - 127.0.0.1:" << m.port << ":1\n";
    }
  }
  mcring::core::ProxyOptions options;
  options.config_path = path;
  options.threads = 1;
  options.watch_config = false;
  options.admin_port = 0;
  options.backend_stats_interval_s = 0;
  mcring::core::Proxy proxy(options);
  REQUIRE(proxy.start());
  std::thread runner([&] {
    g_main_loop.store(std::this_thread::get_id());
    proxy.run();
  });

  int fd = connectWithin(port, 3000);
  REQUIRE(fd >= 0);
  static char buf[1 << 16];
  // Values on every server, so that the 3-key gets hit on three servers.
  for (int i = 0; i < 300; ++i) {
    std::string set = "set key" + std::to_string(i) + " 0 0 32\r\n" + std::string(32, 'v') + "\r\n";
    REQUIRE(roundTrip(fd, set.data(), set.size(), "STORED\r\n", buf, sizeof(buf)));
  }
  std::vector<Workload> workloads = {{"get", {}, "END\r\n"},
                                     {"set", {}, "STORED\r\n"},
                                     {"3-key get", {}, "END\r\n"},
                                     {"mg", {}, "MN\r\n"},
                                     {"delete+set", {}, "STORED\r\n"}};
  for (int i = 0; i < 100; ++i) {
    std::string k = "key" + std::to_string(i);
    workloads[0].requests.push_back("get " + k + "\r\n");
    workloads[1].requests.push_back("set " + k + " 0 0 32\r\n" + std::string(32, 'w') + "\r\n");
    workloads[2].requests.push_back("get key" + std::to_string(i) + " key" +
                                    std::to_string(i + 100) + " key" + std::to_string(i + 200) +
                                    "\r\n");
    workloads[3].requests.push_back("mg " + k + " v\r\nmn\r\n");
    workloads[4].requests.push_back("delete " + k + "\r\nset " + k + " 0 0 32\r\n" +
                                    std::string(32, 'x') + "\r\n");
  }
  constexpr int kWarm = 2000;
  constexpr int kMeasured = 10000;
  const bool sites = std::getenv("MCRING_ALLOC_SITES") != nullptr;
  if (sites) {
    void* f[4];
    backtrace(f, 4);  // loads the unwinder before counting
  }
  for (Workload& w : workloads) {
    for (int i = 0; i < kWarm; ++i) {
      const std::string& r = w.requests[i % w.requests.size()];
      REQUIRE(roundTrip(fd, r.data(), r.size(), w.end, buf, sizeof(buf)));
    }
    g_site_count = 0;
    g_sites = sites;
    const uint64_t before = g_allocs.load();
    bool ok = true;
    for (int i = 0; i < kMeasured && ok; ++i) {
      const std::string& r = w.requests[i % w.requests.size()];
      ok = roundTrip(fd, r.data(), r.size(), w.end, buf, sizeof(buf));
    }
    const uint64_t allocs = g_allocs.load() - before;
    g_sites = false;
    REQUIRE(ok);
    const double per_request = static_cast<double>(allocs) / kMeasured;
    MESSAGE(w.name << ": " << allocs << " allocations in " << kMeasured << " requests ("
                   << per_request << " per request)");
    std::printf("%s: %.2f allocations per request\n", w.name, per_request);
    if (sites) {
      printSites();
    }
    // docs/design.md's figure: under 0.25 per warm request (measured 0.02-0.03: the client FIFO's
    // deque blocks; the backend connections' queues allocate nothing once warm, where as deques
    // they made 0.10-0.26); with replicas each write is two backend requests, and a delete+set
    // pair measured 0.03 alone and 0.11 beside a sanitizer build.
    CHECK(per_request <= (std::getenv("MCRING_ALLOC_REPLICAS") ? 0.5 : 0.25));
  }
  ::close(fd);
  ::kill(getpid(), SIGTERM);  // the proxy's signal watcher: drain and return from run()
  runner.join();
  ::unlink(path);
}

int main(int argc, char** argv) {
  // Before anything of libevent: its buffers and events are counted too.
  mcring::net::setAllocator(countingMalloc, countingRealloc, countingFree);
  mcring::common::logInit(1, "");
  signal(SIGPIPE, SIG_IGN);
  mcring::net::initThreading();
  doctest::Context context(argc, argv);
  return context.run();
}
