// Blocking memcached-text helpers for the stampede experiment's control steps: waiting for a port,
// warming keys, dumping what a backend holds, flushing, and polling mcring's reload records.
// Main thread only; none of this is on the measured path.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "bench/mcring_bench/key_space.h"

namespace mcring::bench {

// One blocking TCP connection to 127.0.0.1:port with line reads under a deadline.
class BlockingClient {
 public:
  BlockingClient() = default;
  ~BlockingClient() { close(); }
  BlockingClient(const BlockingClient&) = delete;
  BlockingClient& operator=(const BlockingClient&) = delete;

  bool connect(uint16_t port, std::string* error);
  void close();
  bool sendAll(std::string_view data, std::string* error);
  // The next line without its "\r\n" (or bare "\n"); fails after timeout_ms without one.
  bool readLine(std::string* line, int timeout_ms, std::string* error);
  // Skips n bytes of data block (+ "\r\n" is the caller's: pass length + 2).
  bool skipBytes(uint64_t n, int timeout_ms, std::string* error);

 private:
  bool fill(int timeout_ms, std::string* error);

  int fd_ = -1;
  std::string buffer_;
  size_t begin_ = 0;
};

// Waits until 127.0.0.1:port is served by process pid: its `stats` says `STAT pid <pid>`
// (memcached and mcring; any pid when pid <= 0), or, with connect_only, it accepts a connection
// (nutcracker has no `stats` on its client port). False when pid exits, another process answers
// (the port was taken: pick another), timeout_ms passes, or we are interrupted.
bool waitUntilServing(uint16_t port, pid_t pid, int timeout_ms, bool connect_only = false);

struct SetResult {
  uint64_t stored = 0;
  uint64_t failed = 0;  // any other reply (SERVER_ERROR for a dead backend, ...)
  double seconds = 0;
};

// Sets keys [0, count) once each through port, pipelined in windows. False (with *error) only
// if the connection fails; per-key failures are counted in *result.
bool setAllKeys(uint16_t port, const KeySpace& keys, uint64_t count, uint32_t value_size,
                SetResult* result, std::string* error);

// The indices of this key space's keys that the memcached at port holds (lru_crawler metadump:
// flushed and expired items are not listed). *foreign counts keys of other spaces. Fast but not
// exact: the crawler walks the HOT, WARM and COLD queues while the LRU maintainer moves fresh
// items between them, so an item can be skipped (about 1 in 200,000 here) or listed twice.
bool dumpKeys(uint16_t port, const KeySpace& keys, std::vector<uint64_t>* indices,
              uint64_t* foreign, std::string* error);

// Which of `candidates` (key indices) the memcached at port holds, asked with plain multi-gets:
// exact, for the few keys a dump did not list. Appends them to *held.
bool heldKeys(uint16_t port, const KeySpace& keys, const std::vector<uint64_t>& candidates,
              std::vector<uint64_t>* held, std::string* error);

bool flushAll(uint16_t port, std::string* error);

// The numeric fields of `stats` at port (memcached's, or mcring's own answer), by name.
bool readStats(uint16_t port, std::map<std::string, uint64_t>* stats, std::string* error);
// The writes a memcached's `stats` counts: storage commands (cmd_set: set, add, replace, append,
// prepend, cas), deletes, incr/decr and touches.
uint64_t backendWrites(const std::map<std::string, uint64_t>& stats);

// mcring's newest reload record (`stats reloads`), parsed.
struct ReloadRecordView {
  uint64_t id = 0;  // 0: none yet
  uint64_t generation = 0;
  std::string source;
  std::string result;  // applied, unchanged, failed
  std::string line;    // as received, for error messages
};
bool latestReload(BlockingClient& client, ReloadRecordView* latest, std::string* error);

}  // namespace mcring::bench
