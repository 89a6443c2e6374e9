// Dispatch: a framed request becomes work for backends, or a local answer. Routes its keys,
// splits a multi-get into per-server fragments (or shared get lines, coalesce_gets), forwards a
// storage command's data block without copying it, broadcasts flush_all, answers version,
// verbosity, quit and mn itself, merges memcached's stats views and version from the pool's
// servers (stats_views.h) and their `lru_crawler metadump`s (metadump.h). A routed listener's
// request goes through its route's handlers first (route_handler.h), every request through its
// pool's (pool_handler.h: replication, spread, warm-up); the Dispatcher is the context both
// kinds of handler act through. The reply comes back through the backend connections and
// dispatch/completion.h. Worker-thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "proxy/backend/backend_server.h"
#include "proxy/backend/pool_runtime.h"
#include "proxy/backend/worker_context.h"
#include "proxy/dispatch/metadump.h"
#include "proxy/dispatch/pool_handler.h"
#include "proxy/dispatch/request_source.h"
#include "proxy/dispatch/route_handler.h"
#include "proxy/dispatch/shadow.h"
#include "proxy/dispatch/stats_views.h"
#include "proxy/protocol/request.h"

namespace mcring::core {

class Dispatcher final : private RouteContext, private PoolContext {
 public:
  Dispatcher(WorkerContext& worker, StatsViews& views, Metadumps& dumps, Shadows& shadows)
      : worker_(worker), views_(views), dumps_(dumps), shadows_(shadows) {}

  // `req` was framed from `line`, at the front of src.input() (with its data block, if any).
  void dispatch(RequestSource& src, PoolRuntime& pool, const protocol::Request& req,
                std::string_view line);
  // A set refused as too large: memcached unlinks the key's old value, so the key's server
  // gets a delete (no stale value survives a write the client believes failed).
  void invalidateTooLarge(RequestSource& src, PoolRuntime& pool, const protocol::Request& req,
                          std::string_view line);
  // A flush_all the pool does not allow (allow_flush_all: false) whose delay did not parse:
  // memcached -F refuses it before reading the delay, so it gets the refusal, not the
  // delay's error. The caller has dropped its line.
  void refuseFlushAll(RequestSource& src, PoolRuntime& pool, const protocol::Request& req);

 private:
  void begin(RequestSource& src, PoolRuntime& pool, const protocol::Request& req) {
    src_ = &src;
    pool_ = &pool;
    client_pool_ = &pool;
    req_ = &req;
    route_ = nullptr;
    across_ = nullptr;
    failover_ready_ = false;
    traced_ = nullptr;
  }
  // The watch stream or the slow-request log wants this request (stats/request_watch.h):
  // newRequest marks it with its start time, first key (from line_) and route.
  void traceRequest(PendingRequest* r);
  static std::string watchAnswer(std::string_view args, bool allowed);
  // The request's FIFO slot, tagged with the pool it is routed to (and its route, and a
  // shadowed read's probe).
  PendingRequest* newRequest(protocol::Command command);
  void dispatchToPool(std::string_view line);
  // Routes (routed.cc): a routed listener's request goes to the pool of its key's route.
  void dispatchRouted(std::string_view line);
  void routedKeyed(std::string_view line);
  void routedRetrieval(std::string_view line);
  bool routeOne(uint32_t index, std::string_view& line);
  bool admitRoutes(std::span<const uint32_t> routes, std::span<const uint32_t> key_routes,
                   std::string_view& line);
  PoolRuntime* sendRoute(uint32_t r, std::span<const uint32_t> key_routes, std::string_view line);
  void answerRouted(std::string_view reply);
  std::string_view applyTtlCap(std::string_view line, uint32_t max_ttl);
  // RouteContext (routed.cc)
  void refuse(std::string_view reply) override;
  void capTtl(uint32_t max_ttl) override;
  void shadowWrite(const ShadowTarget& target, size_t i) override;
  void shadowRead(const ShadowTarget& target, size_t i) override;
  void failOverTo(const RouteCall& call, std::span<PoolRuntime* const> pools,
                  bool on_miss) override;
  void prepareMultigetFailover(PendingRequest& r);
  void sendTo(PoolRuntime& pool) override;
  void routedServers(std::vector<BackendServer*>& out) const;
  void prepareRouteFailover(std::string_view line, std::string_view key, Expect expect);
  // A multi-get's server `s`: an index in the pool's list, or in across_ for one across routes.
  BackendServer& serverAt(uint32_t s) const {
    return across_ != nullptr ? *(*across_)[s] : *pool_->by_index[s];
  }
  void dispatchKeyed(std::string_view line);
  void sendDirect(KeyedCall& call);
  void dispatchRetrieval(std::string_view line);
  // A multi-get split per server; `call`: its pool's handlers' decisions (null: across routes).
  void dispatchMultiget(std::string_view line, const RetrievalCall* call);
  const std::string& lineAsSent(std::string_view line, const protocol::Span& noreply);
  // The current get/gets goes out with its keys in lines shared with other requests
  // (coalesce_gets; gat/gats carry an exptime and keep lines of their own).
  bool coalescing() const {
    return pool_->config().coalesce_gets && !failover_ready_ && multiget_failover_.empty() &&
           (req_->command == protocol::Command::Get || req_->command == protocol::Command::Gets);
  }
  // memcached closes a connection on a line other than get/gets with no newline in its first
  // 2048 bytes (always, when the line arrives in pieces), failing every request on it: so a
  // long gat/gats goes to its server as several lines of at most this many bytes.
  static constexpr size_t kMaxBackendLine = 2000;
  bool splitsLines(size_t line_length) const {
    return line_length > kMaxBackendLine &&
           (req_->command == protocol::Command::Gat || req_->command == protocol::Command::Gats);
  }
  bool replayable(std::string_view line) const;
  // PoolContext: what the pool handlers (pool_handler.h) have done. Replication:
  // dispatch_replicated.cc; spread: dispatch_spread.cc; warm-up: invalidation.cc.
  PoolRuntime& pool() override { return *pool_; }
  WorkerContext& worker() override { return worker_; }
  const protocol::Request& request() const override { return *req_; }
  uint64_t sessionId() const override;
  std::string& scratchLine() override { return head_; }
  void sendToReplicas(KeyedCall& call) override;
  void sendToOtherReplicas(std::string_view key, uint32_t read_at, std::string_view line) override;
  void keepForNextReplica(KeyedCall& call) override;
  void sendToNextReplica(KeyedCall& call) override;
  uint32_t readCopy(const std::shared_ptr<SpreadEntry>& entry) override;
  void sendToCopies(KeyedCall& call) override;
  void invalidatePrevious(KeyedCall& call, BackendServer& previous) override;
  void dispatchFlushAll(std::string_view line);
  void refuse(PendingRequest* r);  // flush_all not allowed
  void answerLocal(std::string_view line);
  void invalidateAtPrevious(PendingRequest* r, BackendServer& prev, std::string_view line);
  void invalidateKey(std::string_view line);
  void invalidateAt(BackendServer& server, std::string_view line);
  void countForBackend(BackendServer& server, std::string_view key);
  void failUnavailable(PendingRequest* r, BackendServer& server, uint64_t bytes);
  uint64_t consumedLength() const {
    return req_->line_length + (req_->has_data ? req_->value_length + 2 : 0);
  }

  WorkerContext& worker_;
  StatsViews& views_;
  Metadumps& dumps_;
  Shadows& shadows_;
  // The request being dispatched (set by begin()).
  RequestSource* src_ = nullptr;
  PoolRuntime* pool_ = nullptr;
  // The session's pool (a routed listener's client-side keys: allow_dump), whichever pool_ the
  // request is dispatched to.
  PoolRuntime* client_pool_ = nullptr;
  const protocol::Request* req_ = nullptr;
  std::vector<uint32_t> routes_;  // scratch: server of each key of a multi-get
  // Routes: the request's route (null: not routed), a shadowed read's probe not yet given to
  // its request, a multi-get's servers across pools (null: the pool's by_index), and scratch.
  RouteRuntime* route_ = nullptr;
  // The line of the request being dispatched (valid until its bytes are drained, which is
  // after newRequest), and the request traceRequest marked (countForBackend adds its server).
  std::string_view line_;
  PendingRequest* traced_ = nullptr;
  ShadowProbe* probe_ = nullptr;
  std::vector<KeyProbe> key_probes_;  // a multi-get's shadowed keys' probes, for its request
  const std::vector<BackendServer*>* across_ = nullptr;
  std::vector<BackendServer*> across_servers_;
  // A multi-get across routes with keys of several pools on one fragment (routedRetrieval):
  // each key's own server. Empty otherwise.
  std::vector<BackendServer*> key_servers_;
  std::vector<BackendServer*> flush_servers_;
  std::vector<uint32_t> key_routes_;
  std::vector<uint32_t> route_seen_;
  std::vector<PoolRuntime*> route_pools_;  // scratch: the pool each route's handlers chose
  uint32_t one_route_ = 0;                 // a one-key request's route (its key_routes)
  // What the route handlers decided for the request being routed: its TTL cap (0: none) and
  // the pool of the route being sent (line_ is then the line as admitted, after the cap).
  uint32_t ttl_cap_ = 0;
  PoolRuntime* sent_to_ = nullptr;
  // A route with failover: the request as sent, its key and the pools to try, for the request
  // newRequest makes.
  std::span<PoolRuntime* const> failover_pools_;
  bool failover_on_miss_ = false;
  // A multi-get's routes with failover (their keys may move: route_failover.h).
  struct MultigetFailover {
    uint32_t route = 0;
    std::span<PoolRuntime* const> pools;
    bool on_miss = false;
  };
  std::vector<MultigetFailover> multiget_failover_;
  bool failover_ready_ = false;
  Expect failover_expect_ = Expect::OneUnit;
  std::string failover_bytes_;
  std::string failover_key_;
  protocol::Request capped_req_;
  std::string capped_line_;
  std::vector<int32_t> fragment_of_;      // scratch: fragment of each server, -1 if none
  std::vector<size_t> fragment_bytes_;    // scratch: line bytes of each fragment so far
  std::vector<SpreadRead> spread_reads_;  // scratch: the get's keys served by a spread copy
  // scratch: a write's line as sent to several servers (lineAsSent), a TTL for other replicas
  std::string head_;
  uint64_t rng_ = 0x9e3779b97f4a7c15ULL;  // xorshift: which copy a spread key's read goes to
};

}  // namespace mcring::core
