// buildBackendReport: joins per-worker backend stats, the topology's ownership and polled items.
#include "proxy/admin/backend_report.h"

#include <algorithm>

namespace mcring::core {
namespace {

double maxOverMean(const std::vector<double>& v) {
  if (v.empty()) {
    return 0;
  }
  double sum = 0;
  double mx = 0;
  for (double x : v) {
    sum += x;
    mx = std::max(mx, x);
  }
  double mean = sum / static_cast<double>(v.size());
  return mean > 0 ? mx / mean : 0;
}

}  // namespace

std::vector<PoolReport> buildBackendReport(
    const config::Topology& topology, const std::vector<const stats::BackendStatsList*>& lists,
    const std::map<std::pair<std::string, std::string>, BackendItems>& items,
    const std::set<std::pair<std::string, std::string>>& ejected) {
  std::vector<stats::BackendTotals> totals = stats::sumBackends(lists);
  std::vector<PoolReport> out;
  for (const auto& pool : topology.pools) {
    PoolReport report;
    report.pool = pool->config.name;
    // A pool with routes has no router (and no servers).
    std::vector<double> owned = pool->router ? pool->router->ownership() : std::vector<double>{};
    std::vector<double> req, keys, own, held;
    for (size_t i = 0; i < pool->config.servers.size(); ++i) {
      const auto& sc = pool->config.servers[i];
      BackendRow row;
      row.in_topology = true;
      row.ownership = i < owned.size() ? owned[i] : 0;
      row.weight = sc.spec.weight;
      row.totals.pool = report.pool;
      row.totals.identity = sc.identity();
      row.totals.name = sc.displayName();
      for (const auto& t : totals) {
        if (t.pool == report.pool && t.identity == row.totals.identity) {
          row.totals = t;
          break;
        }
      }
      auto it = items.find({report.pool, row.totals.identity});
      if (it != items.end()) {
        row.items = it->second;
      }
      row.p50 = stats::LatencyHistogram::percentile(row.totals.latency, 0.50);
      row.p90 = stats::LatencyHistogram::percentile(row.totals.latency, 0.90);
      row.p99 = stats::LatencyHistogram::percentile(row.totals.latency, 0.99);
      row.p999 = stats::LatencyHistogram::percentile(row.totals.latency, 0.999);
      req.push_back(static_cast<double>(row.totals.requests));
      keys.push_back(row.totals.distinct_keys);
      own.push_back(row.ownership);
      held.push_back(static_cast<double>(row.items.curr_items));
      report.backends.push_back(std::move(row));
    }
    // Ejected servers: not in the snapshot, shown with their last figures (if any).
    for (const auto& [pool_name, identity] : ejected) {
      if (pool_name != report.pool) {
        continue;
      }
      BackendRow row;
      row.ejected = true;
      row.totals.pool = pool_name;
      row.totals.identity = identity;
      row.totals.name = identity;
      for (const auto& t : totals) {
        if (t.pool == pool_name && t.identity == identity) {
          row.totals = t;
        }
      }
      report.backends.push_back(std::move(row));
    }
    // Servers a reload removed that are still draining.
    for (const auto& t : totals) {
      if (t.pool != report.pool) {
        continue;
      }
      bool listed =
          std::any_of(report.backends.begin(), report.backends.end(),
                      [&](const BackendRow& r) { return r.totals.identity == t.identity; });
      if (!listed) {
        BackendRow row;
        row.totals = t;
        report.backends.push_back(std::move(row));
      }
    }
    report.imbalance = {maxOverMean(req), maxOverMean(keys), maxOverMean(own), maxOverMean(held)};
    out.push_back(std::move(report));
  }
  return out;
}

}  // namespace mcring::core
