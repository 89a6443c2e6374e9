// A route's chain of handlers (route_handler.h), composed from its config in the order mcrouter
// nests its route handles: count, then rate_limit (a refused request costs nothing further),
// max_ttl (what every copy and the primary are sent with), shadow, failover, and the pool.
// Handlers the route does not configure are left out. Built per worker at each snapshot
// (Worker::applyRoutes), from the route's pools as resolved on that worker.
#pragma once

#include <memory>

#include "proxy/backend/pool_runtime.h"
#include "proxy/dispatch/route_handler.h"

namespace mcring::core {

std::shared_ptr<const RouteHandler> buildRouteTree(const RouteRuntime& route);

}  // namespace mcring::core
