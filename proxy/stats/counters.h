// Per-worker counters: one writer (the worker's thread), summed by readers on demand.
//
// Each field is a relaxed atomic written only by its worker, so increments cost a plain add and
// a reader on another thread sees a recent value without locks (seastar map_reduce style).
#pragma once

#include <atomic>
#include <cstdint>

namespace mcring::stats {

// One table: name, kind (Counter only grows, Gauge goes up and down), meaning. The `stats` command and exporters iterate it.
#define MCRING_WORKER_COUNTERS(X)                                              \
  X(total_connections, Counter, "client connections accepted")                          \
  X(curr_connections, Gauge, "client connections open (gauge)")                      \
  X(cmd_get, Counter, "keys requested by get/gets/gat/gats")                           \
  X(get_hits, Counter, "retrieval keys found")                                          \
  X(get_misses, Counter, "retrieval keys not found")                                    \
  X(cmd_set, Counter, "storage commands (set/add/replace/append/prepend/cas/ms)")       \
  X(cmd_delete, Counter, "delete and md commands")                                      \
  X(cmd_touch, Counter, "touch/gat/gats commands")                                      \
  X(cmd_meta, Counter, "meta commands")                                                 \
  X(cmd_other, Counter, "other forwarded commands")                                     \
  X(cmd_flush, Counter, "flush_all commands")                                           \
  X(client_errors, Counter, "requests answered with a CLIENT_ERROR or ERROR by the proxy") \
  X(server_errors, Counter, "requests answered with SERVER_ERROR because of a backend fault") \
  X(backend_requests, Counter, "requests sent to backends (multi-get fragments count each)") \
  X(backend_connections, Gauge, "backend connections open (gauge)")                   \
  X(backend_connect_failures, Counter, "backend connect attempts that failed")          \
  X(backend_timeouts, Counter, "backend connections reset because of a timeout")        \
  X(backend_protocol_errors, Counter, "backend connections reset because of bad replies") \
  X(bytes_read, Counter, "bytes read from clients")                                     \
  X(bytes_written, Counter, "bytes written to clients")

enum class MetricKind : uint8_t { Counter, Gauge };

struct WorkerCounters {
#define MCRING_X(name, kind, help) std::atomic<uint64_t> name{0};
  MCRING_WORKER_COUNTERS(MCRING_X)
#undef MCRING_X
};

// Single-writer increment: a relaxed load + store, no lock prefix.
inline void bump(std::atomic<uint64_t>& c, uint64_t n = 1) {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}
inline void drop(std::atomic<uint64_t>& c, uint64_t n = 1) {
  c.store(c.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
}

}  // namespace mcring::stats
