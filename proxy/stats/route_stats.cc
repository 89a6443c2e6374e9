#include "proxy/stats/route_stats.h"

namespace mcring::stats {

std::shared_ptr<RouteStats> RouteStatsList::add(const std::string& listener,
                                                const std::string& route) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& s : list_) {
    if (s->listener == listener && s->route == route) {
      return s;
    }
  }
  list_.push_back(std::make_shared<RouteStats>(listener, route));
  return list_.back();
}

std::vector<std::shared_ptr<const RouteStats>> RouteStatsList::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {list_.begin(), list_.end()};
}

std::map<std::pair<std::string, std::string>, RouteTotals> sumRouteStats(
    const std::vector<const RouteStatsList*>& lists) {
  std::map<std::pair<std::string, std::string>, RouteTotals> out;
  constexpr auto relaxed = std::memory_order_relaxed;
  for (const RouteStatsList* list : lists) {
    for (const auto& s : list->snapshot()) {
      RouteTotals& t = out[{s->listener, s->route}];
      t.requests += s->requests.load(relaxed);
      t.errors += s->errors.load(relaxed);
      t.rate_limited += s->rate_limited.load(relaxed);
      t.failovers += s->failovers.load(relaxed);
      t.shadow_sent += s->shadow_sent.load(relaxed);
      t.shadow_dropped += s->shadow_dropped.load(relaxed);
      t.shadow_compared += s->shadow_compared.load(relaxed);
      t.shadow_agreed += s->shadow_agreed.load(relaxed);
    }
  }
  return out;
}

}  // namespace mcring::stats
