// The views the console (GET /) reads beside /stats, /events and /reloads: /backends (each pool's
// ring and servers), /timeline (per-second lookups and misses) and POST /whatif/<pool>. Each is
// one read of state the proxy keeps anyway (the /metrics backend report, the membership
// monitor's timelines), so a page polling them every few seconds costs little.
#include <cctype>
#include <cstdio>
#include <string>

#include "proxy/admin/admin_endpoint.h"
#include "proxy/admin/membership_monitor.h"
#include "proxy/admin/what_if.h"
#include "proxy/common/json.h"
#include "proxy/common/log.h"
#include "proxy/routing/hash.h"
#include "proxy/routing/router.h"

namespace mcring::core {
namespace {

// Seconds of the timeline a /timeline answer carries (the monitor keeps 1024).
constexpr size_t kTimelineSeconds = 600;

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

// "%41b" -> "A": the page sends the pool name through encodeURIComponent.
std::string percentDecoded(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

std::string AdminEndpoint::backendsJson() const {
  const StatsReporter& rep = proxy_.reporter();
  std::shared_ptr<const config::Topology> topology = rep.topology();
  std::string out = "{\"pools\":[";
  bool first_pool = true;
  for (const PoolReport& p : rep.backendReport()) {
    out += first_pool ? "{\"name\":" : ",{\"name\":";
    first_pool = false;
    common::appendJsonString(&out, p.pool);
    const config::PoolTopology* pt = topology ? topology->findPool(p.pool) : nullptr;
    if (pt != nullptr) {
      out += ",\"distribution\":";
      common::appendJsonString(&out, routing::distributionName(pt->config.routing.distribution));
      out += ",\"hash\":";
      common::appendJsonString(&out, routing::hashFunctionName(pt->config.routing.hash));
      out += ",\"topology_hash\":";
      common::appendJsonString(&out, pt->topology_hash);
      out += ",\"warmup_window_ms\":" + std::to_string(pt->config.warmup_window_ms);
    }
    out += ",\"imbalance\":{\"requests\":" + number(p.imbalance.requests) +
           ",\"distinct_keys\":" + number(p.imbalance.distinct_keys) +
           ",\"ownership\":" + number(p.imbalance.ownership) +
           ",\"items\":" + number(p.imbalance.items) + "},\"servers\":[";
    for (size_t i = 0; i < p.backends.size(); ++i) {
      const BackendRow& b = p.backends[i];
      out += i ? ",{\"identity\":" : "{\"identity\":";
      common::appendJsonString(&out, b.totals.identity);
      out += ",\"name\":";
      common::appendJsonString(&out, b.totals.name);
      out += ",\"state\":";
      out += b.ejected ? "\"ejected\"" : b.in_topology ? "\"up\"" : "\"draining\"";
      out += ",\"weight\":" + std::to_string(b.weight) + ",\"ownership\":" + number(b.ownership) +
             ",\"distinct_keys\":" + number(b.totals.distinct_keys) +
             ",\"latency_us\":{\"p50\":" + std::to_string(b.p50) +
             ",\"p90\":" + std::to_string(b.p90) + ",\"p99\":" + std::to_string(b.p99) +
             ",\"p999\":" + std::to_string(b.p999) +
             "},\"items\":{\"curr_items\":" + std::to_string(b.items.curr_items) +
             ",\"bytes\":" + std::to_string(b.items.bytes) +
             ",\"evictions\":" + std::to_string(b.items.evictions) + "},\"counters\":{";
      bool first = true;
#define MCRING_X(field, kind, help)                                                         \
  out += std::string(first ? "\"" : ",\"") + #field "\":" + std::to_string(b.totals.field); \
  first = false;
      MCRING_BACKEND_COUNTERS(MCRING_X)
#undef MCRING_X
      out += "}}";
    }
    out += "]}";
  }
  out += "]}\n";
  return out;
}

std::string AdminEndpoint::timelineJson() const {
  const StatsReporter& rep = proxy_.reporter();
  const MembershipMonitor* monitor = rep.monitor();
  std::shared_ptr<const config::Topology> topology = rep.topology();
  std::string out =
      "{\"now_second\":" + std::to_string(monitor ? monitor->nowSecond() : 0) + ",\"pools\":[";
  if (monitor != nullptr && topology) {
    for (size_t k = 0; k < topology->pools.size(); ++k) {
      const std::string& name = topology->pools[k]->config.name;
      std::vector<stats::MissPoint> series = monitor->poolSeries(name);
      if (series.size() > kTimelineSeconds) {
        series.erase(series.begin(), series.end() - kTimelineSeconds);
      }
      out += k ? ",{\"name\":" : "{\"name\":";
      common::appendJsonString(&out, name);
      out += ",\"first_second\":" + std::to_string(series.empty() ? 0 : series.front().second);
      std::string lookups = "[";
      std::string misses = "[";
      for (size_t i = 0; i < series.size(); ++i) {
        lookups += (i ? "," : "") + std::to_string(series[i].lookups());
        misses += (i ? "," : "") + std::to_string(series[i].misses);
      }
      out += ",\"lookups\":" + lookups + "],\"misses\":" + misses + "]}";
    }
  }
  out += "]}\n";
  return out;
}

net::HttpResponse AdminEndpoint::whatIf(const net::HttpRequest& request) {
  if (AdminAccess::Verdict verdict = access_.checkComputation(request); verdict.status != 0) {
    counters_.countAdminRequestRefused();
    MCRING_LOG_LIMITED(Info, "admin refused", "admin: POST %s from %s refused (%d): %s",
                       request.path.c_str(), request.peer.c_str(), verdict.status,
                       verdict.message.c_str());
    return {verdict.status, "text/plain; charset=utf-8", verdict.message, {}};
  }
  std::shared_ptr<const config::Topology> topology = proxy_.reporter().topology();
  if (!topology) {
    return {503, "text/plain; charset=utf-8", "no configuration in force yet\n", {}};
  }
  const std::string pool = percentDecoded(std::string_view(request.path).substr(8));
  WhatIfAnswer answer = planWhatIf(*topology, pool, request.body);
  return {answer.status, "application/json", std::move(answer.body), {}};
}

}  // namespace mcring::core
