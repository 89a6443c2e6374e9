// One memcached as a worker reaches it: the connections to it and their reconnect backoff,
// shared by every pool of the worker that names it with the same link settings.
//
// Pools whose servers overlap (routes whose pools list the same memcached, a pool being warmed
// next to the one it replaces) would otherwise each keep their own connections to it: a routed
// multi-get would then go out as one line per pool and server instead of one per server, and
// memcached would hold a connection per pool and worker. mcrouter shares a destination between
// the pools that name it in the same way. Every request on a shared connection names its own
// pool's BackendServer (BackendConnection::expect), which counts it, its failures, hits and
// misses, and applies its pool's policies; what happens to the link itself (a refused connect, a
// timeout, a reconnect) reaches every attached server.
//
// Worker-thread only. Servers hold their link (std::shared_ptr); it goes with the last of them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "proxy/backend/backend_connection.h"
#include "proxy/backend/backend_failure.h"
#include "proxy/common/socket_address.h"
#include "proxy/net/tls_context.h"

namespace mcring::core {

class BackendServer;
class WorkerContext;

// What a connection to the server is made with. Two pools share a link when these are equal:
// a TLS link is never shared (its context is its pool's, rebuilt on each reload).
struct LinkSettings {
  uint32_t timeout_ms = 0;
  uint32_t connections = 1;
  std::string auth;  // the request that authenticates mcring (pool_security.h), or empty
  std::optional<net::TlsSetup> tls;
};

class BackendLink {
 public:
  BackendLink(WorkerContext& worker, std::string identity, common::SocketAddress address,
              LinkSettings settings);
  ~BackendLink();
  BackendLink(const BackendLink&) = delete;
  BackendLink& operator=(const BackendLink&) = delete;

  // The connection a client session uses (sessions stick to one, so one client's requests to
  // this server stay in order), connecting it if closed. nullptr while backing off after a
  // failure, or if a connect could not even start.
  BackendConnection* connectionFor(uint64_t session_id);
  // Whether that connection is closed and the link backing off.
  bool backingOff(uint64_t session_id) const;
  // The first connected connection, if any.
  BackendConnection* anyConnected() const;
  bool changesInFlight() const;  // BackendConnection::changesInFlight on any connection

  // The servers (one per pool) whose requests use this link.
  void attach(BackendServer& server);
  void detach(BackendServer& server);
  const std::vector<BackendServer*>& servers() const { return servers_; }

  // Reported by connections: the link's own events, passed on to every attached server.
  void onConnected();
  void onFailure(BackendFailure why);
  void logFailure(BackendFailure why, int error, const std::string& detail = {});
  // A connection opened or closed (each attached server's `connections` gauge).
  void countConnection(bool opened);
  void countTimeout();
  // A connection (re)connected: servers that missed writes flush it first (return_flush).
  void startReturnFlush(BackendConnection& conn);

  // Fails everything in flight on every connection and closes them (shutdown).
  void abortAll(BackendFailure why);

  const std::string& identity() const { return identity_; }
  const common::SocketAddress& address() const { return address_; }
  WorkerContext& worker() { return worker_; }
  const LinkSettings& settings() const { return settings_; }
  // A reload gives a TLS link (never shared) its pool's new context for its next connections.
  void setTls(std::optional<net::TlsSetup> tls) { settings_.tls = std::move(tls); }

 private:
  WorkerContext& worker_;
  std::string identity_;
  common::SocketAddress address_;
  LinkSettings settings_;
  std::vector<std::unique_ptr<BackendConnection>> connections_;
  std::vector<BackendServer*> servers_;
  uint64_t retry_at_ns_ = 0;  // no new connect before this (capped exponential backoff)
  uint32_t backoff_ms_ = 0;
};

// A worker's links by server and settings: BackendServer's way to its link.
class BackendLinks {
 public:
  // The link to `identity` with `settings`, made if no live one has them. `pool` names the
  // pool asking; it is part of a TLS link's key, so no other pool shares it.
  std::shared_ptr<BackendLink> get(WorkerContext& worker, const std::string& pool,
                                   const std::string& identity,
                                   const common::SocketAddress& address, LinkSettings settings);
  // Every live link's BackendLink::abortAll (the worker's shutdown, before its servers go).
  void abortAll(BackendFailure why);

 private:
  std::unordered_map<std::string, std::weak_ptr<BackendLink>> links_;
};

}  // namespace mcring::core
