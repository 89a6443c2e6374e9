// A worker's view of one memcached server of one pool: its health, its counters and its pool's
// policies for it. Its connections are its link's (backend_link.h), shared with the other pools
// that name the same server with the same link settings.
//
// Keyed by server identity (host:port) in the worker's pool runtime, so a reload keeps the
// connections of servers that stay. Worker-thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proxy/backend/backend_connection.h"
#include "proxy/backend/backend_link.h"
#include "proxy/backend/server_freshness.h"
#include "proxy/common/socket_address.h"
#include "proxy/net/tls_context.h"
#include "proxy/stats/backend_stats.h"

namespace mcring::core {

class WorkerContext;
struct PoolRuntime;

class BackendServer {
 public:
  BackendServer(WorkerContext& worker, PoolRuntime& pool, std::string identity, std::string name,
                std::shared_ptr<BackendLink> link);
  ~BackendServer();

  // The connection a client session uses (sessions stick to one, so one client's requests to
  // this server stay in order). nullptr while the server is backing off after a failure, or
  // while that connection holds more unsent requests than the pool allows (backlogLimit).
  BackendConnection* connectionFor(uint64_t session_id);

  // Reported by its link: a connect failed, a connection timed out or stopped making sense.
  void onFailure(BackendFailure why);
  // A reply arrived: the server works (resets the consecutive-failure count).
  void onReplyOk() {
    consecutive_failures_ = 0;
    reported_down_ = false;
  }

  // Its requests in flight on the link (BackendConnection::expect to the end of their reply),
  // and its keys in another pool's fragment merged across routes (PendingRequest::key_server).
  void countSent() { ++inflight_; }
  void countFinished() { --inflight_; }
  bool idle() const { return inflight_ == 0; }  // none of its requests in flight
  // A reload removed it: it waits to be idle (WorkerContext::onBackendIdle when it is).
  void markDraining() { draining_ = true; }
  bool draining() const { return draining_; }
  bool changesInFlight() const;  // BackendConnection::changesInFlight on any connection

  // Replication (docs/design.md, "Replication"). Whether a read may go to this server now
  // (replicas > 1 picks the key's first readable replica): not stale (return_flush: it missed
  // writes and its flush_all is not acknowledged yet; starts that flush if a connection is up)
  // and not backing off with the session's connection closed.
  bool readable(uint64_t session_id);
  // A write for one of its keys went elsewhere without it (return_flush).
  void missedWrite();
  // A miss here goes on to the key's next replica: read_failover_on_miss, or within
  // return_window of its return flush.
  bool missFailsOver() const;
  // Sends flush_all on `conn` (which has nothing in flight yet, or is connected) if the server is
  // stale and no other worker is flushing it.
  void startReturnFlush(BackendConnection& conn);
  // The flush sent when missed was `mark` answered (ok: OK).
  void endReturnFlush(uint64_t mark, bool ok, std::string_view reply);
  ServerFreshness& freshness() const { return *fresh_; }

  const std::string& identity() const { return identity_; }
  const common::SocketAddress& address() const { return link_->address(); }
  WorkerContext& worker() { return worker_; }
  PoolRuntime& pool() { return *pool_; }
  BackendLink& link() { return *link_; }
  BackendFailure lastFailure() const { return last_failure_; }
  // The most request bytes one connection holds unsent (connectionFor): a quarter of the pool's
  // buffer_limit, at least two values of item_size_max.
  uint64_t backlogLimit() const;
  stats::BackendStats& stats() { return *stats_; }
  // Counts n requests that failed because of this server.
  void countFailure(BackendFailure why, uint64_t n = 1);
  // Logs a connection failure at most once per second per server (and worker); the lines in
  // between are counted and reported with the next one, so a flapping server cannot flood the log.
  // detail: why TLS failed, if it did.
  void logFailure(BackendFailure why, int error, const std::string& detail = {});
  // Counts n reads answered as misses because this server was unavailable (unavailable_reads:
  // miss) and logs them at most once per 10 s per server and worker: the first at once, the
  // ones in between counted in the next line.
  void countUnavailableMisses(BackendFailure why, uint64_t n);
  // Counts a write answered as not stored or not found because this server was unavailable
  // (unavailable_writes: not_stored), logged as the misses are.
  void countUnavailableWrite(BackendFailure why);
  // TLS for new connections (null: plaintext); a reload gives servers that stay a new context.
  const std::optional<net::TlsSetup>& tls() const { return link_->settings().tls; }
  void setTls(std::optional<net::TlsSetup> tls) { link_->setTls(std::move(tls)); }

 private:
  WorkerContext& worker_;
  PoolRuntime* pool_;
  std::string identity_;
  std::shared_ptr<BackendLink> link_;
  uint64_t inflight_ = 0;
  bool draining_ = false;
  BackendFailure last_failure_ = BackendFailure::Unavailable;
  std::shared_ptr<stats::BackendStats> stats_;
  std::shared_ptr<ServerFreshness> fresh_;
  // twemproxy's server_failure_limit: consecutive failures before the proxy is told to eject.
  uint32_t consecutive_failures_ = 0;
  uint64_t last_log_ns_ = 0;
  uint64_t suppressed_logs_ = 0;
  uint64_t unavailable_log_ns_ = 0;           // the last unavailable-miss log line
  uint64_t unavailable_unlogged_ = 0;         // misses since then
  uint64_t unavailable_write_log_ns_ = 0;     // the last unavailable-write log line
  uint64_t unavailable_writes_unlogged_ = 0;  // writes answered so since then
  bool reported_down_ = false;
};

// countFailure for a multi-get fragment that failed: its server counts it, and so does each
// other pool's server whose keys it carried (a fragment merged across pools,
// PendingRequest::key_server), once, as a fragment of its own would have been counted.
void countFragmentFailure(BackendServer& server, const PendingRequest& r, const Fragment& fr,
                          BackendFailure why);

}  // namespace mcring::core
