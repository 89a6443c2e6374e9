// What a change of a listener's routes does to its keys, for `mcring plan`: per key family (the
// keys under one prefix of either side, and the keys no prefix matches), the route and pool
// before and after, and whether the family moves to another pool.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace mcring::cli {

struct RouteFamily {
  std::string prefix;  // the family: keys starting with it and with no longer prefix; "" = others
  // "sess:", "default", "no route" (answered SERVER_ERROR), or "servers" for a pool that had or
  // has no routes (its own servers take the keys).
  std::string before_route;
  std::string before_pool;  // "" when no route
  std::string after_route;
  std::string after_pool;
  bool moves() const { return before_pool != after_pool; }
};

struct RoutePlan {
  std::string pool;
  std::vector<RouteFamily> families;  // prefixes in order, the other keys last
  size_t moving() const;
};

// For a pool with routes on at least one side.
RoutePlan planRouteChange(const config::PoolConfig& before, const config::PoolConfig& after);

void renderRoutePlanHuman(const RoutePlan& plan, std::string* out);
// {"pool":..,"routes":[{"prefix":..,"before":{"route":..,"pool":..},"after":{..},"moves":..}]}
void appendRoutePlanJson(std::string* out, const RoutePlan& plan);

}  // namespace mcring::cli
