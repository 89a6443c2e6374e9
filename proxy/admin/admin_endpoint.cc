// AdminEndpoint: renders the proxy's state for HTTP clients and accepts reload requests.
#include "proxy/admin/admin_endpoint.h"

#include <map>

#include "mcring_version.h"
#include "proxy/admin/console_page.h"
#include "proxy/admin/hot_key_watch.h"
#include "proxy/admin/membership_monitor.h"
#include "proxy/admin/slow_report.h"
#include "proxy/admin/what_if.h"
#include "proxy/common/clock.h"
#include "proxy/common/json.h"
#include "proxy/common/log.h"

namespace mcring::core {

bool AdminEndpoint::configure(AdminAccessOptions access, std::string* error) {
  return access_.init(std::move(access), error);
}

bool AdminEndpoint::open(net::EventLoop& loop, const std::string& address, uint16_t port,
                         std::string* error, int inherited_fd) {
  net::HttpLimits limits;
  limits.max_connections = kMaxConnections;
  limits.request_timeout_ms = kRequestTimeoutMs;
  limits.reply_timeout_ms = kReplyTimeoutMs;
  net::HttpServerEvents events;
  events.connection_shed = [this] { counters_.countAdminConnectionShed(); };
  events.connection_timed_out = [this] { counters_.countAdminRequestTimeout(); };
  events.accept_error = [this](int) { counters_.countAcceptError(); };
  server_ = net::HttpServer::open(
      loop, address, port, [this](const net::HttpRequest& request) { return handle(request); },
      error, limits, std::move(events), inherited_fd);
  return server_ != nullptr;
}

net::HttpResponse AdminEndpoint::handle(const net::HttpRequest& request) {
  const std::string& method = request.method;
  const std::string& path = request.path;
  net::HttpResponse r;
  if (path == "/reload") {
    if (method != "POST") {
      return {405, "text/plain; charset=utf-8", "use POST /reload\n", {}};
    }
    AdminAccess::Verdict verdict = access_.checkMutation(request);
    if (verdict.status != 0) {
      counters_.countAdminRequestRefused();
      MCRING_LOG_LIMITED(Info, "admin refused", "admin: POST %s from %s refused (%d): %s",
                         path.c_str(), request.peer.c_str(), verdict.status,
                         verdict.message.c_str());
      net::HttpResponse refused{verdict.status, "text/plain; charset=utf-8", verdict.message, {}};
      if (verdict.status == 401) {
        refused.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"mcring admin\"");
      }
      return refused;
    }
    proxy_.reload("admin");
    auto recent = proxy_.reloads().recent();
    r.content_type = "application/json";
    r.body = reloadsJson();
    if (!recent.empty() && recent.back().result == ReloadResult::Failed) {
      r.status = 422;
    }
    return r;
  }
  if (path.starts_with("/whatif/")) {
    if (method != "POST") {
      return {405, "text/plain; charset=utf-8", "use POST /whatif/<pool>\n", {}};
    }
    return whatIf(request);
  }
  if (method != "GET" && method != "HEAD") {
    return {405, "text/plain; charset=utf-8", "method not allowed\n", {}};
  }
  if (AdminAccess::Verdict verdict = access_.checkView(request); verdict.status != 0) {
    counters_.countAdminRequestRefused();
    MCRING_LOG_LIMITED(Info, "admin refused", "admin: %s %s from %s refused (%d): %s",
                       method.c_str(), path.c_str(), request.peer.c_str(), verdict.status,
                       verdict.message.c_str());
    return {verdict.status, "text/plain; charset=utf-8", verdict.message, {}};
  }
  if (path == "/") {
    r.content_type = "text/html; charset=utf-8";
    r.body = consolePage();
    // Everything is inline; the page may talk to this endpoint only, and not be framed (its
    // reload button).
    r.headers.emplace_back("Content-Security-Policy",
                           "default-src 'none'; script-src 'unsafe-inline'; "
                           "style-src 'unsafe-inline'; img-src data:; connect-src 'self'; "
                           "base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    r.headers.emplace_back("X-Frame-Options", "DENY");
    r.headers.emplace_back("Cache-Control", "no-cache");
  } else if (path == "/healthz") {
    if (proxy_.stopping()) {
      return {503, "text/plain; charset=utf-8", "stopping\n", {}};
    }
    r.body = "ok\n";
  } else if (path == "/metrics") {
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = metrics();
  } else if (path == "/stats") {
    r.content_type = "application/json";
    r.body = statsJson();
  } else if (path == "/reloads") {
    r.content_type = "application/json";
    r.body = reloadsJson();
  } else if (path == "/events") {
    r.content_type = "application/json";
    r.body = eventsJson();
  } else if (path == "/backends") {
    r.content_type = "application/json";
    r.body = backendsJson();
  } else if (path == "/timeline") {
    r.content_type = "application/json";
    r.body = timelineJson();
  } else if (path == "/hotkeys") {
    r.content_type = "application/json";
    r.body = hotKeysJson();
  } else if (path == "/routes") {
    r.content_type = "application/json";
    r.body = routesJson(proxy_.reporter().routeReport());
  } else if (path == "/slow") {
    r.content_type = "application/json";
    r.body = slowRequestsJson(proxy_.reporter().topology().get());
  } else if (path == "/prefixes") {
    r.content_type = "application/json";
    r.body = traffic_.prefixesJson(common::wallClockMs());
  } else if (path == "/clients") {
    r.content_type = "application/json";
    r.body = traffic_.clientsJson(common::wallClockMs());
  } else {
    return {
        404,
        "text/plain; charset=utf-8",
        "not found; try / (the console) /healthz /metrics /stats /backends /timeline /reloads "
        "/events /hotkeys /routes /slow /prefixes /clients, POST /whatif/<pool>, POST /reload\n",
        {}};
  }
  return r;
}

std::string AdminEndpoint::metrics() const {
  const StatsReporter& rep = proxy_.reporter();
  std::string out;
  auto metric = [&](const std::string& name, const char* type, const char* help,
                    const std::string& value) {
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " +
           value + "\n";
  };
  // The proxy-wide backend_* totals are left out: they are the sums of the labelled
  // mcring_backend_* families below, and would collide with their names.
#define MCRING_X(name, kind, help)                                                            \
  if (!std::string_view(#name).starts_with("backend_")) {                                     \
    metric(stats::MetricKind::kind == stats::MetricKind::Counter ? "mcring_" #name "_total"   \
                                                                 : "mcring_" #name,           \
           stats::MetricKind::kind == stats::MetricKind::Counter ? "counter" : "gauge", help, \
           std::to_string(rep.sum(&stats::WorkerCounters::name)));                            \
  }
  MCRING_WORKER_COUNTERS(MCRING_X)
#undef MCRING_X
  metric("mcring_rejected_connections_total", "counter",
         "client connections turned away by a pool's client_connections limit",
         std::to_string(rep.rejectedConnections()));
  metric("mcring_accept_errors_total", "counter",
         "accept() failures on client and admin listeners (e.g. out of file descriptors); each "
         "pauses the listener 100 ms, doubling to 1 s",
         std::to_string(rep.acceptErrors()));
  metric("mcring_admin_connections_shed_total", "counter",
         "admin connections closed to stay within the admin connection cap",
         std::to_string(rep.adminConnectionsShed()));
  metric("mcring_admin_request_timeouts_total", "counter",
         "admin connections closed by the whole-request or reply deadline",
         std::to_string(rep.adminRequestTimeouts()));
  metric("mcring_admin_requests_refused_total", "counter",
         "admin requests refused (a foreign Host; for POST /reload also Origin or token)",
         std::to_string(rep.adminRequestsRefused()));
  metric("mcring_uptime_seconds", "gauge", "seconds since the proxy started",
         std::to_string(rep.uptime()));
  metric("mcring_config_generation", "gauge", "generation of the configuration in force",
         std::to_string(proxy_.generation()));
  metric("mcring_reloads_total", "counter", "reload attempts (any result)",
         std::to_string(proxy_.reloads().attempts()));
  metric("mcring_reload_failures_total", "counter", "reload attempts rejected",
         std::to_string(proxy_.reloads().failures()));
  {
    auto recent = proxy_.reloads().recent();
    metric("mcring_reload_last_failed", "gauge",
           "1 while the latest reload attempt failed (the previous config stays in force)",
           !recent.empty() && recent.back().result == ReloadResult::Failed ? "1" : "0");
  }
  if (auto topology = rep.topology()) {
    // Instances serving the same file show the same digest (the config-drift alert).
    out +=
        "# HELP mcring_config_info digest (XXH3-128) of the configuration file in force\n"
        "# TYPE mcring_config_info gauge\nmcring_config_info{digest=";
    common::appendJsonString(&out, topology->digest);
    out += "} 1\n";
    // Proxies that place a pool's keys alike show the same hash (the ring-disagreement alert).
    // A pool with routes has no ring of its own, and no series.
    out +=
        "# HELP mcring_topology_info hash of what places the pool's keys (hash, distribution, "
        "servers with names and weights, replicas)\n# TYPE mcring_topology_info gauge\n";
    for (const auto& pool : topology->pools) {
      if (pool->topology_hash.empty()) {
        continue;
      }
      out += "mcring_topology_info{pool=";
      common::appendJsonString(&out, pool->config.name);
      out += ",hash=\"" + pool->topology_hash + "\"} 1\n";
    }
  }
  backendMetrics(&out);
  appendRouteMetrics(rep.routeReport(), &out);
  traffic_.appendMetrics(common::wallClockMs(), &out);
  out += "# HELP mcring_build_info build information\n# TYPE mcring_build_info gauge\n";
  out += "mcring_build_info{version=\"" MCRING_VERSION "\"} 1\n";
  return out;
}

namespace {

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

std::string labels(const std::string& pool, const std::string& backend) {
  std::string l = "{pool=";
  common::appendJsonString(&l, pool);
  l += ",backend=";
  common::appendJsonString(&l, backend);
  return l + "}";
}

}  // namespace

// Per-backend families, one HELP/TYPE per family, labels pool and backend (host:port).
void AdminEndpoint::backendMetrics(std::string* out) const {
  std::vector<PoolReport> report = proxy_.reporter().backendReport();
  auto family = [&](const std::string& name, const char* type, const char* help, auto value) {
    *out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    for (const PoolReport& p : report) {
      for (const BackendRow& b : p.backends) {
        *out += name + labels(p.pool, b.totals.identity) + " " + value(b) + "\n";
      }
    }
  };
#define MCRING_X(field, kind, help)                                                                \
  family(stats::MetricKind::kind == stats::MetricKind::Counter ? "mcring_backend_" #field "_total" \
                                                               : "mcring_backend_" #field,         \
         stats::MetricKind::kind == stats::MetricKind::Counter ? "counter" : "gauge", help,        \
         [](const BackendRow& b) { return std::to_string(b.totals.field); });
  MCRING_BACKEND_COUNTERS(MCRING_X)
#undef MCRING_X
  family("mcring_backend_ejected", "gauge",
         "1 while the backend is out of the ring (auto_eject_hosts), else 0",
         [](const BackendRow& b) { return std::string(b.ejected ? "1" : "0"); });
  family("mcring_backend_distinct_keys", "gauge",
         "estimated distinct keys routed to the backend since start (HyperLogLog)",
         [](const BackendRow& b) { return fmt(b.totals.distinct_keys); });
  family("mcring_backend_ownership_ratio", "gauge",
         "share of the key-hash space the backend owns under the current topology",
         [](const BackendRow& b) { return fmt(b.ownership); });
  family("mcring_backend_curr_items", "gauge", "items the backend holds (its own stats)",
         [](const BackendRow& b) { return std::to_string(b.items.curr_items); });
  family("mcring_backend_bytes", "gauge", "bytes the backend holds (its own stats)",
         [](const BackendRow& b) { return std::to_string(b.items.bytes); });
  family("mcring_backend_evictions", "gauge", "evictions reported by the backend (its own stats)",
         [](const BackendRow& b) { return std::to_string(b.items.evictions); });
  // Latency as a Prometheus histogram with coarse buckets derived from the log-linear one.
  static const uint64_t kBounds[] = {50,    100,   250,   500,    1000,   2500,   5000,
                                     10000, 25000, 50000, 100000, 250000, 1000000};
  *out +=
      "# HELP mcring_backend_latency_seconds request sent to reply received\n"
      "# TYPE mcring_backend_latency_seconds histogram\n";
  for (const PoolReport& p : report) {
    for (const BackendRow& b : p.backends) {
      std::string l = labels(p.pool, b.totals.identity);
      l.pop_back();  // reopen the label set to add le
      uint64_t total = 0;
      for (uint64_t c : b.totals.latency) {
        total += c;
      }
      for (uint64_t bound : kBounds) {
        uint64_t cum = 0;
        for (int i = 0; i < stats::LatencyHistogram::kBuckets; ++i) {
          if (stats::LatencyHistogram::upperBound(i) <= bound) {
            cum += b.totals.latency[i];
          }
        }
        *out += "mcring_backend_latency_seconds_bucket" + l + ",le=\"" +
                fmt(static_cast<double>(bound) / 1e6) + "\"} " + std::to_string(cum) + "\n";
      }
      *out += "mcring_backend_latency_seconds_bucket" + l + ",le=\"+Inf\"} " +
              std::to_string(total) + "\n";
      // The sum is estimated from bucket bounds (the histogram keeps counts only).
      double sum = 0;
      for (int i = 0; i < stats::LatencyHistogram::kBuckets; ++i) {
        sum += static_cast<double>(b.totals.latency[i]) *
               static_cast<double>(stats::LatencyHistogram::upperBound(i));
      }
      *out += "mcring_backend_latency_seconds_sum" + labels(p.pool, b.totals.identity) + " " +
              fmt(sum / 1e6) + "\n";
      *out += "mcring_backend_latency_seconds_count" + labels(p.pool, b.totals.identity) + " " +
              std::to_string(total) + "\n";
    }
  }
  auto poolFamily = [&](const char* name, const char* help, auto value) {
    *out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n";
    for (const PoolReport& p : report) {
      std::string l = "{pool=";
      common::appendJsonString(&l, p.pool);
      *out += std::string(name) + l + "} " + fmt(value(p)) + "\n";
    }
  };
  poolFamily("mcring_pool_imbalance_requests", "max/mean of requests over the pool's backends",
             [](const PoolReport& p) { return p.imbalance.requests; });
  poolFamily("mcring_pool_imbalance_distinct_keys",
             "max/mean of distinct keys over the pool's backends",
             [](const PoolReport& p) { return p.imbalance.distinct_keys; });
  poolFamily("mcring_pool_imbalance_ownership", "max/mean of keyspace ownership",
             [](const PoolReport& p) { return p.imbalance.ownership; });
  poolFamily("mcring_pool_imbalance_items", "max/mean of items held (backends' stats)",
             [](const PoolReport& p) { return p.imbalance.items; });
  // The memory budget per pool (summed over workers, each of which has its share).
  const std::map<std::string, stats::PoolMemoryTotals> memory = proxy_.reporter().poolMemory();
  auto memoryFamily = [&](const char* name, const char* help, auto value) {
    *out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n";
    for (const PoolReport& p : report) {
      auto it = memory.find(p.pool);
      std::string l = "{pool=";
      common::appendJsonString(&l, p.pool);
      *out += std::string(name) + l + "} " +
              std::to_string(it == memory.end() ? 0 : value(it->second)) + "\n";
    }
  };
  memoryFamily("mcring_pool_buffer_bytes",
               "bytes held for the pool's clients under its memory budget: replies held and "
               "unsent, large requests being received",
               [](const stats::PoolMemoryTotals& t) { return t.used; });
  memoryFamily("mcring_pool_buffer_limit_bytes",
               "the pool's memory budget: buffer_limit, plus a quarter for large requests",
               [](const stats::PoolMemoryTotals& t) { return t.limit; });
  hotKeyMetrics(out);
  appendSlowMetrics(out, proxy_.reporter().topology().get());
  const MembershipMonitor* monitor = proxy_.reporter().monitor();
  if (monitor != nullptr) {
    auto events = monitor->events();
    *out +=
        "# HELP mcring_membership_events_total membership changes recorded\n"
        "# TYPE mcring_membership_events_total counter\n"
        "mcring_membership_events_total " +
        std::to_string(events.empty() ? 0 : events.back().id) + "\n";
    // Each pool's latest membership change: its prediction beside its measurement, so an alert
    // can compare the miss spike a change caused with the one it predicted.
    std::map<std::string, const MembershipEvent*> last;
    for (const MembershipEvent& e : events) {
      last[e.pool] = &e;
    }
    auto eventFamily = [&](const char* name, const char* help, auto value) {
      *out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n";
      for (const auto& [pool, e] : last) {
        std::string l = "{pool=";
        common::appendJsonString(&l, pool);
        *out += std::string(name) + l + "} " + fmt(value(*e)) + "\n";
      }
    };
    eventFamily("mcring_membership_last_change_timestamp_seconds",
                "unix time of the pool's latest membership change",
                [](const MembershipEvent& e) { return static_cast<double>(e.time); });
    eventFamily("mcring_membership_predicted_moved_ratio",
                "share of keys the pool's latest membership change was predicted to move",
                [](const MembershipEvent& e) { return e.predicted_moved; });
    eventFamily("mcring_membership_baseline_miss_ratio",
                "miss ratio before the pool's latest membership change (0 until measured)",
                [](const MembershipEvent& e) { return e.measured.baseline; });
    eventFamily("mcring_membership_peak_miss_ratio",
                "highest per-second miss ratio measured after the pool's latest membership change",
                [](const MembershipEvent& e) { return e.measured.peak; });
    eventFamily("mcring_membership_baseline_valid",
                "1 when the latest change had enough traffic before it to measure a baseline",
                [](const MembershipEvent& e) { return e.measured.baseline_valid ? 1.0 : 0.0; });
  }
}

// Hot keys: per pool, the hottest key's share and the backends' request-rate imbalance (no key
// in a label); with hot_key_metrics, the five hottest keys' rates, labelled by key (hashed or
// plain), so a label set is bounded by five keys a pool.
void AdminEndpoint::hotKeyMetrics(std::string* out) const {
  const HotKeyWatch* watch = proxy_.reporter().hotKeys();
  if (watch == nullptr) {
    return;
  }
  std::vector<PoolHotKeys> pools = watch->report(HotKeyWatch::kMetricKeys);
  auto topology = proxy_.reporter().topology();
  auto poolLabel = [](const std::string& pool) {
    std::string l = "{pool=";
    common::appendJsonString(&l, pool);
    return l;
  };
  *out +=
      "# HELP mcring_pool_request_rate_imbalance max/mean of the backends' keyed-request "
      "rates over the last second (1: even)\n# TYPE mcring_pool_request_rate_imbalance gauge\n";
  for (const PoolHotKeys& p : pools) {
    *out += "mcring_pool_request_rate_imbalance" + poolLabel(p.pool) + "} " +
            fmt(p.load_imbalance) + "\n";
  }
  *out +=
      "# HELP mcring_hot_key_top_share share of the pool's keyed requests taken by its "
      "hottest key over the last window\n# TYPE mcring_hot_key_top_share gauge\n";
  for (const PoolHotKeys& p : pools) {
    if (p.enabled) {
      *out += "mcring_hot_key_top_share" + poolLabel(p.pool) + "} " +
              fmt(p.keys.empty() ? 0 : p.keys.front().share) + "\n";
    }
  }
  *out +=
      "# HELP mcring_hot_key_sketch_bytes memory of the pool's hot-key sketches (all "
      "workers)\n# TYPE mcring_hot_key_sketch_bytes gauge\n";
  for (const PoolHotKeys& p : pools) {
    if (p.enabled) {
      *out += "mcring_hot_key_sketch_bytes" + poolLabel(p.pool) + "} " +
              std::to_string(p.memory_bytes) + "\n";
    }
  }
  *out +=
      "# HELP mcring_hot_key_rate requests per second of the pool's hottest keys "
      "(hot_key_metrics)\n# TYPE mcring_hot_key_rate gauge\n";
  for (const PoolHotKeys& p : pools) {
    const config::PoolTopology* pool = topology ? topology->findPool(p.pool) : nullptr;
    if (pool == nullptr || pool->config.hot_key_metrics == config::HotKeyMetrics::Off) {
      continue;
    }
    for (const HotKeyRow& k : p.keys) {
      std::string l = poolLabel(p.pool) + ",key=";
      // A Prometheus label value is UTF-8 with only \\, \" and \n escaped: a key with other bytes
      // (control, non-ASCII) is shown hashed even when plain is asked, so the scrape stays valid.
      common::appendJsonString(&l, pool->config.hot_key_metrics == config::HotKeyMetrics::Plain &&
                                           HotKeyWatch::showsAsIs(k.key, "\"\\")
                                       ? k.key
                                       : HotKeyWatch::hashedKey(k.key));
      *out += "mcring_hot_key_rate" + l + "} " + fmt(k.rate) + "\n";
    }
  }
  *out +=
      "# HELP mcring_hot_key_events_total keys that turned hot or cooled "
      "(hot_key_event_percent)\n# TYPE mcring_hot_key_events_total counter\n"
      "mcring_hot_key_events_total " +
      std::to_string(watch->eventCount()) + "\n";
}

namespace {

std::string spreadJson(const HotKeySpread& sp) {
  std::string out = "{\"phase\":\"" + sp.phase + "\",\"copies\":[";
  std::string filled = "[";
  std::string reads = "[";
  for (size_t c = 0; c < sp.copies.size(); ++c) {
    out += c == 0 ? "" : ",";
    common::appendJsonString(&out, sp.copies[c]);
    filled += std::string(c == 0 ? "" : ",") + (sp.filled[c] ? "true" : "false");
    reads += (c == 0 ? "" : ",") + std::to_string(sp.reads[c]);
  }
  return out + "],\"filled\":" + filled + "],\"reads\":" + reads +
         "],\"fills\":" + std::to_string(sp.fills) +
         ",\"fills_abandoned\":" + std::to_string(sp.fills_abandoned) +
         ",\"writes\":" + std::to_string(sp.writes) + "}";
}

}  // namespace

// GET /hotkeys: {"window_ms": .., "pools": {"<pool>": [{"key", "rate", "share", "error",
// "count", "backends", and for a spread key "spread": {"phase", "copies", "filled", "reads",
// "fills", "fills_abandoned", "writes"}}, ...]}, "spread": {"<pool>": [{"key", "spread"}, ...]}
// (every key of the spread set in force), "windows": {"<pool>": {...}}, "events": [...]}.
std::string AdminEndpoint::hotKeysJson() const {
  const HotKeyWatch* watch = proxy_.reporter().hotKeys();
  std::string out = "{\"window_ms\":" + std::to_string(stats::HotKeyBoard::kWindowMs);
  if (watch == nullptr) {
    return out + ",\"pools\":{},\"windows\":{},\"events\":[]}";
  }
  std::vector<PoolHotKeys> pools = watch->report();
  auto strings = [](const std::vector<std::string>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) {
      s += i == 0 ? "" : ",";
      common::appendJsonString(&s, v[i]);
    }
    return s + "]";
  };
  out += ",\"pools\":{";
  for (size_t i = 0; i < pools.size(); ++i) {
    const PoolHotKeys& p = pools[i];
    out += i == 0 ? "" : ",";
    common::appendJsonString(&out, p.pool);
    out += ":[";
    for (size_t j = 0; j < p.keys.size(); ++j) {
      const HotKeyRow& k = p.keys[j];
      out += j == 0 ? "{\"key\":" : ",{\"key\":";
      common::appendJsonString(&out, k.key);
      out += ",\"rate\":" + fmt(k.rate) + ",\"share\":" + fmt(k.share) +
             ",\"error\":" + fmt(k.error) + ",\"count\":" + std::to_string(k.count) +
             ",\"backends\":" + strings(k.backends);
      if (k.spread) {
        out += ",\"spread\":" + spreadJson(k.spread_state);
      }
      out += "}";
    }
    out += "]";
  }
  out += "},\"spread\":{";
  for (size_t i = 0; i < pools.size(); ++i) {
    const PoolHotKeys& p = pools[i];
    out += i == 0 ? "" : ",";
    common::appendJsonString(&out, p.pool);
    out += ":[";
    for (size_t j = 0; j < p.spread.size(); ++j) {
      out += j == 0 ? "{\"key\":" : ",{\"key\":";
      common::appendJsonString(&out, p.spread[j].first);
      out += ",\"spread\":" + spreadJson(p.spread[j].second) + "}";
    }
    out += "]";
  }
  out += "},\"windows\":{";
  for (size_t i = 0; i < pools.size(); ++i) {
    const PoolHotKeys& p = pools[i];
    out += i == 0 ? "" : ",";
    common::appendJsonString(&out, p.pool);
    out += ":{\"enabled\":" + std::string(p.enabled ? "true" : "false") +
           ",\"start_ms\":" + std::to_string(p.window_start_ms) +
           ",\"end_ms\":" + std::to_string(p.window_end_ms) +
           ",\"request_rate\":" + fmt(p.request_rate) +
           ",\"load_imbalance\":" + fmt(p.load_imbalance) +
           ",\"memory_bytes\":" + std::to_string(p.memory_bytes) +
           ",\"memory_bound_bytes\":" + std::to_string(p.memory_bound) + ",\"backend_rates\":{";
    for (size_t j = 0; j < p.backend_rates.size(); ++j) {
      out += j == 0 ? "" : ",";
      common::appendJsonString(&out, p.backend_rates[j].first);
      out += ":" + fmt(p.backend_rates[j].second);
    }
    out += "}}";
  }
  out += "},\"events\":[";
  std::vector<HotKeyEvent> events = watch->events();
  for (size_t i = 0; i < events.size(); ++i) {
    const HotKeyEvent& e = events[i];
    out += i == 0 ? "{" : ",{";
    out += "\"id\":" + std::to_string(e.id) + ",\"time_ms\":" + std::to_string(e.time_ms) +
           ",\"kind\":";
    common::appendJsonString(&out, e.kind);
    out += ",\"pool\":";
    common::appendJsonString(&out, e.pool);
    out += ",\"key\":";
    common::appendJsonString(&out, e.key);
    out += ",\"share\":" + fmt(e.share) + ",\"rate\":" + fmt(e.rate) +
           ",\"backends\":" + strings(e.backends) + "}";
  }
  return out + "]}";
}

std::string AdminEndpoint::eventsJson() const {
  std::string out = "[";
  const MembershipMonitor* monitor = proxy_.reporter().monitor();
  bool first = true;
  if (monitor != nullptr) {
    for (const MembershipEvent& e : monitor->events()) {
      out += first ? "" : ",";
      first = false;
      out += "{\"id\":" + std::to_string(e.id) + ",\"time\":" + std::to_string(e.time) +
             ",\"change_second\":" + std::to_string(e.change_second) + ",\"kind\":";
      common::appendJsonString(&out, e.kind);
      out += ",\"pool\":";
      common::appendJsonString(&out, e.pool);
      out += ",\"servers_before\":" + std::to_string(e.servers_before) +
             ",\"servers_after\":" + std::to_string(e.servers_after) + ",\"added\":[";
      for (size_t i = 0; i < e.added.size(); ++i) {
        out += i ? "," : "";
        common::appendJsonString(&out, e.added[i]);
      }
      out += "],\"removed\":[";
      for (size_t i = 0; i < e.removed.size(); ++i) {
        out += i ? "," : "";
        common::appendJsonString(&out, e.removed[i]);
      }
      out += "],\"warmup_window_ms\":" + std::to_string(e.warmup_window_ms) +
             ",\"prediction\":{\"method\":";
      common::appendJsonString(&out, e.method);
      out += ",\"moved_fraction\":" + fmt(e.predicted_moved) +
             ",\"modula_moved_fraction\":" + fmt(e.modula_moved) +
             ",\"ideal_moved_fraction\":" + fmt(e.ideal_moved) + ",\"warning\":";
      if (e.warning.empty()) {
        out += "null";
      } else {
        common::appendJsonString(&out, e.warning);
      }
      out += ",\"matrix\":[";
      for (size_t i = 0; i < e.cells.size(); ++i) {
        const auto& c = e.cells[i];
        out += i ? "," : "";
        out += "{\"from\":";
        common::appendJsonString(&out, c.from < e.before_ids.size() ? e.before_ids[c.from] : "");
        out += ",\"to\":";
        common::appendJsonString(&out, c.to < e.after_ids.size() ? e.after_ids[c.to] : "");
        out +=
            ",\"fraction\":" + fmt(c.fraction) + ",\"moved\":" + (c.moved ? "true" : "false") + "}";
      }
      const auto& m = e.measured;
      out += "]},\"measurement\":{\"baseline_valid\":" +
             std::string(m.baseline_valid ? "true" : "false") +
             ",\"baseline_miss_ratio\":" + fmt(m.baseline) + ",\"peak_miss_ratio\":" + fmt(m.peak) +
             ",\"spike\":" + (m.spike ? "true" : "false") +
             ",\"extra_misses\":" + fmt(m.extra_misses) +
             ",\"recovered\":" + (m.recovered ? "true" : "false") +
             ",\"recovery_seconds\":" + std::to_string(m.recovery_seconds) +
             "},\"judged\":" + (e.judged ? "true" : "false") + ",\"verdict\":";
      common::appendJsonString(&out, e.verdict);
      out += "}";
    }
  }
  out += "]\n";
  return out;
}

std::string AdminEndpoint::statsJson() const {
  const StatsReporter& rep = proxy_.reporter();
  std::string out =
      "{\"version\":\"" MCRING_VERSION "\",\"uptime\":" + std::to_string(rep.uptime()) +
      ",\"config_generation\":" + std::to_string(proxy_.generation()) +
      ",\"reloads\":" + std::to_string(proxy_.reloads().attempts()) +
      ",\"reload_failures\":" + std::to_string(proxy_.reloads().failures()) +
      ",\"reload_last_error\":";
  common::appendJsonString(&out, proxy_.reloads().lastError());
  out += ",\"counters\":{";
  bool first = true;
#define MCRING_X(name, kind, help)                                                 \
  out += std::string(first ? "" : ",") +                                           \
         "\"" #name "\":" + std::to_string(rep.sum(&stats::WorkerCounters::name)); \
  first = false;
  MCRING_WORKER_COUNTERS(MCRING_X)
#undef MCRING_X
  out += "}}\n";
  return out;
}

std::string AdminEndpoint::reloadsJson() const {
  std::string out = "[";
  bool first = true;
  for (const ReloadRecord& r : proxy_.reloads().recent()) {
    out += first ? "" : ",";
    first = false;
    out +=
        "{\"id\":" + std::to_string(r.id) + ",\"time\":" + std::to_string(r.time) + ",\"source\":";
    common::appendJsonString(&out, r.source);
    out += ",\"result\":\"" + std::string(reloadResultName(r.result)) +
           "\",\"generation\":" + std::to_string(r.generation) + ",\"diff\":";
    common::appendJsonString(&out, r.diff);
    out += ",\"error\":";
    common::appendJsonString(&out, r.error);
    out += "}";
  }
  out += "]\n";
  return out;
}

}  // namespace mcring::core
