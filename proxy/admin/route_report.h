// One read of every route's counters beside its config: what `stats routes`, /metrics
// (mcring_route_*), GET /routes and the console's routes panel show.
//
// The rows follow the topology in force (listeners in config order, each listener's routes in
// config order), so a route that left the config is no longer shown or exported even though its
// workers keep its counters: label values stay bounded by the config.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/topology.h"
#include "proxy/stats/route_stats.h"

namespace mcring::core {

struct RouteRow {
  std::string listener;  // the pool whose `routes` these are
  config::RouteConfig config;
  stats::RouteTotals totals;  // summed over workers (0 before any request)

  // The route's name: its prefix, or "default".
  std::string name() const { return config.name(); }
  // shadow_agreed / shadow_compared; none while nothing was compared.
  std::optional<double> agreement() const;
};

std::vector<RouteRow> buildRouteReport(
    const config::Topology& topology,
    const std::map<std::pair<std::string, std::string>, stats::RouteTotals>& totals);

// `stats routes`: per route, `STAT route:<listener>:<route>:<field> <value>` lines (pool,
// shadow_pool, the counters, shadow_agreement), then END.
void appendRouteStatLines(const std::vector<RouteRow>& rows, std::string* out);

// The mcring_route_* families (HELP, TYPE, one sample per route; labels listener and route).
void appendRouteMetrics(const std::vector<RouteRow>& rows, std::string* out);

// GET /routes: {"listeners":[{"name":..,"routes":[{"route":..,"prefix":..,"default":..,
// "pool":..,"shadow":{"pool","percent","writes_only"}|null,"failover":[..],
// "failover_on_miss":..,"max_ttl":..,"rate_limit":{"requests_per_second","burst"}|null,
// "counters":{..},"shadow_agreement":<ratio>|null}]}]}
std::string routesJson(const std::vector<RouteRow>& rows);

}  // namespace mcring::core
