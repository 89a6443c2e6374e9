// Per-backend statistics kept by each worker: counters, latency, distinct keys.
//
// One writer (the worker that owns the backend connection), read by the stats exporters on
// other threads; summed per (pool, server) across workers on read.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "proxy/stats/counters.h"
#include "proxy/stats/hyperloglog.h"
#include "proxy/stats/latency_histogram.h"

namespace mcring::stats {

// One table: name, kind, meaning (for `stats backends`, /metrics and the README).
#define MCRING_BACKEND_COUNTERS(X)                                                                 \
  X(requests, Counter, "requests sent (a multi-get fragment counts once)")                         \
  X(get_keys, Counter, "retrieval keys asked (get/gets/gat/gats keys, mg)")                        \
  X(get_hits, Counter, "retrieval keys found")                                                     \
  X(get_misses, Counter, "retrieval keys not found")                                               \
  X(warmup_hits, Counter,                                                                          \
    "misses of this server answered from the key's previous server (warm migration)")              \
  X(stores, Counter, "storage commands (set/add/replace/append/prepend/cas/ms)")                   \
  X(deletes, Counter, "delete and md")                                                             \
  X(other_commands, Counter, "incr/decr/touch/ma/me/flush_all")                                    \
  X(errors, Counter, "requests failed by a fault of this backend (any reason)")                    \
  X(err_connect_failed, Counter, "requests failed: connect failed")                                \
  X(err_connection_closed, Counter, "requests failed: connection closed")                          \
  X(err_timeout, Counter, "requests failed: timeout")                                              \
  X(err_protocol_error, Counter, "requests failed: unparseable reply")                             \
  X(err_unavailable, Counter, "requests failed at once during reconnect backoff")                  \
  X(err_backlogged, Counter,                                                                       \
    "requests failed at once: the server's unsent requests on this worker reached their bound")    \
  X(unavailable_misses, Counter,                                                                   \
    "retrieval keys answered as misses because this backend was unavailable (unavailable_reads: "  \
    "miss)")                                                                                       \
  X(unavailable_writes, Counter,                                                                   \
    "writes answered as not stored or not found because this backend was unavailable "             \
    "(unavailable_writes: not_stored)")                                                            \
  X(replica_write_failures, Counter,                                                               \
    "replica writes this backend could not take (unavailable, failed, timed out, SERVER_ERROR; "   \
    "replicas > 1)")                                                                               \
  X(failover_reads, Counter,                                                                       \
    "read keys this backend failed to serve (error, timeout, closed, unavailable, or a miss with " \
    "read_failover_on_miss / in its return window) sent on to the key's next replica")             \
  X(return_flushes, Counter,                                                                       \
    "flush_all sent to this backend when it came back after missing writes (return_flush)")        \
  X(timeouts, Counter, "connections reset because of a timeout")                                   \
  X(bytes_sent, Counter, "request bytes sent")                                                     \
  X(bytes_received, Counter, "reply bytes received")                                               \
  X(connections, Gauge, "connections open")

struct BackendStats {
  BackendStats(std::string pool_name, std::string server_identity, std::string server_name)
      : pool(std::move(pool_name)),
        identity(std::move(server_identity)),
        name(std::move(server_name)),
        keys(12) {}
  const std::string pool;
  const std::string identity;  // host:port
  const std::string name;      // config name or identity
#define MCRING_X(field, kind, help) std::atomic<uint64_t> field{0};
  MCRING_BACKEND_COUNTERS(MCRING_X)
#undef MCRING_X
  LatencyHistogram latency;  // request sent -> whole reply received, µs
  HyperLogLog keys;          // distinct keys routed here (4 KiB, ~1.6% error)
};

// A worker's list of its BackendStats; the lock guards only the list (taken when a backend
// appears or goes, and by readers), never the counters.
class BackendStatsList {
 public:
  std::shared_ptr<BackendStats> add(const std::string& pool, const std::string& identity,
                                    const std::string& name);
  void remove(const BackendStats* stats);
  std::vector<std::shared_ptr<const BackendStats>> snapshot() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<BackendStats>> list_;
};

// Sum of one backend's stats over workers, as read.
struct BackendTotals {
  std::string pool;
  std::string identity;
  std::string name;
#define MCRING_X(field, kind, help) uint64_t field = 0;
  MCRING_BACKEND_COUNTERS(MCRING_X)
#undef MCRING_X
  std::array<uint64_t, LatencyHistogram::kBuckets> latency{};
  double distinct_keys = 0;
};

// Sums the per-worker lists by (pool, identity), in first-seen order.
std::vector<BackendTotals> sumBackends(const std::vector<const BackendStatsList*>& lists);

}  // namespace mcring::stats
