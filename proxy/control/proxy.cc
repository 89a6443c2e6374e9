// Proxy: startup, accept hand-off, reload, graceful shutdown.
#include "proxy/control/proxy.h"

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <thread>
#include <utility>

#include "config/config.h"
#include "config/config_diff.h"
#include "proxy/backend/server_freshness.h"
#include "proxy/common/log.h"

namespace mcring::core {

// Half the cores, at least one. Measured on a 2-core machine shared with memcached and a load
// generator (bench/RESULTS.md): one worker served as many requests as two, with 20-28% less CPU
// per request, because on loopback much of a proxy's cost is the kernel's network processing,
// which runs on the same cores; a worker per core leaves it none.
int defaultWorkerThreads() {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return cores >= 2 ? cores / 2 : 1;
}

Proxy::Proxy(ProxyOptions options) : options_(std::move(options)) {
  reporter_.setReloadHistory(&reloads_);
}

Proxy::~Proxy() {
  listeners_.clear();
  for (auto& w : workers_) {
    w->join();
  }
}

bool Proxy::start() {
  // The admin endpoint's access rules first: a non-loopback admin address without a token, or
  // an unusable token file, must stop the start before anything listens.
  if (options_.admin_port != 0) {
    admin_ = std::make_unique<AdminEndpoint>(*this, reporter_);
    AdminAccessOptions access;
    access.address = options_.admin_address;
    access.port = options_.admin_port;
    access.token_file = options_.admin_token_file;
    access.allowed_hosts = options_.admin_allowed_hosts;
    std::string error;
    if (!admin_->configure(std::move(access), &error)) {
      MCRING_LOG(Error, "admin endpoint: %s", error.c_str());
      admin_.reset();
      return false;
    }
  }
  log_flush_ = std::make_unique<net::Timer>(loop_, [] { common::logFlushSuppressed(); });
  log_flush_->start(1000, /*periodic=*/true);
  // Watch before reading: a change made while starting (between the read and a later watch)
  // would otherwise go unnoticed until the next one. Its events wait in the inotify queue.
  bool watching = false;
  if (options_.watch_config) {
    std::string error;
    watching = watcher_.open(options_.config_path, &error);
    if (!watching) {
      MCRING_LOG(Warn, "not watching %s for changes: %s", options_.config_path.c_str(),
                 error.c_str());
    }
  }
  config::LoadResult loaded = config::loadConfigFile(options_.config_path);
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors) {
      MCRING_LOG(Error, "%s", e.toString().c_str());
    }
    return false;
  }
  std::vector<std::string> errors;
  // A discovered pool's servers are its first DNS answer: wait for every such pool's first
  // answer (each takes at most two tries of its timeout), and refuse to start without a good
  // one, as twemproxy does for a name it cannot resolve (docs/configuration.md, "Discovery").
  discovery_ = std::make_unique<Discovery>(
      loop_, [this](const std::string& pool, bool changed) { onDiscovery(pool, changed); });
  discovery_->add(*loaded.config);
  if (discovery_->unanswered() > 0) {
    starting_ = true;
    net::Timer give_up(loop_, [this] { loop_.stop(); });
    give_up.start(10000);
    loop_.run();
    starting_ = false;
  }
  if (!discovery_->fill(*loaded.config, &errors)) {
    for (const auto& e : errors) {
      MCRING_LOG(Error, "%s: %s; a discovered pool needs its first DNS answer to start",
                 options_.config_path.c_str(), e.c_str());
    }
    return false;
  }
  topology_ = config::Topology::build(*loaded.config, ++generation_, &errors);
  if (topology_) {
    tls_ = buildPoolTls(*loaded.config, &errors);
  }
  if (!topology_ || !tls_) {
    for (const auto& e : errors) {
      MCRING_LOG(Error, "%s: %s", options_.config_path.c_str(), e.c_str());
    }
    return false;
  }
  if (!syncListeners(*topology_)) {
    return false;
  }
  config_ = std::make_shared<const config::Config>(std::move(*loaded.config));
  if (watching) {
    watchReferencedFiles();
  }
  reporter_.setGeneration(generation_);
  int threads = options_.threads > 0 ? options_.threads : defaultWorkerThreads();
  if (threads <= 0) {
    threads = 1;
  }
  std::vector<const stats::BackendStatsList*> lists;
  prefix_stats_ = std::make_unique<stats::PrefixStatsRegistry>(static_cast<size_t>(threads));
  reporter_.setPrefixStats(prefix_stats_.get());
  for (int i = 0; i < threads; ++i) {
    workers_.push_back(std::make_unique<Worker>(i, threads, reporter_));
    workers_.back()->setHotKeyBoard(&hot_key_board_);
    workers_.back()->setPrefixStats(prefix_stats_.get());
    const Worker& w = *workers_.back();
    reporter_.addWorker(&w.counters(), &w.backendStats());
    reporter_.addPoolMemory(&w.poolMemory());
    reporter_.addRouteStats(&w.routeStats());
    reporter_.addClients(&w.clients());
    lists.push_back(&w.backendStats());
  }
  std::string sends = "a recv()/send() per connection (--no-io-uring)";
  if (options_.io_uring) {
    std::string why;
    for (auto& w : workers_) {
      if (!w->loop().enableIoBatching(&why)) {
        sends = "a recv()/send() per connection: io_uring refused (" + why + ")";
        break;
      }
      sends = "one io_uring submission for a loop pass's reads, one for its writes";
    }
  }
  poller_ = std::make_unique<BackendPoller>(loop_, options_.backend_stats_interval_s);
  poller_->setTopology(topology_, tls_);
  monitor_ = std::make_unique<MembershipMonitor>(loop_, lists);
  hot_key_watch_ = std::make_unique<HotKeyWatch>(loop_, hot_key_board_, threads, lists,
                                                 [this] { return reporter_.topology(); });
  reporter_.setHotKeys(hot_key_watch_.get());
  hot_key_watch_->setSpreadPublisher(
      [this](const std::string& pool, std::shared_ptr<const SpreadSet> set) {
        for (auto& w : workers_) {
          w->postSpread(pool, set);
        }
      });
  reporter_.setPoller(poller_.get());
  reporter_.setMonitor(monitor_.get());
  reporter_.setTopology(topology_);
  for (auto& w : workers_) {
    w->setServerDownHandler([this](const std::string& pool, const std::string& identity) {
      loop_.post([this, pool, identity] { onServerDown(pool, identity); });
    });
    w->start(topology_, tls_);
  }
  signals_.push_back(std::make_unique<net::SignalWatcher>(loop_, SIGTERM, [this] { shutdown(); }));
  signals_.push_back(std::make_unique<net::SignalWatcher>(loop_, SIGINT, [this] { shutdown(); }));
  signals_.push_back(
      std::make_unique<net::SignalWatcher>(loop_, SIGHUP, [this] { reload("signal"); }));
  signals_.push_back(std::make_unique<net::SignalWatcher>(loop_, SIGUSR2, [this] { upgrade(); }));
  if (admin_) {
    std::string error;
    int admin_fd = -1;
    if (!inherited_.empty()) {
      std::string ignored;
      if (auto address = common::SocketAddress::resolve(options_.admin_address, options_.admin_port,
                                                        &ignored)) {
        admin_fd = inherited_.take(*address).fd;
      }
    }
    if (!admin_->open(loop_, options_.admin_address, options_.admin_port, &error, admin_fd)) {
      admin_.reset();
      if (options_.admin_port_explicit) {
        MCRING_LOG(Error, "admin endpoint: %s", error.c_str());
        return false;
      }
      MCRING_LOG(Warn, "admin endpoint disabled: %s", error.c_str());
    } else {
      MCRING_LOG(
          Notice,
          "admin endpoint on http://%s:%u/ (/metrics /stats /healthz; "
          "POST /reload %s)",
          options_.admin_address.c_str(), options_.admin_port,
          options_.admin_token_file.empty() ? "without a token (loopback)" : "with the token");
    }
  }
  if (watching) {
    debounce_ = std::make_unique<net::Timer>(loop_, [this] { reload("file"); });
    watch_event_ = std::make_unique<net::FdWatcher>(loop_, watcher_.fd(), [this] {
      if (watcher_.drain()) {
        // Editors and kubelet produce bursts of events: reload once they settle.
        debounce_->start(options_.watch_debounce_ms);
      }
    });
  }
  for (const auto& pool : topology_->pools) {
    if (!pool->config.listens) {
      MCRING_LOG(Notice, "pool '%s' (routed to, no listener), %zu servers, %s/%s",
                 pool->config.name.c_str(), pool->config.servers.size(),
                 std::string(routing::distributionName(pool->config.routing.distribution)).c_str(),
                 std::string(routing::hashFunctionName(pool->config.routing.hash)).c_str());
      continue;
    }
    if (pool->config.routed()) {
      MCRING_LOG(Notice, "pool '%s' listening on %s, %zu routes", pool->config.name.c_str(),
                 pool->listen_address.toString().c_str(), pool->config.routes.size());
      continue;
    }
    std::string where = pool->listen_address.toString() + (pool->config.listen_tls ? " (TLS)" : "");
    if (pool->tls_listen_address) {
      where += " and " + pool->tls_listen_address->toString() + " (TLS)";
    }
    MCRING_LOG(Notice, "pool '%s' listening on %s, %zu servers, %s/%s", pool->config.name.c_str(),
               where.c_str(), pool->config.servers.size(),
               std::string(routing::distributionName(pool->config.routing.distribution)).c_str(),
               std::string(routing::hashFunctionName(pool->config.routing.hash)).c_str());
  }
  inherited_.closeUnused();
  MCRING_LOG(Notice, "mcring started: %d worker thread(s), config %s; socket I/O: %s", threads,
             options_.config_path.c_str(), sends.c_str());
  return true;
}

// Opens listeners for new pools (and pools whose address changed) before closing old ones, so
// a listen change never leaves a window with nothing listening.
bool Proxy::syncListeners(const config::Topology& topology) {
  std::map<std::string, ListenerEntry> next;
  struct Wanted {
    std::string key;
    std::string pool;
    const common::SocketAddress* address;
    uint32_t unix_mode;
    bool tls_listener;
  };
  std::vector<Wanted> wanted;
  for (const auto& pool : topology.pools) {
    const config::PoolConfig& c = pool->config;
    if (!c.listens) {
      continue;  // only routed to: a listener it had before closes below
    }
    wanted.push_back({c.name, c.name, &pool->listen_address, c.listen.unix_mode, false});
    if (pool->tls_listen_address) {
      wanted.push_back(
          {c.name + "\ttls", c.name, &*pool->tls_listen_address, c.tls_listen->unix_mode, true});
    }
  }
  for (const Wanted& w : wanted) {
    const std::string& name = w.key;
    const config::PoolTopology* pool = topology.findPool(w.pool);
    std::string address = w.address->toString();
    auto old = listeners_.find(name);
    if (old != listeners_.end() && old->second.address == address) {
      next[name] = std::move(old->second);
      listeners_.erase(old);
      continue;
    }
    std::string error;
    net::Listener::AcceptFn accept = [this, pool_name = w.pool, tls = w.tls_listener](int fd) {
      onAccept(pool_name, fd, tls);
    };
    std::unique_ptr<net::Listener> listener;
    if (InheritedListeners::Taken inherited = inherited_.take(*w.address); inherited.fd >= 0) {
      listener = net::Listener::adopt(loop_, inherited.fd, *w.address,
                                      inherited.origin == InheritedListeners::Origin::Upgrade,
                                      std::move(accept), &error);
      if (listener) {
        MCRING_LOG(Notice, "pool '%s': listening on %s inherited from %s (fd %d)", w.pool.c_str(),
                   address.c_str(), originName(inherited.origin), inherited.fd);
      }
    } else {
      listener =
          net::Listener::open(loop_, *w.address, pool->config.backlog, pool->config.reuseport,
                              w.unix_mode, std::move(accept), &error);
    }
    if (listener) {
      listener->setAcceptErrorHandler([this](int) { reporter_.countAcceptError(); });
    }
    if (!listener) {
      MCRING_LOG(Error, "pool '%s': %s", w.pool.c_str(), error.c_str());
      // Put back what we moved so the old listeners keep serving.
      for (auto& [n, entry] : next) {
        if (!listeners_.count(n)) {
          listeners_[n] = std::move(entry);
        }
      }
      return false;
    }
    next[name] = ListenerEntry{address, std::move(listener)};
  }
  listeners_ = std::move(next);  // listeners of removed pools close here
  return true;
}

void Proxy::onAccept(const std::string& pool, int fd, bool tls_listener) {
  if (stopping_ || workers_.empty()) {
    ::close(fd);
    return;
  }
  auto& count = client_counts_[pool];
  if (!count) {
    count = std::make_shared<std::atomic<uint32_t>>(0);
  }
  const config::PoolTopology* topo = topology_->findPool(pool);
  std::shared_ptr<const net::TlsContext> tls;
  if (tls_listener || (topo != nullptr && topo->config.listen_tls)) {
    if (auto found = tls_->find(pool); found != tls_->end()) {
      tls = found->second.listener;
    }
    if (!tls) {
      ::close(fd);  // cannot happen: a TLS listener's config always has its context
      return;
    }
  }
  uint32_t limit = topo != nullptr ? topo->config.client_connections : 0;
  if (limit != 0 && count->load(std::memory_order_relaxed) >= limit) {
    // Accept-and-explain rather than refuse: the client sees why, in the protocol it speaks,
    // with the line memcached sends when it is at its -c limit. A TLS client is only closed: it
    // would read that plaintext line as a broken record (OpenSSL: WRONG_VERSION_NUMBER), and
    // answering in TLS would cost the handshake the limit is there to refuse.
    if (!tls) {
      static constexpr char kMsg[] = "ERROR Too many open connections\r\n";
      ssize_t ignored = ::send(fd, kMsg, sizeof(kMsg) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
      (void)ignored;
    }
    ::close(fd);
    reporter_.countRejectedConnection();
    return;
  }
  count->fetch_add(1, std::memory_order_relaxed);
  Worker& w = *workers_[next_worker_++ % workers_.size()];
  w.postClient(fd, pool, count, std::move(tls));
}

void Proxy::reload(const char* source) {
  if (stopping_) {
    return;
  }
  if (upgrade_ && upgrade_->inProgress()) {
    if (reload_after_upgrade_ == nullptr) {
      MCRING_LOG(Notice,
                 "reload (%s) waits for the upgrade in progress (new process %d loads the file "
                 "itself; this process reloads if the upgrade fails)",
                 source, static_cast<int>(upgrade_->pid()));
    }
    reload_after_upgrade_ = source;
    return;
  }
  ReloadRecord record;
  record.source = source;
  config::LoadResult loaded = config::loadConfigFile(options_.config_path);
  if (!loaded.ok()) {
    std::string all;
    for (const auto& e : loaded.errors) {
      all += (all.empty() ? "" : "; ") + e.toString();
    }
    recordFailure(std::move(record), all);
    return;
  }
  if (loaded.config->digest == config_->digest) {
    awaiting_reload_ = false;
    record.result = ReloadResult::Unchanged;
    record.generation = generation_;
    uint64_t id = reloads_.add(record);
    MCRING_LOG(Info, "reload %llu (%s): file unchanged", static_cast<unsigned long long>(id),
               source);
    return;
  }
  // A new discovered pool (or new discovery keys) has no servers until its name answers: the
  // reload is refused now and made again by that answer (onDiscovery).
  discovery_->add(*loaded.config);
  std::vector<std::string> waiting;
  if (!discovery_->fill(*loaded.config, &waiting)) {
    std::string all;
    for (const auto& e : waiting) {
      all += (all.empty() ? "" : "; ") + options_.config_path + ": " + e;
    }
    awaiting_reload_ = true;
    recordFailure(std::move(record), all + " (reloaded again when it answers)");
    return;
  }
  awaiting_reload_ = false;
  apply(std::move(*loaded.config), source);
}

void Proxy::recordFailure(ReloadRecord record, std::string error) {
  record.result = ReloadResult::Failed;
  record.generation = generation_;
  record.error = std::move(error);
  uint64_t id = reloads_.add(record);
  MCRING_LOG(Error, "reload %llu (%s): rejected, generation %llu keeps serving: %s",
             static_cast<unsigned long long>(id), record.source.c_str(),
             static_cast<unsigned long long>(generation_), record.error.c_str());
}

void Proxy::apply(config::Config next_config, const char* source) {
  ReloadRecord record;
  record.source = source;
  // Ejections stand across a reload only for servers (and pools) that still eject.
  for (auto it = ejected_.begin(); it != ejected_.end();) {
    bool keep = false;
    for (const auto& p : next_config.pools) {
      if (p.name == it->first.first && p.auto_eject_hosts) {
        for (const auto& sc : p.servers) {
          keep = keep || sc.identity() == it->first.second;
        }
      }
    }
    it = keep ? std::next(it) : ejected_.erase(it);
  }
  std::vector<std::string> errors;
  auto next = buildEffective(next_config, generation_ + 1, &errors);
  // Certificates and keys are re-read here: a bad one rejects the reload, the old keep serving.
  std::shared_ptr<const PoolTlsMap> next_tls = next ? buildPoolTls(next_config, &errors) : nullptr;
  if (!next || !next_tls) {
    std::string all;
    for (const auto& e : errors) {
      all += (all.empty() ? "" : "; ") + options_.config_path + ": " + e;
    }
    recordFailure(std::move(record), all);
    return;
  }
  if (!syncListeners(*next)) {
    recordFailure(std::move(record), "cannot open the new listeners (see above)");
    return;
  }
  config::ConfigDiff diff = config::diffConfigs(*config_, next_config);
  ++generation_;
  std::set<std::pair<std::string, std::string>> still_ejected;
  for (const auto& [key, e] : ejected_) {
    still_ejected.insert(key);
  }
  reporter_.setEjected(std::move(still_ejected));
  auto before = topology_;
  topology_ = next;
  tls_ = next_tls;
  poller_->setTopology(next, tls_);
  reporter_.setTopology(next);
  config_ = std::make_shared<const config::Config>(std::move(next_config));
  discovery_->retain(*config_);
  if (watch_event_) {
    watchReferencedFiles();
  }
  reporter_.setGeneration(generation_);
  for (auto& w : workers_) {
    w->postTopology(next, tls_);
  }
  // The prediction can take tens of ms (sampled distributions): only after the workers have
  // the new snapshot.
  monitor_->onTopologyChange(*before, *next, std::string(source) == "dns" ? "dns" : "reload");
  record.result = ReloadResult::Applied;
  record.generation = generation_;
  // Only the content of a certificate, key or credentials file changed: the diff sees nothing.
  record.diff = diff.empty() ? "TLS or credentials files re-read" : diff.summary();
  uint64_t id = reloads_.add(record);
  MCRING_LOG(Notice, "reload %llu (%s): generation %llu applied: %s",
             static_cast<unsigned long long>(id), source,
             static_cast<unsigned long long>(generation_), record.diff.c_str());
  warnGrownReplicaSets(*before, *next);
}

void Proxy::onDiscovery(const std::string& pool, bool changed) {
  if (starting_) {
    if (discovery_->unanswered() == 0) {
      loop_.stop();
    }
    return;
  }
  if (stopping_ || !changed || !config_) {
    return;
  }
  if (awaiting_reload_) {
    reload("dns");  // the file's reload that waited for this answer (or for another pool's)
    if (!awaiting_reload_) {
      return;
    }
  }
  MCRING_LOG(Info, "pool '%s': discovered servers changed", pool.c_str());
  applyDiscovered();
}

void Proxy::applyDiscovered() {
  config::Config next = *config_;
  std::vector<std::string> errors;
  if (!discovery_->fill(next, &errors)) {
    return;  // a pool of the config in force always has its list; nothing to apply otherwise
  }
  bool same = true;
  for (size_t i = 0; i < next.pools.size(); ++i) {
    const auto& a = config_->pools[i].servers;
    const auto& b = next.pools[i].servers;
    same = same && a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(),
                      [](const auto& x, const auto& y) { return x.identity() == y.identity(); });
  }
  if (!same) {
    apply(std::move(next), "dns");
  }
}

// A server that joins keys' replica sets by a reload (replicas raised, or servers changed with
// replicas > 1) holds no copy of those keys, or an old one from a time it held them before (say,
// replicas lowered and raised again): it missed the writes in between, and nothing records which.
// Reads go to the primary, but a failover read (or read_failover_on_miss) can return that old
// value until the key is written again or expires. Said once per reload (README, "Replication").
void Proxy::warnGrownReplicaSets(const config::Topology& before, const config::Topology& after) {
  for (const auto& pool : after.pools) {
    const uint32_t now = pool->config.routing.replicas;
    if (now < 2) {
      continue;
    }
    const config::PoolTopology* old = before.findPool(pool->config.name);
    const uint32_t was = old != nullptr ? old->config.routing.replicas : 0;
    const bool servers_changed =
        old != nullptr && old->config.servers.size() == pool->config.servers.size()
            ? !std::equal(old->config.servers.begin(), old->config.servers.end(),
                          pool->config.servers.begin(),
                          [](const config::ServerConfig& a, const config::ServerConfig& b) {
                            return a.identity() == b.identity() && a.spec.weight == b.spec.weight;
                          })
            : old != nullptr;
    if (old == nullptr || (now <= was && !servers_changed)) {
      continue;
    }
    MCRING_LOG(Warn,
               "pool '%s': replica sets changed by this reload (replicas %u -> %u%s): the servers "
               "that joined a key's set hold no copy of it, or one older than the writes they "
               "missed; a read that fails over to them can miss or return that old value until "
               "the key is written again (flush them, or keep replicas as it was, if that matters)",
               pool->config.name.c_str(), was, now, servers_changed ? ", servers changed" : "");
  }
}

std::shared_ptr<const config::Topology> Proxy::buildEffective(
    const config::Config& config, uint64_t generation, std::vector<std::string>* errors) const {
  if (ejected_.empty()) {
    return config::Topology::build(config, generation, errors);
  }
  config::Config effective = config;
  for (auto& pool : effective.pools) {
    if (!pool.auto_eject_hosts) {
      continue;
    }
    std::erase_if(pool.servers, [&](const config::ServerConfig& s) {
      return ejected_.count({pool.name, s.identity()}) > 0;
    });
  }
  return config::Topology::build(effective, generation, errors);
}

void Proxy::republish(const char* kind) {
  std::set<std::pair<std::string, std::string>> ejected;
  for (const auto& [key, e] : ejected_) {
    ejected.insert(key);
  }
  reporter_.setEjected(std::move(ejected));
  std::vector<std::string> errors;
  auto next = buildEffective(*config_, generation_ + 1, &errors);
  if (!next) {
    for (const auto& e : errors) {
      MCRING_LOG(Error, "%s: cannot rebuild the topology: %s", kind, e.c_str());
    }
    return;
  }
  ++generation_;
  auto before = topology_;
  topology_ = next;
  poller_->setTopology(next, tls_);
  reporter_.setTopology(next);
  reporter_.setGeneration(generation_);
  for (auto& w : workers_) {
    w->postTopology(next, tls_);
  }
  // The prediction can take tens of ms (sampled distributions): only after the workers have
  // the new snapshot.
  monitor_->onTopologyChange(*before, *next, kind);
}

// twemproxy's auto_eject_hosts, decided once for all workers so that they keep routing alike.
void Proxy::onServerDown(const std::string& pool, const std::string& identity) {
  if (stopping_ || ejected_.count({pool, identity}) > 0) {
    return;
  }
  const config::PoolConfig* pc = nullptr;
  for (const auto& p : config_->pools) {
    if (p.name == pool) {
      pc = &p;
    }
  }
  const config::PoolTopology* current = topology_->findPool(pool);
  if (pc == nullptr || !pc->auto_eject_hosts || current == nullptr) {
    return;
  }
  size_t index = current->config.servers.size();
  for (size_t i = 0; i < current->config.servers.size(); ++i) {
    if (current->config.servers[i].identity() == identity) {
      index = i;
    }
  }
  if (index == current->config.servers.size()) {
    return;  // already gone from the ring (a reload removed it)
  }
  if (current->config.servers.size() <= 1) {
    MCRING_LOG(Warn, "pool '%s': %s is failing but is the last server: not ejected", pool.c_str(),
               identity.c_str());
    return;
  }
  auto key = std::make_pair(pool, identity);
  if (pc->return_flush) {
    // Its keys' writes go elsewhere until it returns: flushed then (server_freshness.h).
    serverFreshness(identity)->missWrite();
  }
  Ejection& e = ejected_[key];
  e.address = current->server_addresses[index];
  e.retry_ms = pc->server_retry_timeout_ms;
  e.probe_timeout_ms = pc->timeout_ms == 0 ? 1000 : pc->timeout_ms;
  if (auto found = tls_->find(pool); found != tls_->end()) {
    e.tls = serverTlsSetup(found->second, current->config, current->config.servers[index]);
  }
  e.auth = serverAuthRequest(*current);
  e.retry = std::make_unique<net::Timer>(loop_, [this, key] { probeEjected(key); });
  e.retry->start(e.retry_ms);
  MCRING_LOG(Warn,
             "pool '%s': server %s ejected after %u consecutive failures; its keys go to "
             "the other servers; retry in %u ms",
             pool.c_str(), identity.c_str(), pc->server_failure_limit, e.retry_ms);
  republish("eject");
}

void Proxy::probeEjected(const std::pair<std::string, std::string>& key) {
  auto it = ejected_.find(key);
  if (it == ejected_.end() || stopping_) {
    return;
  }
  it->second.probe = std::make_unique<HealthProbe>(
      loop_, it->second.address, it->second.probe_timeout_ms,
      [this, key](bool healthy) {
        auto found = ejected_.find(key);
        if (found == ejected_.end()) {
          return;
        }
        found->second.probe.reset();
        if (!healthy) {
          MCRING_LOG(Info, "pool '%s': ejected server %s still down; retry in %u ms",
                     key.first.c_str(), key.second.c_str(), found->second.retry_ms);
          found->second.retry->start(found->second.retry_ms);
          return;
        }
        ejected_.erase(found);
        MCRING_LOG(Notice, "pool '%s': server %s answers again: back in the ring",
                   key.first.c_str(), key.second.c_str());
        republish("return");
      },
      it->second.tls, it->second.auth);
}

void Proxy::watchReferencedFiles() {
  std::vector<std::string> files;
  for (const config::PoolConfig& p : config_->pools) {
    for (const std::string* f :
         {&p.tls_cert, &p.tls_key, &p.tls_ca, &p.server_tls_ca, &p.server_tls_cert,
          &p.server_tls_key, &p.client_auth_file, &p.server_auth_file}) {
      if (!f->empty()) {
        files.push_back(*f);
      }
    }
  }
  watcher_.setExtraFiles(std::move(files));
}

void Proxy::shutdown() {
  if (stopping_) {
    MCRING_LOG(Warn, "second signal: exiting now");
    _exit(0);
  }
  MCRING_LOG(Notice, "shutting down: no new connections, finishing in-flight requests");
  drain(/*handover=*/false);
}

void Proxy::upgrade() {
  if (stopping_) {
    MCRING_LOG(Warn, "upgrade: SIGUSR2 ignored, this process is stopping");
    return;
  }
  if (upgrade_ && upgrade_->inProgress()) {
    MCRING_LOG(Warn, "upgrade: SIGUSR2 ignored, an upgrade is in progress (new process %d)",
               static_cast<int>(upgrade_->pid()));
    return;
  }
  std::vector<int> fds;
  for (const auto& [name, entry] : listeners_) {
    fds.push_back(entry.listener->fd());
  }
  if (admin_ && admin_->listenFd() >= 0) {
    fds.push_back(admin_->listenFd());
  }
  upgrade_ = std::make_unique<Upgrade>(loop_, [this](bool ready, const std::string& why) {
    const char* deferred = std::exchange(reload_after_upgrade_, nullptr);
    if (!ready) {
      MCRING_LOG(Error, "upgrade failed: %s; pid %d keeps serving", why.c_str(),
                 static_cast<int>(::getpid()));
      if (deferred != nullptr) {
        reload(deferred);
      }
      return;
    }
    MCRING_LOG(Notice,
               "upgrade: new process %d is ready; pid %d stops accepting, finishes the requests "
               "in flight and exits (within %u ms)",
               static_cast<int>(upgrade_->pid()), static_cast<int>(::getpid()),
               options_.shutdown_grace_ms);
    handOver();
  });
  std::string error;
  if (!upgrade_->start(options_.exec_path, options_.exec_args, fds, kUpgradeReadyTimeoutMs,
                       &error)) {
    upgrade_.reset();
    MCRING_LOG(Error, "upgrade failed: %s; pid %d keeps serving", error.c_str(),
               static_cast<int>(::getpid()));
    return;
  }
  MCRING_LOG(Notice, "upgrade: started %s as pid %d with %zu listening socket(s)",
             options_.exec_path.c_str(), static_cast<int>(upgrade_->pid()), fds.size());
}

void Proxy::handOver() {
  handed_over_ = true;  // the pid file is the new process's
  if (stopping_) {
    return;  // SIGTERM came first: the new process serves, this one is already draining
  }
  for (auto& [name, entry] : listeners_) {
    entry.listener->handOver();  // a unix socket's file is the new process's now
  }
  if (admin_) {
    admin_->stopAccepting();
  }
  drain(/*handover=*/true);
}

void Proxy::drain(bool handover) {
  stopping_ = true;
  ejected_.clear();
  watch_event_.reset();
  debounce_.reset();
  listeners_.clear();
  for (auto& w : workers_) {
    w->postShutdown(options_.shutdown_grace_ms, handover);
  }
  // Workers stop their loops when drained (or at the end of the grace period).
  exit_timer_ = std::make_unique<net::Timer>(loop_, [this] {
    for (auto& w : workers_) {
      if (!w->finished()) {
        return;
      }
    }
    loop_.stop();
  });
  exit_timer_->start(20, /*periodic=*/true);
}

int Proxy::run() {
  loop_.run();
  // A DNS query still out when its resolver goes is failed by a callback libevent runs on the
  // loop's next pass, which frees the query's state: give it that pass while everything else
  // is still here (without it, an exit during a resolution leaked that state). No reload may
  // start in that pass (it would use discovery_).
  stopping_ = true;
  discovery_.reset();
  loop_.runPending();
  for (auto& w : workers_) {
    w->join();
  }
  MCRING_LOG(Notice, "mcring stopped");
  return 0;
}

}  // namespace mcring::core
