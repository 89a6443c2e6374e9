// A route's chain of handlers (route_handler.h), composed from its config in the order mcrouter
// nests its route handles: count, then rate_limit (a refused request costs nothing further),
// max_ttl (what every copy and the primary are sent with), shadow, failover, and the pool.
// Handlers the route does not configure are left out. Built per worker at each snapshot
// (Worker::applyRoutes), from the route's pools as resolved on that worker.
//
// Under a route's leaf (and under a listener with no routes) is its pool, whose own features are
// pool handlers (pool_handler.h): buildPoolHandlers lists the ones its config turns on.
#pragma once

#include <memory>
#include <vector>

#include "proxy/backend/pool_runtime.h"
#include "proxy/dispatch/pool_handler.h"
#include "proxy/dispatch/route_handler.h"

namespace mcring::core {

std::shared_ptr<const RouteHandler> buildRouteTree(const RouteRuntime& route);

// Replication (replicas > 1), spread (hot_key_spread), warm-up (warmup_window), in that order
// (pool_handlers.h says why); empty for a pool with none of them.
std::vector<std::shared_ptr<const PoolHandler>> buildPoolHandlers(const config::PoolConfig& pool);

}  // namespace mcring::core
