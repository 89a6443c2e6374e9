#include "proxy/admin/traffic_report.h"

#include <algorithm>
#include <cstdio>

#include "proxy/admin/stats_reporter.h"
#include "proxy/common/json.h"

namespace mcring::core {

namespace {

constexpr int64_t kMinIntervalMs = 1000;

std::string fmtRate(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

}  // namespace

std::string displayPrefix(std::string_view prefix) {
  std::string out;
  out.reserve(prefix.size());
  for (unsigned char c : prefix) {
    // A backslash too: else the prefix `\xff` (four bytes) and the byte 0xff would show alike,
    // two series with the same labels in /metrics (a scrape Prometheus rejects whole).
    if (c < 0x21 || c > 0x7e || c == '\\') {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::vector<PoolPrefixes> TrafficReport::prefixes(int64_t now_ms) {
  if (prefix_sample_.at_ms != 0 && now_ms - prefix_sample_.at_ms < kMinIntervalMs) {
    return prefix_sample_.report;
  }
  const stats::PrefixStatsRegistry* registry = reporter_.prefixStats();
  auto topology = reporter_.topology();
  if (registry == nullptr || !topology) {
    return {};
  }
  const auto all = registry->snapshot();
  const double seconds = prefix_sample_.at_ms == 0
                             ? static_cast<double>(std::max<uint64_t>(reporter_.uptime(), 1))
                             : static_cast<double>(now_ms - prefix_sample_.at_ms) / 1000.0;
  PrefixSample next;
  next.at_ms = now_ms;
  for (const auto& pool_topo : topology->pools) {
    const std::string& name = pool_topo->config.name;
    auto it = all.find(name);
    if (it == all.end()) {
      continue;
    }
    const stats::PrefixStats& ps = *it->second;
    PoolPrefixes p;
    p.pool = name;
    p.enabled = ps.enabled();
    p.delimiter = ps.delimiter();
    stats::PrefixRow overflow;
    overflow.prefix = stats::PrefixStats::overflowName(ps.delimiter());
    std::vector<stats::PrefixRow> rows = ps.rows(&overflow);
    p.prefixes = rows.size();
    if (overflow.requests() > 0) {
      rows.push_back(overflow);
    }
    std::vector<PrefixRate> rates;
    rates.reserve(rows.size());
    for (stats::PrefixRow& row : rows) {
      stats::PrefixRow before;
      auto prev = prefix_sample_.rows.find({name, row.prefix});
      if (prev != prefix_sample_.rows.end() && prev->second.requests() <= row.requests() &&
          prev->second.hits <= row.hits) {
        before = prev->second;
      }
      PrefixRate r;
      r.prefix = row.prefix;
      r.requests_per_s = static_cast<double>(row.requests() - before.requests()) / seconds;
      r.hits_per_s = static_cast<double>(row.hits - before.hits) / seconds;
      r.totals = row;
      next.rows[{name, row.prefix}] = std::move(row);
      rates.push_back(std::move(r));
    }
    std::sort(rates.begin(), rates.end(), [](const PrefixRate& a, const PrefixRate& b) {
      if (a.requests_per_s != b.requests_per_s) {
        return a.requests_per_s > b.requests_per_s;
      }
      return a.totals.requests() != b.totals.requests() ? a.totals.requests() > b.totals.requests()
                                                        : a.prefix < b.prefix;
    });
    if (rates.size() > kTop) {
      rates.resize(kTop);
    }
    p.top = std::move(rates);
    next.report.push_back(std::move(p));
  }
  prefix_sample_ = std::move(next);
  return prefix_sample_.report;
}

std::vector<stats::ClientRate> TrafficReport::clients(int64_t now_ms) {
  if (clients_at_ms_ != 0 && now_ms - clients_at_ms_ < kMinIntervalMs) {
    return clients_report_;
  }
  std::map<std::string, stats::ClientTotals> now = reporter_.clients();
  const double seconds = clients_at_ms_ == 0
                             ? static_cast<double>(std::max<uint64_t>(reporter_.uptime(), 1))
                             : static_cast<double>(now_ms - clients_at_ms_) / 1000.0;
  clients_report_ = stats::topClients(now, clients_sample_, seconds, kTop);
  clients_sample_ = std::move(now);
  clients_at_ms_ = now_ms;
  return clients_report_;
}

void TrafficReport::appendMetrics(int64_t now_ms, std::string* out) {
  const std::vector<PoolPrefixes> pools = prefixes(now_ms);
  auto prefixLabels = [](const std::string& pool, const std::string& prefix) {
    std::string l = "{pool=";
    common::appendJsonString(&l, pool);
    l += ",prefix=";
    common::appendJsonString(&l, displayPrefix(prefix));  // printable ASCII: JSON's escapes are
    return l + "}";                                       // Prometheus's (\\ and \")
  };
  *out +=
      "# HELP mcring_prefix_requests_total gets, sets and deletes of keys with this prefix "
      "(stats detail; the pool's 10 busiest prefixes over the last interval)\n"
      "# TYPE mcring_prefix_requests_total counter\n";
  for (const PoolPrefixes& p : pools) {
    for (const PrefixRate& r : p.top) {
      *out += "mcring_prefix_requests_total" + prefixLabels(p.pool, r.prefix) + " " +
              std::to_string(r.totals.requests()) + "\n";
    }
  }
  *out +=
      "# HELP mcring_prefix_hits_total get hits of keys with this prefix (stats detail; the same "
      "prefixes)\n# TYPE mcring_prefix_hits_total counter\n";
  for (const PoolPrefixes& p : pools) {
    for (const PrefixRate& r : p.top) {
      *out += "mcring_prefix_hits_total" + prefixLabels(p.pool, r.prefix) + " " +
              std::to_string(r.totals.hits) + "\n";
    }
  }
  const std::vector<stats::ClientRate> top = clients(now_ms);
  auto clientLabel = [](const std::string& address) {
    std::string l = "{client=";
    common::appendJsonString(&l, address);
    return l;
  };
  *out +=
      "# HELP mcring_client_requests_total requests from this client address (the 10 busiest "
      "over the last interval)\n# TYPE mcring_client_requests_total counter\n";
  for (const stats::ClientRate& c : top) {
    *out += "mcring_client_requests_total" + clientLabel(c.address) + "} " +
            std::to_string(c.totals.requests) + "\n";
  }
  *out +=
      "# HELP mcring_client_bytes_total bytes read from (in) and written to (out) this client "
      "address (the same clients)\n# TYPE mcring_client_bytes_total counter\n";
  for (const stats::ClientRate& c : top) {
    *out += "mcring_client_bytes_total" + clientLabel(c.address) + ",direction=\"in\"} " +
            std::to_string(c.totals.bytes_in) + "\n";
    *out += "mcring_client_bytes_total" + clientLabel(c.address) + ",direction=\"out\"} " +
            std::to_string(c.totals.bytes_out) + "\n";
  }
}

std::string TrafficReport::prefixesJson(int64_t now_ms) {
  std::string out = "{\"pools\":{";
  bool first_pool = true;
  for (const PoolPrefixes& p : prefixes(now_ms)) {
    out += first_pool ? "" : ",";
    first_pool = false;
    common::appendJsonString(&out, p.pool);
    out += std::string(":{\"enabled\":") + (p.enabled ? "true" : "false") + ",\"delimiter\":";
    common::appendJsonString(&out, displayPrefix(std::string(1, p.delimiter)));
    out += ",\"prefixes\":" + std::to_string(p.prefixes) + ",\"top\":[";
    bool first = true;
    for (const PrefixRate& r : p.top) {
      out += first ? "{\"prefix\":" : ",{\"prefix\":";
      first = false;
      common::appendJsonString(&out, displayPrefix(r.prefix));
      out += ",\"requests_per_s\":" + fmtRate(r.requests_per_s) +
             ",\"hits_per_s\":" + fmtRate(r.hits_per_s) +
             ",\"get\":" + std::to_string(r.totals.gets) +
             ",\"hit\":" + std::to_string(r.totals.hits) +
             ",\"set\":" + std::to_string(r.totals.sets) +
             ",\"del\":" + std::to_string(r.totals.deletes) + "}";
    }
    out += "]}";
  }
  return out + "}}";
}

std::string TrafficReport::clientsJson(int64_t now_ms) {
  std::string out = "{\"clients\":[";
  bool first = true;
  for (const stats::ClientRate& c : clients(now_ms)) {
    out += first ? "{\"address\":" : ",{\"address\":";
    first = false;
    common::appendJsonString(&out, c.address);
    out += ",\"requests_per_s\":" + fmtRate(c.requests_per_s) +
           ",\"bytes_in_per_s\":" + fmtRate(c.bytes_in_per_s) +
           ",\"bytes_out_per_s\":" + fmtRate(c.bytes_out_per_s) +
           ",\"requests\":" + std::to_string(c.totals.requests) +
           ",\"bytes_in\":" + std::to_string(c.totals.bytes_in) +
           ",\"bytes_out\":" + std::to_string(c.totals.bytes_out) + "}";
  }
  return out + "]}";
}

}  // namespace mcring::core
