// The routes' report and its three renderings: STAT lines, Prometheus text, JSON.
#include "proxy/admin/route_report.h"

#include <cstdio>
#include <set>

#include "proxy/common/json.h"

namespace mcring::core {
namespace {

// The counters in the order every rendering lists them: (name, field, help).
struct RouteCounter {
  const char* name;
  uint64_t stats::RouteTotals::*field;
  const char* help;
};
constexpr RouteCounter kCounters[] = {
    {"requests", &stats::RouteTotals::requests,
     "requests sent by the route (a multi-get once for each route its keys take)"},
    {"errors", &stats::RouteTotals::errors,
     "requests of the route answered an error (SERVER_ERROR, unavailable)"},
    {"rate_limited", &stats::RouteTotals::rate_limited,
     "requests refused by the route's rate_limit"},
    {"failovers", &stats::RouteTotals::failovers,
     "requests sent on to the next pool of the route's failover list"},
    {"shadow_sent", &stats::RouteTotals::shadow_sent, "copies sent to the route's shadow pool"},
    {"shadow_dropped", &stats::RouteTotals::shadow_dropped,
     "copies not sent to the shadow pool because its queue was full"},
    {"shadow_compared", &stats::RouteTotals::shadow_compared,
     "shadowed reads whose primary and shadow answers were compared"},
    {"shadow_agreed", &stats::RouteTotals::shadow_agreed,
     "compared shadowed reads whose answers agreed (hit or miss, and value digest)"},
};

// A STAT line's name is one token: a byte it cannot carry (space, control) shows as '_'. Config
// names hold none in practice; this keeps a reader's parse whatever the config says.
std::string statToken(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) <= ' ' || c == '\x7f') {
      c = '_';
    }
  }
  return out;
}

std::string ratio4(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4f", v);
  return buf;
}

std::string ratio6(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

std::string labels(const RouteRow& r) {
  std::string l = "{listener=";
  common::appendJsonString(&l, r.listener);
  l += ",route=";
  common::appendJsonString(&l, r.name());
  return l + "}";
}

}  // namespace

std::optional<double> RouteRow::agreement() const {
  if (totals.shadow_compared == 0) {
    return std::nullopt;
  }
  return static_cast<double>(totals.shadow_agreed) / static_cast<double>(totals.shadow_compared);
}

std::vector<RouteRow> buildRouteReport(
    const config::Topology& topology,
    const std::map<std::pair<std::string, std::string>, stats::RouteTotals>& totals) {
  std::vector<RouteRow> rows;
  for (const auto& pool : topology.pools) {
    // A name shown twice would be two series of one label set: the first route of a name is
    // shown (the config's checks refuse a repeated prefix; this holds whatever they allow).
    std::set<std::string> seen;
    for (const config::RouteConfig& route : pool->config.routes) {
      if (!seen.insert(route.name()).second) {
        continue;
      }
      RouteRow row;
      row.listener = pool->config.name;
      row.config = route;
      if (auto it = totals.find({row.listener, route.name()}); it != totals.end()) {
        row.totals = it->second;
      }
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

void appendRouteStatLines(const std::vector<RouteRow>& rows, std::string* out) {
  for (const RouteRow& r : rows) {
    const std::string p = "STAT route:" + statToken(r.listener) + ":" + statToken(r.name()) + ":";
    *out += p + "pool " + statToken(r.config.pool) + "\r\n";
    *out +=
        p + "shadow_pool " + (r.config.shadow ? statToken(r.config.shadow->pool) : "-") + "\r\n";
    for (const RouteCounter& c : kCounters) {
      *out += p + c.name + " " + std::to_string(r.totals.*c.field) + "\r\n";
    }
    std::optional<double> agreement = r.agreement();
    *out += p + "shadow_agreement " + (agreement ? ratio4(*agreement) : "-") + "\r\n";
  }
  *out += "END\r\n";
}

void appendRouteMetrics(const std::vector<RouteRow>& rows, std::string* out) {
  for (const RouteCounter& c : kCounters) {
    const std::string name = std::string("mcring_route_") + c.name + "_total";
    *out += "# HELP " + name + " " + c.help + "\n# TYPE " + name + " counter\n";
    for (const RouteRow& r : rows) {
      *out += name + labels(r) + " " + std::to_string(r.totals.*c.field) + "\n";
    }
  }
  *out +=
      "# HELP mcring_route_shadow_agreement share of the route's compared shadowed reads whose "
      "answers agreed (how warm the shadow pool is); absent until a read was compared\n"
      "# TYPE mcring_route_shadow_agreement gauge\n";
  for (const RouteRow& r : rows) {
    if (std::optional<double> agreement = r.agreement()) {
      *out += "mcring_route_shadow_agreement" + labels(r) + " " + ratio6(*agreement) + "\n";
    }
  }
}

std::string routesJson(const std::vector<RouteRow>& rows) {
  std::string out = "{\"listeners\":[";
  const std::string* listener = nullptr;
  for (const RouteRow& r : rows) {
    if (listener == nullptr || *listener != r.listener) {
      out += listener == nullptr ? "{\"name\":" : "]},{\"name\":";
      common::appendJsonString(&out, r.listener);
      out += ",\"routes\":[";
      listener = &r.listener;
    } else {
      out += ",";
    }
    const config::RouteConfig& c = r.config;
    out += "{\"route\":";
    common::appendJsonString(&out, c.name());
    out += ",\"prefix\":";
    common::appendJsonString(&out, c.prefix);
    out += std::string(",\"default\":") + (c.is_default ? "true" : "false") + ",\"pool\":";
    common::appendJsonString(&out, c.pool);
    out += ",\"shadow\":";
    if (c.shadow) {
      out += "{\"pool\":";
      common::appendJsonString(&out, c.shadow->pool);
      out += ",\"percent\":" + std::to_string(c.shadow->percent) +
             ",\"writes_only\":" + (c.shadow->writes_only ? "true" : "false") + "}";
    } else {
      out += "null";
    }
    out += ",\"failover\":[";
    for (size_t i = 0; i < c.failover.size(); ++i) {
      out += i == 0 ? "" : ",";
      common::appendJsonString(&out, c.failover[i]);
    }
    out += std::string("],\"failover_on_miss\":") + (c.failover_on_miss ? "true" : "false") +
           ",\"max_ttl\":" + std::to_string(c.max_ttl) + ",\"rate_limit\":";
    if (c.rate_limit) {
      out += "{\"requests_per_second\":" + std::to_string(c.rate_limit->requests_per_second) +
             ",\"burst\":" + std::to_string(c.rate_limit->burst) + "}";
    } else {
      out += "null";
    }
    out += ",\"counters\":{";
    bool first = true;
    for (const RouteCounter& k : kCounters) {
      out += std::string(first ? "\"" : ",\"") + k.name + "\":" + std::to_string(r.totals.*k.field);
      first = false;
    }
    std::optional<double> agreement = r.agreement();
    out += "},\"shadow_agreement\":" + (agreement ? ratio6(*agreement) : std::string("null")) + "}";
  }
  out += listener == nullptr ? "]}\n" : "]}]}\n";
  return out;
}

}  // namespace mcring::core
