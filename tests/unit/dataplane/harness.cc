// The scripted client and backends around one real Worker (harness.h).
#include "tests/unit/dataplane/harness.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "config/config.h"
#include "proxy/backend/hot_spread.h"
#include "proxy/control/worker.h"
#include "proxy/stats/stats_renderer.h"

namespace dataplane {
namespace {

using Clock = std::chrono::steady_clock;

int msLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

Clock::time_point after(int ms) {
  return Clock::now() + std::chrono::milliseconds(ms);
}

// Waits for fd to be readable; false at the deadline.
bool waitReadable(int fd, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, msLeft(deadline));
    if (r > 0) {
      return true;
    }
    if (r == 0 || errno != EINTR) {
      return false;
    }
  }
}

bool writeAll(int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      if (errno == EAGAIN) {  // never on blocking sockets; kept for safety
        pollfd p{fd, POLLOUT, 0};
        ::poll(&p, 1, 100);
        continue;
      }
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

// Reads up to n bytes into out; stops at EOF or the deadline. Returns false on EOF/error.
bool readInto(int fd, std::string& out, size_t n, Clock::time_point deadline) {
  char buf[65536];
  while (out.size() < n) {
    if (!waitReadable(fd, deadline)) {
      return true;
    }
    ssize_t r = ::recv(fd, buf, std::min(sizeof(buf), n - out.size()), MSG_DONTWAIT);
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) {
        continue;
      }
      return false;
    }
    if (r == 0) {
      return false;
    }
    out.append(buf, static_cast<size_t>(r));
  }
  return true;
}

void pauseUs(int us) {
  if (us > 0) {
    std::this_thread::sleep_for(std::chrono::microseconds(us));
  }
}

}  // namespace

// --- FakeBackend ---

FakeBackend::FakeBackend() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::listen(listen_fd_, 16) != 0) {
    throw std::runtime_error(std::string("fake backend: cannot listen: ") + std::strerror(errno));
  }
  socklen_t len = sizeof(a);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
}

FakeBackend::~FakeBackend() {
  closeConnection();
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
  }
}

bool FakeBackend::accept(int timeout_ms) {
  if (!waitReadable(listen_fd_, after(timeout_ms))) {
    return false;
  }
  int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  closeConnection();
  // Pieces are written at once, not held back for an ACK (Nagle): splits land as scripted.
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  conn_ = fd;
  ++accepted_;
  return true;
}

std::string FakeBackend::read(size_t n, int timeout_ms) {
  const auto deadline = after(timeout_ms);
  std::string out;
  if (conn_ < 0 && !accept(timeout_ms)) {
    return out;
  }
  readInto(conn_, out, n, deadline);
  received_ += out;
  return out;
}

std::string FakeBackend::readQuiet(int quiet_ms) {
  std::string out;
  if (conn_ < 0 && !accept(quiet_ms)) {
    return out;
  }
  char buf[65536];
  while (waitReadable(conn_, after(quiet_ms))) {
    ssize_t r = ::recv(conn_, buf, sizeof(buf), MSG_DONTWAIT);
    if (r <= 0) {
      break;
    }
    out.append(buf, static_cast<size_t>(r));
  }
  received_ += out;
  return out;
}

bool FakeBackend::send(std::string_view bytes) {
  return conn_ >= 0 && writeAll(conn_, bytes);
}

bool FakeBackend::sendSplit(std::string_view bytes, size_t first, int pause_us) {
  if (!send(bytes.substr(0, first))) {
    return false;
  }
  pauseUs(pause_us);
  return send(bytes.substr(first));
}

bool FakeBackend::sendBytewise(std::string_view bytes, int pause_us) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (!send(bytes.substr(i, 1))) {
      return false;
    }
    pauseUs(pause_us);
  }
  return true;
}

void FakeBackend::stopListening() {
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
}

void FakeBackend::closeConnection() {
  if (conn_ >= 0) {
    ::close(conn_);
    conn_ = -1;
  }
}

bool FakeBackend::waitPeerClosed(int timeout_ms) {
  if (conn_ < 0) {
    return false;
  }
  const auto deadline = after(timeout_ms);
  char buf[4096];
  while (waitReadable(conn_, deadline)) {
    ssize_t r = ::recv(conn_, buf, sizeof(buf), MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
      return true;
    }
    if (r > 0) {
      received_.append(buf, static_cast<size_t>(r));
    }
  }
  return false;
}

// --- TestClient ---

TestClient::~TestClient() {
  close();
}

void TestClient::close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

void TestClient::shutdownWrite() {
  if (fd_ >= 0) {
    ::shutdown(fd_, SHUT_WR);
  }
}

bool TestClient::send(std::string_view bytes) {
  return fd_ >= 0 && writeAll(fd_, bytes);
}

bool TestClient::sendSplit(std::string_view bytes, size_t first, int pause_us) {
  if (!send(bytes.substr(0, first))) {
    return false;
  }
  pauseUs(pause_us);
  return send(bytes.substr(first));
}

std::string TestClient::read(size_t n, int timeout_ms) {
  std::string out;
  readInto(fd_, out, n, after(timeout_ms));
  return out;
}

std::string TestClient::readUntil(std::string_view suffix, int timeout_ms) {
  const auto deadline = after(timeout_ms);
  std::string out;
  while (!(out.size() >= suffix.size() &&
           std::string_view(out).substr(out.size() - suffix.size()) == suffix)) {
    size_t before = out.size();
    if (!readInto(fd_, out, before + 1, deadline) || out.size() == before) {
      break;
    }
  }
  return out;
}

bool TestClient::silentFor(int ms) {
  if (!waitReadable(fd_, after(ms))) {
    return true;
  }
  return false;
}

bool TestClient::waitClosed(int timeout_ms) {
  const auto deadline = after(timeout_ms);
  char buf[65536];
  while (waitReadable(fd_, deadline)) {
    ssize_t r = ::recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
      return true;
    }
  }
  return false;
}

// --- DataPlane ---

struct NullRenderer final : mcring::stats::StatsRenderer {
  bool render(std::string_view, std::string* out) const override {
    *out = "END\r\n";
    return true;
  }
  void renderOwn(std::vector<std::pair<std::string, std::string>>*) const override {}
};

namespace {

std::shared_ptr<const mcring::config::Topology> topologyOf(const std::string& yaml,
                                                           uint64_t generation);

std::shared_ptr<const mcring::config::Topology> buildTopology(
    const std::vector<FakeBackend*>& backends, const std::string& pool_keys, uint64_t generation) {
  // The listen address is never opened: clients come through postClient.
  std::string yaml = "alpha:\n  listen: 127.0.0.1:1\n  hash: fnv1a_64\n  distribution: ketama\n" +
                     pool_keys + "  servers:\n";
  for (FakeBackend* b : backends) {
    yaml += "    - 127.0.0.1:" + std::to_string(b->port()) + ":1\n";
  }
  return topologyOf(yaml, generation);
}

std::shared_ptr<const mcring::config::Topology> topologyOf(const std::string& yaml,
                                                           uint64_t generation) {
  auto loaded = mcring::config::loadConfigString(yaml);
  if (!loaded.ok()) {
    std::string all;
    for (const auto& e : loaded.errors) {
      all += e.toString() + "\n";
    }
    throw std::runtime_error("config: " + all + yaml);
  }
  std::vector<std::string> errors;
  auto topology = mcring::config::Topology::build(*loaded.config, generation, &errors);
  if (!topology) {
    throw std::runtime_error("topology: " + (errors.empty() ? std::string() : errors[0]));
  }
  return topology;
}

}  // namespace

namespace {

std::string withPorts(std::string text, const std::vector<FakeBackend*>& backends) {
  for (size_t i = 0; i < backends.size(); ++i) {
    const std::string mark = "{" + std::to_string(i) + "}";
    for (size_t at = text.find(mark); at != std::string::npos; at = text.find(mark)) {
      text.replace(at, mark.size(), std::to_string(backends[i]->port()));
    }
  }
  return text;
}

}  // namespace

DataPlane::DataPlane(const std::string& yaml, const std::vector<FakeBackend*>& backends,
                     const std::string& listener)
    : renderer_(std::make_unique<NullRenderer>()),
      open_count_(std::make_shared<std::atomic<uint32_t>>(0)),
      listener_(listener) {
  topology_ = topologyOf(withPorts(yaml, backends), 1);
  worker_ = std::make_unique<mcring::core::Worker>(0, 1, *renderer_);
  worker_->start(topology_, nullptr);
}

DataPlane::DataPlane(const std::vector<FakeBackend*>& backends, const std::string& pool_keys)
    : renderer_(std::make_unique<NullRenderer>()),
      open_count_(std::make_shared<std::atomic<uint32_t>>(0)) {
  topology_ = buildTopology(backends, pool_keys, 1);
  worker_ = std::make_unique<mcring::core::Worker>(0, 1, *renderer_);
  worker_->start(topology_, nullptr);  // plaintext: no TLS contexts
}

void DataPlane::reconfigure(const std::vector<FakeBackend*>& backends,
                            const std::string& pool_keys) {
  topology_ = buildTopology(backends, pool_keys, topology_->generation + 1);
  worker_->postTopology(topology_, nullptr);
}

void DataPlane::reconfigureYaml(const std::string& yaml,
                                const std::vector<FakeBackend*>& backends) {
  topology_ = topologyOf(withPorts(yaml, backends), topology_->generation + 1);
  worker_->postTopology(topology_, nullptr);
}

DataPlane::~DataPlane() {
  // Sessions still waiting on a backend that never answers are cut by the grace period.
  worker_->postShutdown(20);
  worker_->join();
  worker_.reset();
}

std::shared_ptr<mcring::core::SpreadEntry> DataPlane::spread(const std::string& key,
                                                             std::vector<uint32_t> copies) {
  auto entry = std::make_shared<mcring::core::SpreadEntry>(key, std::move(copies));
  auto set = std::make_shared<mcring::core::SpreadSet>();
  for (const auto& pool : topology_->pools) {
    set->topology = pool;  // the one pool, "alpha"
  }
  set->entries.push_back(entry);
  set->workers = 1;
  worker_->postSpread("alpha", set);
  return entry;
}

TestClient DataPlane::connect(int sndbuf) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw std::runtime_error("socketpair failed");
  }
  if (sndbuf > 0) {
    ::setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    ::setsockopt(fds[0], SOL_SOCKET, SO_RCVBUF, &sndbuf, sizeof(sndbuf));
  }
  open_count_->fetch_add(1);
  worker_->postClient(fds[1], listener_, open_count_);
  return TestClient(fds[0]);
}

uint32_t DataPlane::route(std::string_view key) const {
  return topology_->pools[0]->router->route(key);
}

std::string DataPlane::keyOn(uint32_t server, std::string_view prefix, int n) const {
  for (int i = 0; i < 100000; ++i) {
    std::string key = std::string(prefix) + std::to_string(i);
    if (route(key) == server && n-- == 0) {
      return key;
    }
  }
  throw std::runtime_error("no key routes to server " + std::to_string(server));
}

const mcring::stats::WorkerCounters& DataPlane::counters() const {
  return worker_->counters();
}

uint64_t DataPlane::unavailableMisses(uint32_t server) const {
  const std::string identity = topology_->pools[0]->config.servers[server].identity();
  uint64_t n = 0;
  for (const auto& bs : worker_->backendStats().snapshot()) {
    if (bs->identity == identity) {
      n += bs->unavailable_misses.load();
    }
  }
  return n;
}

uint32_t DataPlane::openClients() const {
  return open_count_->load();
}

bool DataPlane::waitFor(const std::function<bool()>& pred, int timeout_ms) {
  const auto deadline = after(timeout_ms);
  while (!pred()) {
    if (Clock::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

std::string valueUnit(std::string_view key, std::string_view data, uint32_t flags) {
  std::string s = "VALUE ";
  s += key;
  s += " " + std::to_string(flags) + " " + std::to_string(data.size()) + "\r\n";
  s += data;
  s += "\r\n";
  return s;
}

}  // namespace dataplane
