// The data plane in-process, between a scripted client and scripted backends.
//
// DataPlane runs one real Worker (its own thread and event loop; sessions, dispatch, backend
// connections, memory budget) on a topology built from a YAML pool. The test thread plays both
// ends with blocking sockets and deadlines:
//   - TestClient: the test's end of a socketpair whose other end the worker adopts as a client
//     session (Worker::postClient).
//   - FakeBackend: a loopback listener on port 0 owned by the test. mcring connects to it as to a
//     memcached; the test reads exactly what mcring wrote and answers with scripted bytes, when
//     it chooses, split where it chooses, never, or by closing the connection.
// Every wait has a deadline (a failing test fails fast); no sleep stands in for an event that can
// be awaited, except the short windows that check something does NOT happen.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/topology.h"
#include "proxy/stats/counters.h"

namespace mcring::core {
class Worker;
struct SpreadEntry;
}  // namespace mcring::core

namespace dataplane {

// A fake memcached: accepts mcring's connections, records what it reads, writes what it is told.
class FakeBackend {
 public:
  FakeBackend();
  ~FakeBackend();
  FakeBackend(const FakeBackend&) = delete;
  FakeBackend& operator=(const FakeBackend&) = delete;

  uint16_t port() const { return port_; }
  // Waits for mcring to open a new connection (it connects lazily, on the first request); the
  // new one becomes the current connection. False if none came within timeout_ms.
  bool accept(int timeout_ms = 2000);
  int accepted() const { return accepted_; }
  bool connected() const { return conn_ >= 0; }

  // Reads exactly n bytes (accepting the first connection if needed); returns fewer if the
  // deadline passes or the connection ends first.
  std::string read(size_t n, int timeout_ms = 2000);
  // Reads request bytes until `expected.size()` bytes arrived and returns them (the caller
  // compares: the test sees what mcring actually wrote).
  std::string expect(std::string_view expected, int timeout_ms = 2000) {
    return read(expected.size(), timeout_ms);
  }
  // Whatever arrives until nothing more for quiet_ms.
  std::string readQuiet(int quiet_ms);
  // Everything mcring wrote to this backend so far (all connections).
  const std::string& received() const { return received_; }

  bool send(std::string_view bytes);
  // Sends in pieces: the first `first` bytes, then the rest, pausing pause_us in between so that
  // mcring reads them separately.
  bool sendSplit(std::string_view bytes, size_t first, int pause_us = 1000);
  // One byte at a time.
  bool sendBytewise(std::string_view bytes, int pause_us = 300);
  // Closes the current connection (mcring sees EOF).
  void closeConnection();
  // Waits for mcring to close the current connection (EOF); false at the deadline.
  bool waitPeerClosed(int timeout_ms = 2000);
  // Closes the listening socket: connects are refused from now on (a server that went away).
  void stopListening();

 private:
  int listen_fd_ = -1;
  int conn_ = -1;
  uint16_t port_ = 0;
  int accepted_ = 0;
  std::string received_;
};

// A client connection to the worker.
class TestClient {
 public:
  // fd: the test's end of the socketpair.
  explicit TestClient(int fd) : fd_(fd) {}
  ~TestClient();
  TestClient(TestClient&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  TestClient(const TestClient&) = delete;
  TestClient& operator=(const TestClient&) = delete;

  bool send(std::string_view bytes);
  bool sendSplit(std::string_view bytes, size_t first, int pause_us = 1000);
  // Reads exactly n bytes (fewer at the deadline or EOF).
  std::string read(size_t n, int timeout_ms = 2000);
  // Reads until the bytes read end with `suffix`.
  std::string readUntil(std::string_view suffix, int timeout_ms = 2000);
  // True if no byte arrives within ms (and the connection is still open).
  bool silentFor(int ms);
  // Reads and discards until EOF; true if EOF came before the deadline.
  bool waitClosed(int timeout_ms = 2000);
  void close();
  // Half-close: the client sends nothing more (mcring sees EOF) but still reads.
  void shutdownWrite();
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

// Stand-in for admin's StatsReporter (the `stats` command is not what these tests are about).
struct NullRenderer;

class DataPlane {
 public:
  // `pool_keys`: extra YAML lines for the pool ("  timeout: 50\n"); servers are the backends,
  // in order, weight 1 each, ketama with fnv1a_64.
  DataPlane(const std::vector<FakeBackend*>& backends, const std::string& pool_keys = "");
  // A whole config: `yaml`, where "{0}", "{1}"... stand for the ports of backends[0], [1]...;
  // clients connect to the pool `listener` (a routed listener, for the route tests).
  DataPlane(const std::string& yaml, const std::vector<FakeBackend*>& backends,
            const std::string& listener);
  ~DataPlane();

  // A reload: the pool's servers become `backends` (with `pool_keys`), as the main thread's
  // reload posts a new topology. Clients connected after this call see it.
  void reconfigure(const std::vector<FakeBackend*>& backends, const std::string& pool_keys = "");
  // A reload to a whole config, with ports as for the YAML constructor.
  void reconfigureYaml(const std::string& yaml, const std::vector<FakeBackend*>& backends);
  // Hot-key spread: `key` spread over `copies` (indices of the backends given; [0] is the key's
  // own server), as the main thread's planner posts it (backend/hot_spread.h). Returns the
  // entry, whose counters the test may read; the worker applies it before later requests.
  std::shared_ptr<mcring::core::SpreadEntry> spread(const std::string& key,
                                                    std::vector<uint32_t> copies);
  // A new client session. sndbuf: SO_SNDBUF of the worker's end (0: the default), to make a
  // client's socket fill quickly.
  TestClient connect(int sndbuf = 0);
  // Index (in the backends given) of the server `key` routes to.
  uint32_t route(std::string_view key) const;
  // The n-th key (from 0) with `prefix` that routes to backend `server`.
  std::string keyOn(uint32_t server, std::string_view prefix = "k", int n = 0) const;
  const mcring::stats::WorkerCounters& counters() const;
  // Backend `server`'s (index in the backends given) unavailable_misses, summed as read.
  uint64_t unavailableMisses(uint32_t server) const;
  // Waits until pred() holds (polled every 200 µs); false at the deadline.
  static bool waitFor(const std::function<bool()>& pred, int timeout_ms = 2000);
  // Open client sessions (decremented by a session when its socket closes).
  uint32_t openClients() const;

 private:
  std::unique_ptr<NullRenderer> renderer_;
  std::shared_ptr<const mcring::config::Topology> topology_;
  std::unique_ptr<mcring::core::Worker> worker_;
  std::shared_ptr<std::atomic<uint32_t>> open_count_;
  std::string listener_ = "alpha";
};

// "VALUE <key> <flags> <n>\r\n<data>\r\n"
std::string valueUnit(std::string_view key, std::string_view data, uint32_t flags = 0);

}  // namespace dataplane
