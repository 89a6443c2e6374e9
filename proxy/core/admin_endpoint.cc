// AdminEndpoint: renders the proxy's state for HTTP clients and accepts reload requests.
#include "proxy/core/admin_endpoint.h"

#include "mcring_version.h"
#include "proxy/common/json.h"
#include "proxy/core/proxy.h"

namespace mcring::core {

bool AdminEndpoint::open(net::EventLoop& loop, const std::string& address, uint16_t port,
                         std::string* error) {
  server_ = net::HttpServer::open(
      loop, address, port,
      [this](const std::string& method, const std::string& path) { return handle(method, path); },
      error);
  return server_ != nullptr;
}

net::HttpResponse AdminEndpoint::handle(const std::string& method, const std::string& path) {
  net::HttpResponse r;
  if (path == "/reload") {
    if (method != "POST") {
      return {405, "text/plain; charset=utf-8", "use POST /reload\n"};
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
  if (method != "GET" && method != "HEAD") {
    return {405, "text/plain; charset=utf-8", "method not allowed\n"};
  }
  if (path == "/healthz") {
    if (proxy_.stopping()) {
      return {503, "text/plain; charset=utf-8", "stopping\n"};
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
  } else {
    return {404, "text/plain; charset=utf-8",
            "not found; try /healthz /metrics /stats /reloads, POST /reload\n"};
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
#define MCRING_X(name, kind, help)                                                          \
  metric(stats::MetricKind::kind == stats::MetricKind::Counter ? "mcring_" #name "_total"  \
                                                               : "mcring_" #name,          \
         stats::MetricKind::kind == stats::MetricKind::Counter ? "counter" : "gauge", help, \
         std::to_string(rep.sum(&stats::WorkerCounters::name)));
  MCRING_WORKER_COUNTERS(MCRING_X)
#undef MCRING_X
  metric("mcring_rejected_connections_total", "counter",
         "client connections turned away by a pool's client_connections limit",
         std::to_string(rep.rejectedConnections()));
  metric("mcring_uptime_seconds", "gauge", "seconds since the proxy started",
         std::to_string(rep.uptime()));
  metric("mcring_config_generation", "gauge", "generation of the configuration in force",
         std::to_string(proxy_.generation()));
  metric("mcring_reloads_total", "counter", "reload attempts (any result)",
         std::to_string(proxy_.reloads().attempts()));
  metric("mcring_reload_failures_total", "counter", "reload attempts rejected",
         std::to_string(proxy_.reloads().failures()));
  out += "# HELP mcring_build_info build information\n# TYPE mcring_build_info gauge\n";
  out += "mcring_build_info{version=\"" MCRING_VERSION "\"} 1\n";
  return out;
}

std::string AdminEndpoint::statsJson() const {
  const StatsReporter& rep = proxy_.reporter();
  std::string out = "{\"version\":\"" MCRING_VERSION "\",\"uptime\":" +
                    std::to_string(rep.uptime()) +
                    ",\"config_generation\":" + std::to_string(proxy_.generation()) +
                    ",\"reloads\":" + std::to_string(proxy_.reloads().attempts()) +
                    ",\"reload_failures\":" + std::to_string(proxy_.reloads().failures()) +
                    ",\"reload_last_error\":";
  common::appendJsonString(&out, proxy_.reloads().lastError());
  out += ",\"counters\":{";
  bool first = true;
#define MCRING_X(name, kind, help)                                                   \
  out += std::string(first ? "" : ",") + "\"" #name "\":" +                          \
         std::to_string(rep.sum(&stats::WorkerCounters::name));                      \
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
    out += "{\"id\":" + std::to_string(r.id) + ",\"time\":" + std::to_string(r.time) +
           ",\"source\":";
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
