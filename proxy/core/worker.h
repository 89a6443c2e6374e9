// A worker thread: one event loop, its client sessions, its backend connections, its counters.
//
// Shared-nothing: the only things that reach a worker from other threads are posted messages
// (a new client socket, a new topology snapshot, shutdown). No lock on the request path.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "config/topology.h"
#include "proxy/core/pending_request.h"
#include "proxy/core/pool_runtime.h"
#include "proxy/net/event_loop.h"
#include "proxy/stats/backend_stats.h"
#include "proxy/stats/counters.h"

namespace mcring::core {

class ClientSession;
class StatsReporter;

class Worker {
 public:
  // `count`: how many workers share the process (each takes its share of the memory budgets).
  Worker(int id, int count, const StatsReporter& reporter);
  ~Worker();

  // --- any thread ---
  void start(std::shared_ptr<const config::Topology> topology);
  void join();
  // `open_count` is the pool's open-connection count; the session decrements it when it ends.
  void postClient(int fd, std::string pool, std::shared_ptr<std::atomic<uint32_t>> open_count);
  void postTopology(std::shared_ptr<const config::Topology> topology);
  // Stop reading new requests, finish in-flight ones, close; the loop ends when all sessions are
  // gone or after grace_ms.
  void postShutdown(uint32_t grace_ms);
  const stats::WorkerCounters& counters() const { return counters_; }
  const stats::BackendStatsList& backendStats() const { return backend_stats_; }
  // The loop has returned (after shutdown).
  bool finished() const { return finished_.load(std::memory_order_acquire); }

  // --- worker thread ---
  int id() const { return id_; }
  net::EventLoop& loop() { return *loop_; }
  RequestPool& requests() { return requests_; }
  WarmupRegistry& warmup() { return warmup_; }
  stats::WorkerCounters& counters() { return counters_; }
  stats::BackendStatsList& backendStats() { return backend_stats_; }
  const StatsReporter& reporter() const { return reporter_; }
  // Called (on the worker thread) when a server of a pool with auto_eject_hosts has failed
  // server_failure_limit times in a row; the proxy decides ejection for all workers at once.
  using ServerDownFn = std::function<void(const std::string& pool, const std::string& identity)>;
  void setServerDownHandler(ServerDownFn fn) { server_down_ = std::move(fn); }
  void reportServerDown(const std::string& pool, const std::string& identity) {
    if (server_down_) {
      server_down_(pool, identity);
    }
  }
  // Memory for large requests being received was freed: wake the sessions waiting for it soon
  // (not from inside the session that freed it).
  void scheduleInputWake();
  // Deferred destruction: a session ends itself from inside its own callbacks.
  void retire(ClientSession* session);
  // A backend connection finished something; drained servers of old snapshots may now go.
  void onBackendIdle() {
    if (!draining_.empty()) {
      reapDraining();
    }
  }

 private:
  void run();
  void applyTopology(std::shared_ptr<const config::Topology> topology);
  void acceptClient(int fd, const std::string& pool,
                    std::shared_ptr<std::atomic<uint32_t>> open_count);
  void reapRetired();
  void wakeInputWaiters();
  void reapDraining();
  void checkShutdownDone();
  // client_idle_timeout: the sweep runs only while some pool sets it, every eighth of the
  // smallest timeout (10 ms to 1 s).
  void scheduleIdleSweep();
  void sweepIdleClients();
  // Warm migration: opens a window for a pool whose placement changed, or closes it.
  void openWarmup(PoolRuntime& runtime, std::shared_ptr<const config::PoolTopology> previous,
                  std::vector<BackendServer*> previous_by_index,
                  std::vector<std::unique_ptr<BackendServer>> removed);
  void closeWarmup(PoolRuntime& runtime);

  int id_;
  int count_;
  const StatsReporter& reporter_;
  std::unique_ptr<net::EventLoop> loop_;
  std::thread thread_;
  std::shared_ptr<const config::Topology> topology_;
  std::unordered_map<std::string, std::unique_ptr<PoolRuntime>> pools_;
  std::vector<std::unique_ptr<BackendServer>> draining_;  // removed servers finishing in flight
  std::unordered_set<ClientSession*> sessions_;
  std::vector<ClientSession*> retired_;
  std::unique_ptr<net::Timer> reaper_;
  std::unique_ptr<net::Timer> grace_timer_;
  std::unique_ptr<net::Timer> idle_sweep_;
  std::unique_ptr<net::Timer> input_wake_;
  uint64_t retired_peak_bytes_ = 0;  // peaks of sessions gone since the last malloc_trim
  uint64_t idle_sweep_ms_ = 0;  // period of idle_sweep_; 0: stopped
  RequestPool requests_;
  WarmupRegistry warmup_;
  uint64_t next_warmup_id_ = 1;
  stats::WorkerCounters counters_;
  stats::BackendStatsList backend_stats_;
  uint64_t next_session_id_ = 0;
  bool shutting_down_ = false;
  ServerDownFn server_down_;
  std::atomic<bool> finished_{false};
};

}  // namespace mcring::core
