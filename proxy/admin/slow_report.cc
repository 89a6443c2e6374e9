#include "proxy/admin/slow_report.h"

#include "proxy/common/json.h"
#include "proxy/stats/slow_requests.h"

namespace mcring::core {

void appendSlowMetrics(std::string* out, const config::Topology* topology) {
  *out +=
      "# HELP mcring_slow_requests_total requests whose reply took longer than the pool's "
      "slow_request_ms\n# TYPE mcring_slow_requests_total counter\n";
  if (topology == nullptr) {
    return;
  }
  const stats::SlowRequests& slow = stats::SlowRequests::instance();
  for (const auto& pool : topology->pools) {
    std::string line = "mcring_slow_requests_total{pool=";
    common::appendJsonString(&line, pool->config.name);
    *out += line + "} " + std::to_string(slow.count(pool->config.name)) + "\n";
  }
}

std::string slowRequestsJson(const config::Topology* topology) {
  const stats::SlowRequests& slow = stats::SlowRequests::instance();
  std::string out = "{\"pools\":[";
  bool first = true;
  if (topology != nullptr) {
    for (const auto& pool : topology->pools) {
      out += first ? "{\"pool\":" : ",{\"pool\":";
      first = false;
      common::appendJsonString(&out, pool->config.name);
      out += ",\"slow_request_ms\":" + std::to_string(pool->config.slow_request_ms) +
             ",\"count\":" + std::to_string(slow.count(pool->config.name)) + "}";
    }
  }
  out += "],\"requests\":[";
  std::vector<stats::SlowRequest> recent = slow.recent();
  first = true;
  for (auto it = recent.rbegin(); it != recent.rend(); ++it) {
    const stats::SlowRequest& s = *it;
    out += first ? "{" : ",{";
    first = false;
    auto field = [&](const char* name, const std::string& value) {
      out += "\"";
      out += name;
      out += "\":";
      common::appendJsonString(&out, value);
      out += ",";
    };
    out += "\"id\":" + std::to_string(s.id) + ",\"time_ms\":" + std::to_string(s.time_ms) + ",";
    field("pool", s.pool);
    field("cmd", s.verb);
    field("key", s.keys == 0 ? std::string("-") : s.key);
    out += "\"keys\":" + std::to_string(s.keys) + ",";
    field("status", s.status);
    field("backend", s.backend);
    field("client", s.client);
    field("route", s.route);
    out += "\"elapsed_us\":" + std::to_string(s.elapsed_us) +
           ",\"slow_request_ms\":" + std::to_string(s.threshold_ms) + "}";
  }
  out += "]}";
  return out;
}

}  // namespace mcring::core
