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
#include "proxy/backend/pending_request.h"
#include "proxy/backend/pool_runtime.h"
#include "proxy/backend/pool_security.h"
#include "proxy/net/event_loop.h"
#include "proxy/session/session_context.h"
#include "proxy/stats/backend_stats.h"
#include "proxy/stats/counters.h"
#include "proxy/stats/hot_key_board.h"
#include "proxy/stats/prefix_stats.h"
#include "proxy/stats/stats_renderer.h"

namespace mcring::core {

class ClientSession;

// The loop, request pool, warm-up registry and counters are WorkerContext's (the data plane's
// view of a worker, backend/worker_context.h); the reporter is SessionContext's.
class Worker final : public SessionContext {
 public:
  // `count`: how many workers share the process (each takes its share of the memory budgets).
  Worker(int id, int count, const stats::StatsRenderer& reporter);
  ~Worker() override;

  // --- any thread ---
  // tls: the TLS contexts built for the topology's config (pool_security.h).
  void start(std::shared_ptr<const config::Topology> topology,
             std::shared_ptr<const PoolTlsMap> tls);
  void join();
  // `open_count` is the pool's open-connection count; the session decrements it when it ends.
  // tls: the context of the TLS listener it came through (null: plaintext).
  void postClient(int fd, std::string pool, std::shared_ptr<std::atomic<uint32_t>> open_count,
                  std::shared_ptr<const net::TlsContext> tls = nullptr);
  void postTopology(std::shared_ptr<const config::Topology> topology,
                    std::shared_ptr<const PoolTlsMap> tls);
  // Hot-key spread: the pool's spread keys as the main thread decided them
  // (backend/hot_spread.h); the worker applies the set and acknowledges it.
  void postSpread(std::string pool, std::shared_ptr<const SpreadSet> set);
  // Stop reading new requests, finish in-flight ones, close; the loop ends when all sessions are
  // gone or after grace_ms. handover (an upgrade): keep reading whole requests and close each
  // session at a request boundary instead (ClientSession::beginHandover).
  void postShutdown(uint32_t grace_ms, bool handover = false);
  // counters() and backendStats(), const: WorkerContext's.
  // The loop has returned (after shutdown).
  bool finished() const { return finished_.load(std::memory_order_acquire); }

  // --- worker thread ---
  int id() const { return id_; }
  // loop(), requests(), warmup(), counters(), backendStats(): WorkerContext's; reporter():
  // SessionContext's.
  // Called (on the worker thread) when a server of a pool with auto_eject_hosts has failed
  // server_failure_limit times in a row; the proxy decides ejection for all workers at once.
  using ServerDownFn = std::function<void(const std::string& pool, const std::string& identity)>;
  void setServerDownHandler(ServerDownFn fn) { server_down_ = std::move(fn); }
  // Where the worker publishes its hot-key windows (set before start()).
  void setHotKeyBoard(stats::HotKeyBoard* board) { hot_key_board_ = board; }
  void setPrefixStats(stats::PrefixStatsRegistry* registry) { prefix_stats_ = registry; }
  void reportServerDown(const std::string& pool, const std::string& identity) override {
    if (server_down_) {
      server_down_(pool, identity);
    }
  }
  // Memory for large requests being received was freed: wake the sessions waiting for it soon
  // (not from inside the session that freed it).
  void scheduleInputWake() override;
  void onInputWaiting() override;
  // Deferred destruction: a session ends itself from inside its own callbacks.
  void retire(ClientSession* session) override;
  // A backend connection finished something; drained servers of old snapshots may now go.
  void onBackendIdle() override {
    if (!draining_.empty() && !stopping_) {
      reapDraining();
    }
  }

 private:
  void run();
  void applyTopology(std::shared_ptr<const config::Topology> topology,
                     std::shared_ptr<const PoolTlsMap> tls);
  void acceptClient(int fd, const std::string& pool,
                    std::shared_ptr<std::atomic<uint32_t>> open_count,
                    std::shared_ptr<const net::TlsContext> tls);
  void reapRetired();
  void wakeInputWaiters();
  void probeInputWaiters();
  // A server a reload removed (or a closed warm-up window released) finishes what it has in
  // flight, then goes (reapDraining).
  void drain(std::unique_ptr<BackendServer> server);
  void reapDraining();
  void checkShutdownDone();
  // client_idle_timeout and client_request_timeout: the sweep runs only while some pool sets
  // one, every eighth of the smallest timeout (10 ms to 1 s).
  void scheduleIdleSweep();
  void sweepIdleClients();
  // Warm migration: opens a window for a pool whose placement changed, or closes it.
  void openWarmup(PoolRuntime& runtime, std::shared_ptr<const config::PoolTopology> previous,
                  std::vector<BackendServer*> previous_by_index,
                  std::vector<std::unique_ptr<BackendServer>> removed);
  void closeWarmup(PoolRuntime& runtime);
  // Hot keys: (re)creates or drops a pool's sketch to match its config; publishes each pool's
  // window to the board and starts the next, at the wall clock's next window boundary.
  void configureHotKeys(PoolRuntime& runtime);
  void applyRoutes(PoolRuntime& runtime);
  void closeStaleRouteWarmups();
  void rollHotKeys();
  void scheduleHotKeyRoll();

  int id_;
  int count_;
  std::thread thread_;
  std::shared_ptr<const config::Topology> topology_;
  std::unordered_map<std::string, std::unique_ptr<PoolRuntime>> pools_;
  std::vector<std::unique_ptr<BackendServer>> draining_;  // removed servers finishing in flight
  BackendLinks links_;     // every server's connections, shared by pools (backend_link.h)
  bool stopping_ = false;  // the destructor runs: nothing is reaped (it destroys them all)
  std::unordered_set<ClientSession*> sessions_;
  std::vector<ClientSession*> retired_;
  std::unique_ptr<net::Timer> reaper_;
  std::unique_ptr<net::Timer> grace_timer_;
  std::unique_ptr<net::Timer> idle_sweep_;
  std::unique_ptr<net::Timer> input_wake_;
  std::unique_ptr<net::Timer> input_probe_;  // while sessions wait for input memory
  std::unique_ptr<net::Timer> hot_key_roll_;
  stats::HotKeyBoard* hot_key_board_ = nullptr;
  stats::PrefixStatsRegistry* prefix_stats_ = nullptr;  // every pool's `stats detail`
  uint64_t retired_peak_bytes_ = 0;  // peaks of sessions gone since the last malloc_trim
  uint64_t idle_sweep_ms_ = 0;       // period of idle_sweep_; 0: stopped
  uint64_t next_warmup_id_ = 1;
  uint64_t next_session_id_ = 0;
  bool shutting_down_ = false;
  bool handing_over_ = false;
  std::unique_ptr<net::Timer> handover_sweep_;  // closes sessions that reached a boundary
  ServerDownFn server_down_;
  std::atomic<bool> finished_{false};
};

}  // namespace mcring::core
