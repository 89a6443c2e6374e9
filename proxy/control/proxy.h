// The proxy process: listeners on the main thread, N workers, reload and shutdown.
//
// The main thread owns the control plane: it accepts connections and hands each socket to a
// worker (round robin), loads and validates configuration, builds snapshots off the hot path and
// posts them to the workers, and runs the shutdown sequence. Workers own the data plane.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/file_watcher.h"
#include "config/topology.h"
#include "proxy/admin/admin_endpoint.h"
#include "proxy/admin/hot_key_watch.h"
#include "proxy/admin/membership_monitor.h"
#include "proxy/admin/reload_history.h"
#include "proxy/admin/stats_reporter.h"
#include "proxy/backend/backend_poller.h"
#include "proxy/backend/health_probe.h"
#include "proxy/backend/pool_security.h"
#include "proxy/control/discovery.h"
#include "proxy/control/inherited_listeners.h"
#include "proxy/control/upgrade.h"
#include "proxy/control/worker.h"
#include "proxy/net/event_loop.h"
#include "proxy/net/tcp_connection.h"

namespace mcring::core {

struct ProxyOptions {
  std::string config_path;
  int threads = 0;  // 0: defaultWorkerThreads()
  uint32_t shutdown_grace_ms = 10000;
  bool watch_config = true;  // reload when the file changes on disk
  uint32_t watch_debounce_ms = 200;
  // Admin HTTP endpoint (twemproxy's stats port). Port 0 disables it. When the port was not
  // given explicitly, failing to bind it is a warning rather than fatal.
  std::string admin_address = "127.0.0.1";
  uint16_t admin_port = 22222;
  bool admin_port_explicit = false;
  // A file holding the token that mutating admin requests must carry (Authorization: Bearer);
  // required when admin_address is not loopback. "" = none.
  std::string admin_token_file;
  // Further Host names mutating admin requests may use ("name" or "name:port").
  std::vector<std::string> admin_allowed_hosts;
  uint32_t backend_stats_interval_s = 10;  // how often backends' own `stats` are read; 0: never
  // Each worker reads a loop pass's readable sockets, and writes its output, with one io_uring
  // submission each where the kernel allows it (net/io_batch.h); false: a recv()/send() per
  // connection (--no-io-uring).
  bool io_uring = true;
  // What SIGUSR2 executes: the binary's path as resolved at start (a file replaced at that path
  // since is what runs) and the command line, argv[0] included.
  std::string exec_path;
  std::vector<std::string> exec_args;
};

// How long an upgrade waits for the new process to report ready (it may wait up to 10 s for a
// discovered pool's first DNS answer) before telling it to stop and serving on.
inline constexpr uint32_t kUpgradeReadyTimeoutMs = 30000;

// Worker threads when --threads is not given.
int defaultWorkerThreads();

class Proxy final : public AdminSource {
 public:
  explicit Proxy(ProxyOptions options);
  ~Proxy();

  // Listening sockets to adopt instead of binding (before start()): an upgrade's hand-over or
  // systemd's. The ones start() does not use are closed.
  void inherit(InheritedListeners sockets) { inherited_ = std::move(sockets); }
  // Loads the config and opens every listener; false (errors logged) if it cannot start.
  bool start();
  // A new process took over the listeners (SIGUSR2): the pid file is its now.
  bool handedOver() const { return handed_over_; }
  // Runs until SIGTERM/SIGINT and the drain that follows. Returns the exit code.
  int run();

  // Re-reads the config file; keeps the old snapshot if the new one is invalid. Main thread.
  void reload(const char* source) override;

  const ReloadHistory& reloads() const override { return reloads_; }
  const StatsReporter& reporter() const override { return reporter_; }
  uint64_t generation() const override { return generation_; }
  bool stopping() const override { return stopping_; }

 private:
  struct ListenerEntry {
    std::string address;  // resolved address text, to notice listen changes
    std::unique_ptr<net::Listener> listener;
  };
  bool syncListeners(const config::Topology& topology);
  // A loaded (and, for discovered pools, filled) config made the one in force: built, listeners
  // synced, posted to the workers, recorded in the reload history with `source`.
  void apply(config::Config next_config, const char* source);
  void recordFailure(ReloadRecord record, std::string error);
  // Discovery answered for `pool`; `changed`: its server list changed.
  void onDiscovery(const std::string& pool, bool changed);
  // The config in force with the discovered pools' current lists, applied if they differ.
  void applyDiscovered();
  // The config minus ejected servers (pools with auto_eject_hosts), built into a snapshot.
  void warnGrownReplicaSets(const config::Topology& before, const config::Topology& after);
  std::shared_ptr<const config::Topology> buildEffective(const config::Config& config,
                                                         uint64_t generation,
                                                         std::vector<std::string>* errors) const;
  // Publishes a new snapshot of the same config after an ejection or a return.
  void republish(const char* kind);
  void onServerDown(const std::string& pool, const std::string& identity);
  void probeEjected(const std::pair<std::string, std::string>& key);
  // tls_listener: it came through the pool's tls_listen (else through listen, which speaks TLS
  // when the current config says listen_tls).
  void onAccept(const std::string& pool, int fd, bool tls_listener);
  void shutdown();
  // SIGUSR2: starts the new process (upgrade.h); handOver() once it is ready.
  void upgrade();
  void handOver();
  // No new connections; workers finish (handover: close sessions at request boundaries).
  void drain(bool handover);
  // The certificate, key and credentials files of config_, for the file watcher.
  void watchReferencedFiles();

  ProxyOptions options_;
  net::EventLoop loop_;
  StatsReporter reporter_;
  std::vector<std::unique_ptr<Worker>> workers_;
  // By pool name (listen), and pool name + "\ttls" (tls_listen).
  std::map<std::string, ListenerEntry> listeners_;
  // Open client connections per pool, across workers (client_connections limit).
  std::map<std::string, std::shared_ptr<std::atomic<uint32_t>>> client_counts_;
  std::shared_ptr<const config::Topology> topology_;
  std::shared_ptr<const config::Config> config_;
  // The TLS contexts of config_ (pool_security.h): rebuilt, certificates re-read, at each reload.
  std::shared_ptr<const PoolTlsMap> tls_;
  ReloadHistory reloads_;
  config::FileWatcher watcher_;
  std::unique_ptr<net::FdWatcher> watch_event_;
  std::unique_ptr<net::Timer> debounce_;
  std::unique_ptr<AdminEndpoint> admin_;
  std::unique_ptr<BackendPoller> poller_;
  std::unique_ptr<MembershipMonitor> monitor_;
  stats::HotKeyBoard hot_key_board_;  // workers publish, the watch reads
  // `stats detail` of every pool: the workers count, the admin endpoint and dumps read.
  std::unique_ptr<stats::PrefixStatsRegistry> prefix_stats_;
  std::unique_ptr<HotKeyWatch> hot_key_watch_;
  std::unique_ptr<Discovery> discovery_;  // pools with servers_dns
  bool starting_ = false;                 // start() waits on the loop for first DNS answers
  // A file reload was refused for want of a new discovered pool's first answer: that answer
  // reloads the file again (source dns).
  bool awaiting_reload_ = false;
  // Servers out of the ring (auto_eject_hosts), by (pool, identity), until a probe succeeds.
  struct Ejection {
    common::SocketAddress address;
    uint32_t retry_ms = 30000;
    uint32_t probe_timeout_ms = 1000;
    std::optional<net::TlsSetup> tls;  // the probe connects as the workers do
    std::string auth;
    std::unique_ptr<net::Timer> retry;
    std::unique_ptr<HealthProbe> probe;
  };
  std::map<std::pair<std::string, std::string>, Ejection> ejected_;
  uint64_t generation_ = 0;
  size_t next_worker_ = 0;
  bool stopping_ = false;
  bool handed_over_ = false;
  InheritedListeners inherited_;
  std::unique_ptr<Upgrade> upgrade_;  // the last one started (kept until the next, or exit)
  // A reload asked for while an upgrade was in progress (its source), run if the upgrade fails:
  // meanwhile the new process loads the file itself, and a listener this process bound for the
  // new file would keep the new process from binding it (the upgrade would fail).
  const char* reload_after_upgrade_ = nullptr;
  std::vector<std::unique_ptr<net::SignalWatcher>> signals_;
  std::unique_ptr<net::Timer> exit_timer_;
  std::unique_ptr<net::Timer> log_flush_;  // reports rate-limited log lines once a second
};

}  // namespace mcring::core
