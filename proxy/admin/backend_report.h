// One read of every backend's state, per pool: what `stats backends`, /metrics and /stats show.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "config/topology.h"
#include "proxy/backend/backend_poller.h"
#include "proxy/stats/backend_stats.h"

namespace mcring::core {

struct BackendRow {
  stats::BackendTotals totals;  // pool, identity, name, counters, latency, distinct keys
  bool in_topology = false;     // false: draining after a reload removed it, or ejected
  bool ejected = false;         // out of the ring (auto_eject_hosts) until a probe succeeds
  double ownership = 0;         // share of the key-hash space it owns now
  uint32_t weight = 0;          // its weight in the config in force (0: not in the topology)
  BackendItems items;           // from the backend's own `stats`
  uint64_t p50 = 0, p90 = 0, p99 = 0, p999 = 0;  // µs
};

// max / mean over a pool's servers (1.0 = perfectly even; 0 when nothing to compare).
struct Imbalance {
  double requests = 0;
  double distinct_keys = 0;
  double ownership = 0;
  double items = 0;
};

struct PoolReport {
  std::string pool;
  std::vector<BackendRow> backends;
  Imbalance imbalance;
};

std::vector<PoolReport> buildBackendReport(
    const config::Topology& topology, const std::vector<const stats::BackendStatsList*>& lists,
    const std::map<std::pair<std::string, std::string>, BackendItems>& items,
    const std::set<std::pair<std::string, std::string>>& ejected = {});

}  // namespace mcring::core
