// The admin HTTP endpoint: /healthz, /metrics (Prometheus), /stats and /reloads (JSON),
// POST /reload. Runs on the main thread's loop; changes nothing but a reload.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "proxy/admin/reload_history.h"
#include "proxy/admin/stats_reporter.h"
#include "proxy/net/http_server.h"

namespace mcring::core {

// What the endpoint reads from the process, and the one thing it asks of it (a reload).
// Control's Proxy implements it, so admin does not depend on control. Main thread.
class AdminSource {
 public:
  virtual ~AdminSource() = default;
  // Re-reads the config file (POST /reload).
  virtual void reload(const char* source) = 0;
  virtual const ReloadHistory& reloads() const = 0;
  virtual const StatsReporter& reporter() const = 0;
  virtual uint64_t generation() const = 0;
  virtual bool stopping() const = 0;
};

class AdminEndpoint {
 public:
  explicit AdminEndpoint(AdminSource& proxy) : proxy_(proxy) {}
  bool open(net::EventLoop& loop, const std::string& address, uint16_t port, std::string* error);

 private:
  net::HttpResponse handle(const std::string& method, const std::string& path);
  std::string metrics() const;
  std::string statsJson() const;
  std::string reloadsJson() const;
  std::string eventsJson() const;
  void backendMetrics(std::string* out) const;

  AdminSource& proxy_;
  std::unique_ptr<net::HttpServer> server_;
};

}  // namespace mcring::core
