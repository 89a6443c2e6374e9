// The admin HTTP endpoint: /healthz, /metrics (Prometheus), /stats and /reloads (JSON),
// POST /reload. Runs on the main thread's loop; changes nothing but a reload.
#pragma once

#include <memory>
#include <string>

#include "proxy/net/http_server.h"

namespace mcring::core {

class Proxy;

class AdminEndpoint {
 public:
  explicit AdminEndpoint(Proxy& proxy) : proxy_(proxy) {}
  bool open(net::EventLoop& loop, const std::string& address, uint16_t port, std::string* error);

 private:
  net::HttpResponse handle(const std::string& method, const std::string& path);
  std::string metrics() const;
  std::string statsJson() const;
  std::string reloadsJson() const;
  std::string eventsJson() const;
  void backendMetrics(std::string* out) const;

  Proxy& proxy_;
  std::unique_ptr<net::HttpServer> server_;
};

}  // namespace mcring::core
