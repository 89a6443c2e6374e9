// Top prefixes (`stats detail`) and top clients by rate, for /metrics, GET /prefixes, GET /clients
// and the console. Rates are the difference between two reads of the cumulative counts at least
// a second apart (a read sooner gets the last rates again), so no timer runs for them. Admin
// (main) thread only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "proxy/stats/client_table.h"
#include "proxy/stats/prefix_stats.h"

namespace mcring::core {

class StatsReporter;

// A prefix as the views show it: bytes outside printable ASCII, and a backslash, as \xNN, so a
// label or a JSON string is always valid whatever bytes a key held, and two prefixes never show
// alike.
std::string displayPrefix(std::string_view prefix);

struct PrefixRate {
  std::string prefix;         // as counted (raw bytes); the overflow line's name for the overflow
  double requests_per_s = 0;  // gets + sets + deletes
  double hits_per_s = 0;
  stats::PrefixRow totals;
};

struct PoolPrefixes {
  std::string pool;
  bool enabled = false;
  char delimiter = ':';
  size_t prefixes = 0;  // counted (at most detail_max_prefixes)
  std::vector<PrefixRate> top;
};

class TrafficReport {
 public:
  // Rows shown: at most this many prefixes a pool and clients, so label sets stay bounded.
  static constexpr size_t kTop = 10;

  explicit TrafficReport(const StatsReporter& reporter) : reporter_(reporter) {}

  // The pools of the topology in force.
  std::vector<PoolPrefixes> prefixes(int64_t now_ms);
  std::vector<stats::ClientRate> clients(int64_t now_ms);

  // /metrics: mcring_prefix_requests_total and mcring_prefix_hits_total of each pool's kTop
  // busiest prefixes (pools with detail counted), mcring_client_requests_total and
  // mcring_client_bytes_total of the kTop busiest clients.
  void appendMetrics(int64_t now_ms, std::string* out);
  // GET /prefixes: {"pools": {"<pool>": {"enabled", "delimiter", "prefixes", "top": [{"prefix",
  // "requests_per_s", "hits_per_s", "get", "hit", "set", "del"}, ...]}}}.
  std::string prefixesJson(int64_t now_ms);
  // GET /clients: {"clients": [{"address", "requests_per_s", "bytes_in_per_s",
  // "bytes_out_per_s", "requests", "bytes_in", "bytes_out"}, ...]} (the kTop busiest).
  std::string clientsJson(int64_t now_ms);

 private:
  const StatsReporter& reporter_;
  struct PrefixSample {
    int64_t at_ms = 0;
    std::map<std::pair<std::string, std::string>, stats::PrefixRow> rows;  // (pool, prefix)
    std::vector<PoolPrefixes> report;
  };
  PrefixSample prefix_sample_;
  int64_t clients_at_ms_ = 0;
  std::map<std::string, stats::ClientTotals> clients_sample_;
  std::vector<stats::ClientRate> clients_report_;
};

}  // namespace mcring::core
