// Per-worker counters: one writer (the worker's thread), summed by readers on demand.
//
// Each field is a relaxed atomic written only by its worker, so increments cost a plain add and
// a reader on another thread sees a recent value without locks (seastar map_reduce style).
#pragma once

#include <atomic>
#include <cstdint>

namespace mcring::stats {

// One table: name, kind (Counter only grows, Gauge goes up and down), meaning. The `stats` command
// and exporters iterate it.
#define MCRING_WORKER_COUNTERS(X)                                                                  \
  X(total_connections, Counter, "client connections accepted")                                     \
  X(curr_connections, Gauge, "client connections open (gauge)")                                    \
  X(cmd_get, Counter, "keys requested by get/gets/gat/gats")                                       \
  X(get_hits, Counter, "retrieval keys found")                                                     \
  X(get_misses, Counter, "retrieval keys not found")                                               \
  X(cmd_set, Counter, "storage commands (set/add/replace/append/prepend/cas/ms)")                  \
  X(cmd_delete, Counter, "delete and md commands")                                                 \
  X(cmd_touch, Counter, "touch/gat/gats commands")                                                 \
  X(cmd_meta, Counter, "meta commands")                                                            \
  X(cmd_other, Counter, "other forwarded commands")                                                \
  X(cmd_flush, Counter, "flush_all commands")                                                      \
  X(cmd_flush_refused, Counter, "flush_all commands refused: the pool's allow_flush_all is false") \
  X(client_errors, Counter, "requests answered with a CLIENT_ERROR or ERROR by the proxy")         \
  X(client_idle_closed, Counter, "client connections closed by client_idle_timeout")               \
  X(client_request_timeout_closed, Counter,                                                        \
    "client connections closed by client_request_timeout: part of a request sent, not the rest")   \
  X(client_oom_replies, Counter,                                                                   \
    "replies refused for the memory budget (SERVER_ERROR out of memory)")                          \
  X(client_slow_closed, Counter,                                                                   \
    "clients closed for reading nothing for 1 s while their reply held a backend connection")      \
  X(client_input_waits, Counter,                                                                   \
    "times a client receiving a large request waited for memory, unread")                          \
  X(client_input_stalled, Counter,                                                                 \
    "clients closed for holding memory for a request they stopped sending while others waited")    \
  X(client_auth_failures, Counter,                                                                 \
    "client authentication attempts refused (client_auth_file: wrong credentials or token "        \
    "format)")                                                                                     \
  X(client_unauthenticated, Counter,                                                               \
    "client commands refused before authentication (CLIENT_ERROR unauthenticated)")                \
  X(client_tls_failures, Counter,                                                                  \
    "client connections of a TLS listener closed by a TLS failure (not TLS, refused certificate, " \
    "...)")                                                                                        \
  X(client_tls_handshake_timeouts, Counter,                                                        \
    "client connections of a TLS listener closed for not finishing the handshake within "          \
    "tls_handshake_timeout")                                                                       \
  X(server_errors, Counter, "requests answered with SERVER_ERROR because of a backend fault")      \
  X(unavailable_misses, Counter,                                                                   \
    "retrieval keys answered as misses because their backend was unavailable (unavailable_reads: " \
    "miss)")                                                                                       \
  X(unavailable_writes, Counter,                                                                   \
    "writes answered as not stored or not found because their backend was unavailable "            \
    "(unavailable_writes: not_stored)")                                                            \
  X(backend_requests, Counter, "requests sent to backends (multi-get fragments count each)")       \
  X(backend_get_lines, Counter,                                                                    \
    "get/gets lines sent to backends with coalesce_gets (each carries the keys of one or more "    \
    "requests)")                                                                                   \
  X(backend_connections, Gauge, "backend connections open (gauge)")                                \
  X(backend_connect_failures, Counter, "backend connect attempts that failed")                     \
  X(backend_timeouts, Counter, "backend connections reset because of a timeout")                   \
  X(backend_protocol_errors, Counter, "backend connections reset because of bad replies")          \
  X(replayed_requests, Counter,                                                                    \
    "retrievals sent again on a fresh backend connection after theirs closed unexpectedly")        \
  X(stats_fetches, Counter,                                                                        \
    "stats views and version asked of a pool's servers (one per server asked)")                    \
  X(stats_fetch_failures, Counter,                                                                 \
    "servers left out of a merged stats view or version: down, erroring or not answering within "  \
    "1 s")                                                                                         \
  X(bytes_read, Counter, "bytes read from clients")                                                \
  X(bytes_written, Counter, "bytes written to clients")                                            \
  X(warmup_windows_open, Gauge, "pools with a warm-up window open (gauge, summed over workers)")   \
  X(warmup_fetches, Counter, "warm-up: misses on moved keys asked of their previous server")       \
  X(warmup_hits, Counter, "warm-up: keys answered from their previous server")                     \
  X(warmup_misses, Counter, "warm-up: keys the previous server did not have either")               \
  X(warmup_skips, Counter,                                                                         \
    "warm-up: moved-key misses not fetched (max_inflight reached, previous server unavailable)")   \
  X(warmup_copies, Counter, "warm-up: values copied to the key's new server")                      \
  X(warmup_copies_not_stored, Counter,                                                             \
    "warm-up: copies refused because the new server already had a (newer) value")                  \
  X(warmup_copies_cancelled, Counter,                                                              \
    "warm-up: copies not sent because the key was written or deleted meanwhile")                   \
  X(warmup_copy_errors, Counter, "warm-up: copies that failed (server error or connection fault)") \
  X(warmup_invalidations, Counter,                                                                 \
    "warm-up: deletes sent to the previous server of a moved key being written or deleted")        \
  X(spread_reads, Counter,                                                                         \
    "hot-key spread: plain reads of a spread key served by a copy other than its own server")      \
  X(spread_write_copies, Counter,                                                                  \
    "hot-key spread: writes sent to a spread key's copies (beyond its own server)")                \
  X(replica_writes, Counter,                                                                       \
    "replication: writes sent to a key's replicas beyond its primary (replicas > 1)")              \
  X(failover_reads, Counter, "replication: read keys sent on to a key's next replica")             \
  X(spread_copy_mismatches, Counter,                                                               \
    "hot-key spread: copies that answered a write differently from the primary, failed, or "       \
    "missed a read (no longer read until filled again)")                                           \
  X(spread_invalidations, Counter,                                                                 \
    "hot-key spread: writes of a spread key sent to its own server only (cas, meta writes), "      \
    "which unfill every copy")                                                                     \
  X(spread_fills, Counter, "hot-key spread: copies filled from the primary")                       \
  X(spread_fills_abandoned, Counter,                                                               \
    "hot-key spread: fills given up (the key was written meanwhile, a miss or error at the "       \
    "primary, a failed copy)")

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
