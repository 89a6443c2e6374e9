// The proxy's own stats: its totals, summed over workers on read, which `stats` merges with the
// pool's servers' fields (dispatch/stats_views.h), and its own views (`stats reloads`,
// `stats backends`, `stats events`, `stats hotkeys`, `stats routes`).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "config/topology.h"
#include "proxy/admin/backend_report.h"
#include "proxy/admin/reload_history.h"
#include "proxy/admin/route_report.h"
#include "proxy/stats/backend_stats.h"
#include "proxy/stats/client_table.h"
#include "proxy/stats/counters.h"
#include "proxy/stats/pool_memory.h"
#include "proxy/stats/prefix_stats.h"
#include "proxy/stats/route_stats.h"
#include "proxy/stats/stats_renderer.h"

namespace mcring::core {

class StatsReporter final : public stats::StatsRenderer {
 public:
  StatsReporter();
  void addWorker(const stats::WorkerCounters* counters, const stats::BackendStatsList* backends) {
    workers_.push_back(counters);
    backend_lists_.push_back(backends);
  }
  void addPoolMemory(const stats::PoolMemoryList* list) { pool_memory_.push_back(list); }
  // Any thread: per pool, the bytes held under its memory budget and the budget (all workers).
  std::map<std::string, stats::PoolMemoryTotals> poolMemory() const {
    return stats::sumPoolMemory(pool_memory_);
  }
  void addRouteStats(const stats::RouteStatsList* list) { route_stats_.push_back(list); }
  // Any thread: per (listener, route), the route's counters (all workers).
  std::map<std::pair<std::string, std::string>, stats::RouteTotals> routeStats() const {
    return stats::sumRouteStats(route_stats_);
  }
  // Any thread: every route of the topology in force with its counters (none before the first
  // topology, or when no pool has routes).
  std::vector<RouteRow> routeReport() const;
  void setTopology(std::shared_ptr<const config::Topology> topology) {
    std::lock_guard<std::mutex> lock(mutex_);
    topology_ = std::move(topology);
  }
  // Any thread: the topology in force (null before the first one).
  std::shared_ptr<const config::Topology> topology() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return topology_;
  }
  // `stats detail` of every pool, and every worker's client table (GET /clients).
  void setPrefixStats(const stats::PrefixStatsRegistry* prefixes) { prefix_stats_ = prefixes; }
  const stats::PrefixStatsRegistry* prefixStats() const { return prefix_stats_; }
  void addClients(const stats::ClientTable* table) { client_tables_.push_back(table); }
  // Any thread: every client address's counts, summed over workers.
  std::map<std::string, stats::ClientTotals> clients() const {
    std::map<std::string, stats::ClientTotals> out;
    for (const stats::ClientTable* t : client_tables_) {
      t->read(&out);
    }
    return out;
  }
  void setHotKeys(const class HotKeyWatch* hot_keys) { hot_keys_ = hot_keys; }
  const class HotKeyWatch* hotKeys() const { return hot_keys_; }
  void setPoller(const class BackendPoller* poller) { poller_ = poller; }
  void setEjected(std::set<std::pair<std::string, std::string>> ejected) {
    std::lock_guard<std::mutex> lock(mutex_);
    ejected_ = std::move(ejected);
  }
  void setMonitor(const class MembershipMonitor* monitor) { monitor_ = monitor; }
  const class MembershipMonitor* monitor() const { return monitor_; }
  // Any thread: every pool's backends, summed over workers, with ownership and items.
  std::vector<PoolReport> backendReport() const;
  void setReloadHistory(const ReloadHistory* reloads) { reloads_ = reloads; }
  void setGeneration(uint64_t g) { generation_.store(g, std::memory_order_relaxed); }
  // Connections turned away by a pool's client_connections limit (counted on the main thread).
  void countRejectedConnection() { rejected_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t rejectedConnections() const { return rejected_.load(std::memory_order_relaxed); }
  // Counted on the main thread: accept() failures of any listener (each pauses it), admin
  // connections closed by the connection cap or by a deadline, mutating admin requests refused.
  void countAcceptError() { accept_errors_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t acceptErrors() const { return accept_errors_.load(std::memory_order_relaxed); }
  void countAdminConnectionShed() { admin_shed_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t adminConnectionsShed() const { return admin_shed_.load(std::memory_order_relaxed); }
  void countAdminRequestTimeout() { admin_timeouts_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t adminRequestTimeouts() const { return admin_timeouts_.load(std::memory_order_relaxed); }
  void countAdminRequestRefused() { admin_refused_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t adminRequestsRefused() const { return admin_refused_.load(std::memory_order_relaxed); }

  // Writes the reply to `stats reloads|backends|events|hotkeys|routes` into *out ("STAT ...\r\n"...
  // "END\r\n"). Returns false (and an ERROR reply) for other arguments.
  bool render(std::string_view args, std::string* out) const override;
  void renderOwn(std::vector<std::pair<std::string, std::string>>* out) const override;

  uint64_t uptime() const;
  // Sum of one counter over all workers.
  uint64_t sum(std::atomic<uint64_t> stats::WorkerCounters::*field) const;

 private:
  std::vector<const stats::WorkerCounters*> workers_;
  void renderReloads(std::string* out) const;
  void renderBackends(std::string* out) const;
  void renderEvents(std::string* out) const;
  void renderHotKeys(std::string* out) const;
  void renderRoutes(std::string* out) const;

  std::vector<const stats::BackendStatsList*> backend_lists_;
  std::vector<const stats::PoolMemoryList*> pool_memory_;
  std::vector<const stats::RouteStatsList*> route_stats_;
  mutable std::mutex mutex_;
  std::shared_ptr<const config::Topology> topology_;
  std::set<std::pair<std::string, std::string>> ejected_;
  const class BackendPoller* poller_ = nullptr;
  const class MembershipMonitor* monitor_ = nullptr;
  const class HotKeyWatch* hot_keys_ = nullptr;
  const stats::PrefixStatsRegistry* prefix_stats_ = nullptr;
  std::vector<const stats::ClientTable*> client_tables_;

  uint64_t start_time_;  // wall clock seconds at start (uptime)
  const ReloadHistory* reloads_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> rejected_{0};
  std::atomic<uint64_t> accept_errors_{0};
  std::atomic<uint64_t> admin_shed_{0};
  std::atomic<uint64_t> admin_timeouts_{0};
  std::atomic<uint64_t> admin_refused_{0};
};

}  // namespace mcring::core
