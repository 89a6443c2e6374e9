// A worker's live state for one pool: the snapshot it routes by and the backends it talks to.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "config/topology.h"
#include "proxy/backend/backend_server.h"
#include "proxy/backend/hot_spread.h"
#include "proxy/backend/memory_budget.h"
#include "proxy/backend/pool_security.h"
#include "proxy/backend/warmup_state.h"
#include "proxy/common/token_bucket.h"
#include "proxy/protocol/request_parser.h"
#include "proxy/routing/prefix_table.h"
#include "proxy/stats/hot_key_sketch.h"
#include "proxy/stats/pool_memory.h"
#include "proxy/stats/prefix_stats.h"
#include "proxy/stats/route_stats.h"

namespace mcring::core {

struct PoolRuntime;
class RouteHandler;  // dispatch/route_handler.h
class PoolHandler;   // dispatch/pool_handler.h

// One route of a routed listener (config::RouteConfig) as a worker runs it: the pools it sends
// to, resolved on this worker, its counters, and the chain of route handlers dispatch evaluates
// (dispatch/route_tree.h builds it from the rest). Rebuilt at each snapshot
// (Worker::applyTopology); the pools it points to are the worker's, which outlive every request.
struct RouteRuntime {
  const config::RouteConfig* config = nullptr;  // in the listener's snapshot (topology)
  std::string name;                             // config->name(), kept across snapshots
  PoolRuntime* pool = nullptr;
  PoolRuntime* shadow = nullptr;  // null: no shadow
  std::vector<PoolRuntime*> failover;
  std::shared_ptr<stats::RouteStats> stats;
  // The process's token bucket for this route (shared by the workers); null: no rate_limit.
  std::shared_ptr<common::TokenBucket> limit;
  std::shared_ptr<const RouteHandler> root;
};

struct PoolRuntime {
  std::string name;
  std::shared_ptr<const config::PoolTopology> topology;
  // The pool's features as handlers (dispatch/pool_handler.h), built from the snapshot's config
  // (Worker::applyTopology); empty for a pool with no replication, spread or warm-up.
  std::vector<std::shared_ptr<const PoolHandler>> handlers;
  PoolTls tls;  // the TLS contexts of the snapshot's config (pool_security.h)
  protocol::RequestParser parser;
  // Backends by identity; by_index follows the snapshot's server order (what route() returns).
  std::unordered_map<std::string, std::unique_ptr<BackendServer>> servers;
  std::vector<BackendServer*> by_index;
  // Memory budget of the pool's clients on this worker (memory_budget.h): held and unsent reply
  // bytes, and large requests being received. Sessions waiting for the latter, unread.
  // replies_reserve is the eighth of the replies' share kept for clients that hold almost nothing
  // (ClientSession::kSmallClient): held reply bytes of such a client go there when
  // replies_budget is full, so other clients' holdings never make a small reply fail.
  MemoryBudget replies_budget;
  MemoryBudget replies_reserve;
  MemoryBudget inputs_budget;
  std::shared_ptr<stats::PoolMemory> memory;  // both budgets' use and limit, for /metrics
  std::vector<RequestOwner*> input_waiters;
  std::vector<RequestOwner*> input_holders;  // sessions holding an input reservation
  bool removed = false;                  // the pool left the config: its sessions drain and close
  std::unique_ptr<WarmupWindow> warmup;  // open after a membership change (warmup_window)
  // The pool's most requested keys on this worker in the current window (null: hot_keys off);
  // the worker publishes and clears it each window (stats/hot_key_board.h).
  std::unique_ptr<stats::HotKeySketch> hot_keys;
  int64_t hot_keys_since_ms = 0;  // wall clock, the current window's start

  // `stats detail` (stats/prefix_stats.h): the pool's switch, shared by the workers, and this
  // worker's table. With detail off a request pays one load and one branch (detailOn()).
  std::shared_ptr<stats::PrefixStats> detail;
  stats::PrefixCounts* detail_counts = nullptr;
  const std::atomic<bool>* detail_on = &stats::kPrefixStatsOff;
  bool detailOn() const { return detail_on->load(std::memory_order_relaxed); }
  void countDetail(std::string_view key, stats::PrefixOp op) {
    std::string_view prefix;
    if (detail_counts != nullptr && stats::keyPrefix(key, detail->delimiter(), &prefix)) {
      detail_counts->record(prefix, op);
    }
  }

  // The pool's spread keys as the main thread last published them (null: none); see
  // backend/hot_spread.h.
  std::shared_ptr<const SpreadSet> spread;

  // The key's spread entry, if it has one and the set is for the snapshot in force.
  const std::shared_ptr<SpreadEntry>* spreadEntry(std::string_view key) const {
    if (!spread || spread->entries.empty() || spread->topology != topology) {
      return nullptr;
    }
    return spread->find(key);
  }

  // A routed listener (config `routes`): its keys go to other pools by prefix; it has no
  // servers of its own. `route_table` maps a key to its index in `routes`.
  std::vector<RouteRuntime> routes;
  routing::PrefixTable route_table;
  // The pool a routed listener's keyless commands are tagged with (the default route's, else
  // the first route's); their stats views are merged over every pool the routes serve from
  // (dispatch/serving_pools.h).
  PoolRuntime* home = nullptr;
  bool routed() const { return !routes.empty(); }

  const config::PoolConfig& config() const { return topology->config; }
  uint32_t route(std::string_view key) const { return topology->router->route(key); }
  // The server that holds `key` now, or null once a reload removed the pool (its server list is
  // then empty and its servers are draining). For code that runs after a request was dispatched
  // (a backend's reply to it): a reload may have happened in between.
  BackendServer* currentServer(std::string_view key) const {
    if (removed || by_index.empty()) {
      return nullptr;
    }
    const uint32_t i = route(key);
    return i < by_index.size() ? by_index[i] : nullptr;
  }
};

}  // namespace mcring::core
