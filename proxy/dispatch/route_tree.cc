#include "proxy/dispatch/route_tree.h"

#include "proxy/dispatch/pool_handlers.h"
#include "proxy/dispatch/route_handlers.h"

namespace mcring::core {

std::shared_ptr<const RouteHandler> buildRouteTree(const RouteRuntime& route) {
  const config::RouteConfig& rc = *route.config;
  std::unique_ptr<const RouteHandler> chain = std::make_unique<PoolRoute>(route.pool);
  if (!route.failover.empty()) {
    chain = std::make_unique<FailoverRoute>(route.failover, rc.failover_on_miss, std::move(chain));
  }
  if (route.shadow != nullptr && rc.shadow) {
    ShadowTarget target;
    target.pool = route.shadow;
    target.stats = route.stats.get();
    // percent of the 32-bit key hash space (shadow.h)
    target.below = (uint64_t{1} << 32) * rc.shadow->percent / 100;
    target.writes_only = rc.shadow->writes_only;
    chain = std::make_unique<ShadowRoute>(target, std::move(chain));
  }
  if (rc.max_ttl > 0) {
    chain = std::make_unique<TtlCapRoute>(rc.max_ttl, std::move(chain));
  }
  if (route.limit) {
    chain = std::make_unique<RateLimitRoute>(route.limit, route.stats.get(), std::move(chain));
  }
  return std::make_shared<CountRoute>(route.stats.get(), std::move(chain));
}

std::vector<std::shared_ptr<const PoolHandler>> buildPoolHandlers(const config::PoolConfig& pool) {
  std::vector<std::shared_ptr<const PoolHandler>> handlers;
  if (pool.routing.replicas > 1) {
    handlers.push_back(std::make_shared<ReplicationHandler>());
  }
  if (pool.hot_key_spread > 0) {
    handlers.push_back(std::make_shared<SpreadHandler>());
  }
  if (pool.warmup_window_ms > 0) {
    handlers.push_back(std::make_shared<WarmupHandler>());
  }
  return handlers;
}

}  // namespace mcring::core
