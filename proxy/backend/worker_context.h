// What the data plane needs of the worker it runs on: its event loop, request pool, warm-up
// registry, counters and per-backend stats, plus the hooks a backend calls back into. Control's
// Worker derives from it (through session/session_context.h) and owns the thread; backends and
// dispatch see only this. Worker-thread only, but for the const counters (read by any thread).
#pragma once

#include <memory>
#include <string>

#include "proxy/backend/dispatch_steps.h"
#include "proxy/backend/pending_request.h"
#include "proxy/backend/read_failover_state.h"
#include "proxy/backend/route_state.h"
#include "proxy/backend/spread_state.h"
#include "proxy/backend/warm_request.h"
#include "proxy/backend/warmup_state.h"
#include "proxy/net/event_loop.h"
#include "proxy/stats/backend_stats.h"
#include "proxy/stats/counters.h"
#include "proxy/stats/pool_memory.h"
#include "proxy/stats/route_stats.h"

namespace mcring::core {

class WorkerContext {
 public:
  explicit WorkerContext(const DispatchSteps& steps)
      : loop_(std::make_unique<net::EventLoop>()), steps_(steps) {}
  virtual ~WorkerContext() = default;
  WorkerContext(const WorkerContext&) = delete;
  WorkerContext& operator=(const WorkerContext&) = delete;

  const stats::WorkerCounters& counters() const { return counters_; }
  const stats::BackendStatsList& backendStats() const { return backend_stats_; }
  const stats::PoolMemoryList& poolMemory() const { return pool_memory_; }
  const stats::RouteStatsList& routeStats() const { return route_stats_; }

  net::EventLoop& loop() { return *loop_; }
  RequestPool& requests() { return requests_; }
  RouteStatePool& routeStates() { return route_states_; }
  ReplicaWritePool& replicaWrites() { return replica_writes_; }
  SpreadStatePool& spreadStates() { return spread_states_; }
  WarmRequestPool& warmRequests() { return warm_requests_; }
  ReadFailoverPool& readFailovers() { return read_failovers_; }
  WarmupRegistry& warmup() { return warmup_; }
  stats::WorkerCounters& counters() { return counters_; }
  stats::BackendStatsList& backendStats() { return backend_stats_; }
  stats::PoolMemoryList& poolMemory() { return pool_memory_; }
  stats::RouteStatsList& routeStats() { return route_stats_; }
  const DispatchSteps& steps() const { return steps_; }

  // Called when a server of a pool with auto_eject_hosts has failed server_failure_limit times
  // in a row; the proxy decides ejection for all workers at once.
  virtual void reportServerDown(const std::string& pool, const std::string& identity) = 0;
  // A backend connection finished something; drained servers of old snapshots may now go.
  virtual void onBackendIdle() = 0;

 protected:
  std::unique_ptr<net::EventLoop> loop_;
  // Declared before the request pool, so destroyed after it: recycled requests return theirs.
  RouteStatePool route_states_;
  ReplicaWritePool replica_writes_;
  SpreadStatePool spread_states_;
  WarmRequestPool warm_requests_;
  ReadFailoverPool read_failovers_;
  RequestPool requests_;
  WarmupRegistry warmup_;
  stats::WorkerCounters counters_;
  stats::BackendStatsList backend_stats_;
  stats::PoolMemoryList pool_memory_;
  stats::RouteStatsList route_stats_;

 private:
  const DispatchSteps& steps_;
};

}  // namespace mcring::core
