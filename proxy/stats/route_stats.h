// What a worker counts for one route of a listener (config::RouteConfig), published for the
// admin endpoint (`stats routes`, /metrics mcring_route_*, the console's routes panel).
//
// One writer (the worker that dispatches the route's requests), read by other threads; the
// list's lock guards only the list (taken when a route first appears on a worker, and by
// readers). Label values are the config's own listener and route names, so they are bounded by
// the config.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace mcring::stats {

struct RouteStats {
  RouteStats(std::string listener_name, std::string route_name)
      : listener(std::move(listener_name)), route(std::move(route_name)) {}
  const std::string listener;                // the pool whose `routes` this is
  const std::string route;                   // the prefix, or "default"
  std::atomic<uint64_t> requests{0};         // requests sent (a multi-get once per route it takes)
  std::atomic<uint64_t> errors{0};           // answered an error (SERVER_ERROR, unavailable)
  std::atomic<uint64_t> rate_limited{0};     // refused by the route's rate_limit
  std::atomic<uint64_t> failovers{0};        // sent on to the next pool of `failover`
  std::atomic<uint64_t> shadow_sent{0};      // copies sent to the shadow pool
  std::atomic<uint64_t> shadow_dropped{0};   // copies not sent: the shadow's queue was full
  std::atomic<uint64_t> shadow_compared{0};  // shadowed reads whose two answers were compared
  std::atomic<uint64_t> shadow_agreed{0};    // ...that agreed (hit or miss, and value digest)
};

class RouteStatsList {
 public:
  // The route's counters on this worker (created on first use, kept across reloads).
  std::shared_ptr<RouteStats> add(const std::string& listener, const std::string& route);
  std::vector<std::shared_ptr<const RouteStats>> snapshot() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<RouteStats>> list_;
};

struct RouteTotals {
  uint64_t requests = 0;
  uint64_t errors = 0;
  uint64_t rate_limited = 0;
  uint64_t failovers = 0;
  uint64_t shadow_sent = 0;
  uint64_t shadow_dropped = 0;
  uint64_t shadow_compared = 0;
  uint64_t shadow_agreed = 0;
};
// Per (listener, route), summed over workers.
std::map<std::pair<std::string, std::string>, RouteTotals> sumRouteStats(
    const std::vector<const RouteStatsList*>& lists);

}  // namespace mcring::stats
