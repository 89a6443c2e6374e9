// The admin HTTP endpoint: the console (GET /, one page compiled in), /healthz, /metrics
// (Prometheus), /stats, /backends, /timeline, /reloads, /events, /hotkeys and /routes (JSON),
// POST /whatif/<pool> (what a server list would move; computes only), POST /reload. Runs on the
// main thread's loop; changes nothing but a reload, which AdminAccess guards (Host, Origin,
// token). Connections are capped and deadlined by net::HttpServer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "proxy/admin/admin_access.h"
#include "proxy/admin/reload_history.h"
#include "proxy/admin/stats_reporter.h"
#include "proxy/admin/traffic_report.h"
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
  // Concurrent admin connections, and the whole-request deadline: a scraper or a probe sends its
  // request at once; these bound what clients that do not can hold.
  static constexpr size_t kMaxConnections = 64;
  static constexpr uint32_t kRequestTimeoutMs = 5000;
  static constexpr uint32_t kReplyTimeoutMs = 10000;

  // counters: where refused requests, shed and timed-out connections and accept errors count.
  AdminEndpoint(AdminSource& proxy, StatsReporter& counters)
      : proxy_(proxy), counters_(counters), traffic_(counters) {}
  // Reads the token and checks the address rule (AdminAccess::init); before open().
  bool configure(AdminAccessOptions access, std::string* error);
  // inherited_fd: a listening socket bound to address:port that an upgrade handed over (-1:
  // bind it).
  bool open(net::EventLoop& loop, const std::string& address, uint16_t port, std::string* error,
            int inherited_fd = -1);
  // The listening socket, for an upgrade's hand-over (-1: none).
  int listenFd() const { return server_ ? server_->listenFd() : -1; }
  // After a hand-over: the new process accepts; requests already read are answered.
  void stopAccepting() {
    if (server_) {
      server_->stopAccepting();
    }
  }

 private:
  net::HttpResponse handle(const net::HttpRequest& request);
  std::string metrics() const;
  std::string statsJson() const;
  std::string reloadsJson() const;
  std::string hotKeysJson() const;
  void hotKeyMetrics(std::string* out) const;
  std::string eventsJson() const;
  std::string backendsJson() const;
  std::string timelineJson() const;
  net::HttpResponse whatIf(const net::HttpRequest& request);
  void backendMetrics(std::string* out) const;

  AdminSource& proxy_;
  StatsReporter& counters_;
  AdminAccess access_;
  mutable TrafficReport traffic_;  // top prefixes and clients (rates between reads)
  std::unique_ptr<net::HttpServer> server_;
};

}  // namespace mcring::core
