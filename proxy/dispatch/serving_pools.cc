// servingPools, distinctServers: the pools and servers of a routed listener's keyless views.
#include "proxy/dispatch/serving_pools.h"

#include <algorithm>
#include <string>
#include <unordered_set>

namespace mcring::core {

void servingPools(const PoolRuntime& listener, std::vector<PoolRuntime*>* out) {
  out->clear();
  auto add = [out](PoolRuntime* p) {
    if (p != nullptr && std::find(out->begin(), out->end(), p) == out->end()) {
      out->push_back(p);
    }
  };
  for (const RouteRuntime& route : listener.routes) {
    add(route.pool);
  }
  for (const RouteRuntime& route : listener.routes) {
    for (PoolRuntime* p : route.failover) {
      add(p);
    }
  }
}

void distinctServers(const std::vector<PoolRuntime*>& pools, std::vector<BackendServer*>* out) {
  out->clear();
  std::unordered_set<std::string> seen;
  for (const PoolRuntime* pool : pools) {
    for (BackendServer* server : pool->by_index) {
      if (seen.insert(server->address().toString()).second) {
        out->push_back(server);
      }
    }
  }
}

}  // namespace mcring::core
