// What a routed listener's keyless views (memcached's stats views, `version`, `lru_crawler
// metadump`: stats_views.h, metadump.h) are asked of: the pools that serve its keys, and their
// servers, each memcached once.
//
// A route's pool and its failover pools serve its keys, so their items and counters are the
// listener's; a shadow pool answers no client (its copies' replies are dropped), so it is left
// out. flush_all reaches shadow pools too (Dispatcher::routedServers): it must not leave a
// migration's new pool holding what the client believes gone.
#pragma once

#include <vector>

#include "proxy/backend/backend_server.h"
#include "proxy/backend/pool_runtime.h"

namespace mcring::core {

// The listener's routes' pools, then each route's failover pools, in route order, each once.
void servingPools(const PoolRuntime& listener, std::vector<PoolRuntime*>* out);

// The servers of `pools`, in order, each address once: a memcached that two pools name (each
// pool has a BackendServer of its own for it) is asked once, over the first pool's connections,
// so a merged view counts its items once.
void distinctServers(const std::vector<PoolRuntime*>& pools, std::vector<BackendServer*>* out);

}  // namespace mcring::core
