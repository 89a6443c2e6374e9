// Worker: thread, event loop, topology switching, session lifetime, shutdown.
#include "proxy/control/worker.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>

#include "proxy/backend/route_limits.h"
#include "proxy/backend/spread_write.h"
#include "proxy/common/clock.h"
#include "proxy/common/log.h"
#include "proxy/dispatch/dispatch_steps.h"
#include "proxy/dispatch/route_tree.h"
#include "proxy/dispatch/warmup.h"
#include "proxy/session/client_session.h"

namespace mcring::core {

namespace {

// How often sessions waiting for input memory are checked for clients that went away.
constexpr uint64_t kInputProbeMs = 200;

protocol::ParserLimits limitsFor(const config::PoolConfig& pc) {
  protocol::ParserLimits limits;
  limits.item_size_max = pc.item_size_max;
  limits.max_keys = pc.max_multiget_keys;
  return limits;
}

}  // namespace

Worker::Worker(int id, int count, const stats::StatsRenderer& reporter)
    : SessionContext(dispatchSteps(), reporter), id_(id), count_(count > 0 ? count : 1) {
  reaper_ = std::make_unique<net::Timer>(*loop_, [this] { reapRetired(); });
  idle_sweep_ = std::make_unique<net::Timer>(*loop_, [this] { sweepIdleClients(); });
  input_wake_ = std::make_unique<net::Timer>(*loop_, [this] { wakeInputWaiters(); });
  input_probe_ = std::make_unique<net::Timer>(*loop_, [this] { probeInputWaiters(); });
  hot_key_roll_ = std::make_unique<net::Timer>(*loop_, [this] { rollHotKeys(); });
}

Worker::~Worker() {
  for (ClientSession* s : sessions_) {
    delete s;
  }
  sessions_.clear();
  reapRetired();
  // Everything in flight fails while every server its requests name is still there; then the
  // servers go, and with the last of each link's servers its connections.
  stopping_ = true;
  links_.abortAll(BackendFailure::ConnectionClosed);
  // Backends count into backend_stats_ and counters_ while they go: destroy them first.
  draining_.clear();
  pools_.clear();
}

void Worker::start(std::shared_ptr<const config::Topology> topology,
                   std::shared_ptr<const PoolTlsMap> tls) {
  applyTopology(std::move(topology), std::move(tls));
  thread_ = std::thread([this] { run(); });
}

void Worker::join() {
  if (thread_.joinable()) {
    thread_.join();
  }
}

void Worker::run() {
  loop_->run();
  finished_.store(true, std::memory_order_release);
}

void Worker::postClient(int fd, std::string pool, std::shared_ptr<std::atomic<uint32_t>> open_count,
                        std::shared_ptr<const net::TlsContext> tls) {
  loop_->post([this, fd, pool = std::move(pool), open_count = std::move(open_count),
               tls = std::move(tls)]() mutable {
    acceptClient(fd, pool, std::move(open_count), std::move(tls));
  });
}

void Worker::postTopology(std::shared_ptr<const config::Topology> topology,
                          std::shared_ptr<const PoolTlsMap> tls) {
  loop_->post([this, topology = std::move(topology), tls = std::move(tls)]() mutable {
    applyTopology(std::move(topology), std::move(tls));
  });
}

void Worker::postSpread(std::string pool, std::shared_ptr<const SpreadSet> set) {
  loop_->post([this, pool = std::move(pool), set = std::move(set)]() mutable {
    auto it = pools_.find(pool);
    // Acknowledged even by a worker without the pool: it sends nothing to the key's servers.
    bool quiet = true;
    if (it != pools_.end() && !it->second->removed) {
      // Quiet if no write this worker sent to a new key's primary alone is still in flight:
      // then its copies may be filled at once (SpreadSet::settled).
      quiet = spreadStartsQuiet(*it->second, it->second->spread.get(), *set);
      it->second->spread = set;
    }
    set->ack(common::monotonicNs() / 1000000, quiet);
  });
}

void Worker::postShutdown(uint32_t grace_ms, bool handover) {
  loop_->post([this, grace_ms, handover] {
    shutting_down_ = true;
    handing_over_ = handover;
    idle_sweep_->stop();
    idle_sweep_ms_ = 0;
    grace_timer_ = std::make_unique<net::Timer>(*loop_, [this] {
      MCRING_LOG(Warn, "worker %d: grace period over with %zu client(s) still open", id_,
                 sessions_.size());
      loop_->stop();
    });
    grace_timer_->start(grace_ms);
    std::vector<ClientSession*> open(sessions_.begin(), sessions_.end());
    for (ClientSession* s : open) {
      if (handover) {
        s->beginHandover();
      } else {
        s->beginDrain();
      }
    }
    if (handover) {
      // Sessions close themselves when their replies are written (onWritable); this catches
      // the ones that reached a boundary another way (a partial request the client completed
      // and that needed no reply, a reply written before the hand-over began).
      handover_sweep_ = std::make_unique<net::Timer>(*loop_, [this] {
        std::vector<ClientSession*> current(sessions_.begin(), sessions_.end());
        for (ClientSession* s : current) {
          s->closeIfHandedOver();
        }
      });
      handover_sweep_->start(20, /*periodic=*/true);
    }
    checkShutdownDone();
  });
}

void Worker::checkShutdownDone() {
  if (shutting_down_ && sessions_.empty()) {
    loop_->stop();
  }
}

void Worker::acceptClient(int fd, const std::string& pool_name,
                          std::shared_ptr<std::atomic<uint32_t>> open_count,
                          std::shared_ptr<const net::TlsContext> tls) {
  auto it = pools_.find(pool_name);
  // Accepted just before an upgrade's hand-over: served like the others, closed at a boundary.
  if ((shutting_down_ && !handing_over_) || it == pools_.end() || it->second->removed) {
    ::close(fd);
    open_count->fetch_sub(1, std::memory_order_relaxed);
    return;
  }
  auto* session = new ClientSession(*this, *it->second, next_session_id_++, std::move(open_count));
  net::TlsSetup setup{std::move(tls), {}, it->second->config().tls_handshake_timeout_ms};
  if (!session->attach(fd, setup.context ? &setup : nullptr)) {
    delete session;
    return;
  }
  sessions_.insert(session);
  stats::bump(counters_.total_connections);
  stats::bump(counters_.curr_connections);
  if (handing_over_) {
    session->beginHandover();
  }
}

void Worker::retire(ClientSession* session) {
  if (sessions_.erase(session) > 0) {
    stats::drop(counters_.curr_connections);
    retired_.push_back(session);
    if (!reaper_->pending()) {
      reaper_->start(0);
    }
  }
}

void Worker::scheduleInputWake() {
  if (!input_wake_->pending()) {
    input_wake_->start(0);
  }
}

// Memory for large requests being received was freed: the sessions waiting for it try again, in
// the order they started waiting (one that still finds none waits again).
void Worker::wakeInputWaiters() {
  for (auto& [name, pool] : pools_) {
    std::vector<RequestOwner*> waiting;
    waiting.swap(pool->input_waiters);
    for (RequestOwner* s : waiting) {
      s->onInputBudget();
    }
  }
}

void Worker::onInputWaiting() {
  if (!input_probe_->pending()) {
    input_probe_->start(kInputProbeMs, /*periodic=*/true);
  }
}

// Sessions waiting for input memory whose clients went away are closed (which frees their
// reservations for the others); the probe stops when nobody waits.
void Worker::probeInputWaiters() {
  bool waiting = false;
  const uint64_t now = common::coarseMonotonicNs();
  for (auto& [name, pool] : pools_) {
    std::vector<RequestOwner*> waiters = pool->input_waiters;  // close() edits the list
    for (RequestOwner* s : waiters) {
      s->abandonIfPeerGone();
    }
    if (!pool->input_waiters.empty()) {
      std::vector<RequestOwner*> holders = pool->input_holders;
      for (RequestOwner* s : holders) {
        s->abandonIfInputStalled(now);
      }
    }
    waiting = waiting || !pool->input_waiters.empty();
  }
  if (!waiting) {
    input_probe_->stop();
  }
}

void Worker::reapRetired() {
  std::vector<ClientSession*> dead;
  dead.swap(retired_);
  for (ClientSession* s : dead) {
    retired_peak_bytes_ += s->peakBuffered();
    delete s;
  }
  if (retired_peak_bytes_ >= ClientSession::kTrimAfterPeak) {
    // Clients that had megabytes buffered are gone (one big one, or many that each held a part
    // of a large request): give that memory back to the OS rather than let the allocator keep
    // it (rare, so the cost of trimming does not matter).
    retired_peak_bytes_ = 0;
    malloc_trim(0);
  }
  checkShutdownDone();
}

// Switches to a new snapshot between two requests (this runs as a posted task, so no request is
// half-processed). Servers that stay keep their connections; removed ones drain in the
// background; pools that left have their sessions drained.
void Worker::applyTopology(std::shared_ptr<const config::Topology> topology,
                           std::shared_ptr<const PoolTlsMap> tls) {
  std::unordered_map<std::string, bool> seen;
  for (const auto& pool_topo : topology->pools) {
    const std::string& name = pool_topo->config.name;
    seen[name] = true;
    auto& runtime = pools_[name];
    if (!runtime) {
      runtime = std::make_unique<PoolRuntime>();
      runtime->name = name;
      runtime->memory = poolMemory().add(name);
      runtime->replies_budget.mirrorTo(&runtime->memory->replies_used);
      runtime->replies_reserve.mirrorTo(&runtime->memory->reserve_used);
      runtime->inputs_budget.mirrorTo(&runtime->memory->inputs_used);
    }
    // A pool that a reload removed and this one adds again starts afresh: its servers were
    // drained (by_index is empty), so its old placement cannot open a warm-up window. (It did:
    // the window's previous_by_index was that empty list, and the first moved key's lookup read
    // past it, a crash.)
    std::shared_ptr<const config::PoolTopology> previous =
        runtime->removed ? nullptr : runtime->topology;
    std::vector<BackendServer*> previous_by_index = runtime->by_index;
    runtime->topology = pool_topo;
    runtime->handlers = buildPoolHandlers(pool_topo->config);
    runtime->tls = {};
    if (prefix_stats_ != nullptr) {
      runtime->detail = prefix_stats_->forPool(name, pool_topo->config.prefix_delimiter,
                                               pool_topo->config.detail_max_prefixes);
      runtime->detail_counts = &runtime->detail->worker(static_cast<size_t>(id_));
      runtime->detail_on = &runtime->detail->enabledFlag();
    }
    if (tls) {
      if (auto found = tls->find(name); found != tls->end()) {
        runtime->tls = found->second;
      }
    }
    runtime->removed = false;
    runtime->parser = protocol::RequestParser(limitsFor(pool_topo->config));
    // This worker's share of the pool's memory budget, an eighth of it kept for clients that
    // hold almost nothing; large requests being received may use a quarter of it more.
    const uint64_t share = pool_topo->config.buffer_limit / count_;
    runtime->replies_reserve.setLimit(share / 8);
    runtime->replies_budget.setLimit(share - share / 8);
    runtime->inputs_budget.setLimit(pool_topo->config.buffer_limit / 4 / count_);
    runtime->memory->limit.store(share + runtime->inputs_budget.limit(), std::memory_order_relaxed);
    configureHotKeys(*runtime);
    std::unordered_map<std::string, std::unique_ptr<BackendServer>> next;
    runtime->by_index.clear();
    const auto& servers = pool_topo->config.servers;
    for (size_t i = 0; i < servers.size(); ++i) {
      std::string identity = servers[i].identity();
      std::unique_ptr<BackendServer> server;
      auto setup = serverTlsSetup(runtime->tls, pool_topo->config, servers[i]);
      LinkSettings link_settings{.timeout_ms = pool_topo->config.timeout_ms,
                                 .connections = pool_topo->config.server_connections,
                                 .auth = serverAuthRequest(*pool_topo),
                                 .tls = setup};
      std::shared_ptr<BackendLink> link = links_.get(
          *this, name, identity, pool_topo->server_addresses[i], std::move(link_settings));
      auto old = runtime->servers.find(identity);
      // A server whose link settings changed (TLS switched on or off, another timeout,
      // connection count or authentication) starts afresh on its new link (the old one drains);
      // one that keeps its link takes the new TLS context for its next connections.
      if (old != runtime->servers.end() && &old->second->link() != link.get()) {
        old = runtime->servers.end();
      }
      if (old != runtime->servers.end()) {
        server = std::move(old->second);
        runtime->servers.erase(old);
      } else if (auto again = next.find(identity); again != next.end()) {
        runtime->by_index.push_back(again->second.get());
        continue;
      } else {
        server = std::make_unique<BackendServer>(*this, *runtime, identity,
                                                 servers[i].displayName(), std::move(link));
      }
      server->setTls(std::move(setup));
      runtime->by_index.push_back(server.get());
      next.emplace(identity, std::move(server));
    }
    std::vector<std::unique_ptr<BackendServer>> removed;
    for (auto& [identity, server] : runtime->servers) {
      removed.push_back(std::move(server));
    }
    runtime->servers = std::move(next);
    bool moved = previous != nullptr && !pool_topo->config.routed() && !previous->config.routed() &&
                 placementChanged(*previous, *pool_topo);
    if (moved || pool_topo->config.warmup_window_ms == 0) {
      closeWarmup(*runtime);
    }
    if (moved && pool_topo->config.warmup_window_ms > 0) {
      openWarmup(*runtime, std::move(previous), std::move(previous_by_index), std::move(removed));
    } else {
      for (auto& server : removed) {
        // A window still open reads moved keys from their previous servers: one replaced by a
        // server on a new link (its link settings changed) stays with the window, not reaped
        // while the window may still send it a key's second hop.
        if (runtime->warmup && std::find(runtime->warmup->previous_by_index.begin(),
                                         runtime->warmup->previous_by_index.end(), server.get()) !=
                                   runtime->warmup->previous_by_index.end()) {
          runtime->warmup->retained.push_back(std::move(server));
        } else {
          drain(std::move(server));
        }
      }
    }
  }
  for (auto& [name, runtime] : pools_) {
    if (!seen.count(name) && !runtime->removed) {
      runtime->removed = true;
      for (ClientSession* s : std::vector<ClientSession*>(sessions_.begin(), sessions_.end())) {
        if (&s->pool() == runtime.get()) {
          s->beginDrain();
        }
      }
      for (auto& [identity, server] : runtime->servers) {
        drain(std::move(server));
      }
      runtime->servers.clear();
      runtime->by_index.clear();
      closeWarmup(*runtime);
      runtime->hot_keys.reset();
      if (hot_key_board_ != nullptr) {
        hot_key_board_->withdraw(id_, name);
      }
    }
  }
  closeStaleRouteWarmups();
  for (const auto& pool_topo : topology->pools) {
    applyRoutes(*pools_[pool_topo->config.name]);
  }
  topology_ = std::move(topology);
  reapDraining();
  scheduleIdleSweep();
  scheduleHotKeyRoll();
}

// A routed listener's routes, resolved to this worker's pools of the same snapshot (the config
// guarantees each named pool exists, has servers and no routes of its own).
void Worker::applyRoutes(PoolRuntime& runtime) {
  // Each route's pool before this snapshot: a route that now sends to another pool opens that
  // pool's warm-up window from the old one (below).
  std::vector<std::pair<std::string, PoolRuntime*>> before;
  for (const RouteRuntime& r : runtime.routes) {
    before.emplace_back(r.name, r.pool);
  }
  runtime.routes.clear();
  runtime.route_table = routing::PrefixTable();
  runtime.home = nullptr;
  auto find = [&](const std::string& name) -> PoolRuntime* {
    auto it = pools_.find(name);
    return it != pools_.end() && !it->second->routed() ? it->second.get() : nullptr;
  };
  const config::PoolConfig& cfg = runtime.config();
  for (const config::RouteConfig& rc : cfg.routes) {
    RouteRuntime route;
    route.config = &rc;
    route.name = rc.name();
    route.pool = find(rc.pool);
    if (route.pool == nullptr || rc.pool == cfg.name) {
      continue;  // not reachable with a validated config
    }
    if (rc.shadow) {
      route.shadow = find(rc.shadow->pool);
    }
    for (const std::string& name : rc.failover) {
      if (PoolRuntime* p = find(name)) {
        route.failover.push_back(p);
      }
    }
    route.stats = routeStats().add(cfg.name, rc.name());
    if (rc.rate_limit) {
      route.limit = RouteLimits::process().bucket(cfg.name, rc.name(), *rc.rate_limit);
    }
    route.root = buildRouteTree(route);
    const auto index = static_cast<uint32_t>(runtime.routes.size());
    if (rc.is_default) {
      runtime.route_table.setDefault(index);
      runtime.home = route.pool;
    } else {
      runtime.route_table.add(rc.prefix, index);
    }
    runtime.routes.push_back(std::move(route));
  }
  if (runtime.home == nullptr && !runtime.routes.empty()) {
    runtime.home = runtime.routes.front().pool;
  }
  // A route moved to another pool: with that pool's warmup_window, its misses are answered from
  // the old pool's copy and copied over for the window (warm migration across pools). The old
  // pool's servers stay its own; closeStaleRouteWarmups ends the window if they change.
  for (const RouteRuntime& route : runtime.routes) {
    for (const auto& [name, old_pool] : before) {
      PoolRuntime* to = route.pool;
      if (name != route.name || old_pool == to || old_pool == nullptr || old_pool->removed ||
          old_pool->by_index.empty() || to->warmup || to->config().warmup_window_ms == 0) {
        continue;
      }
      openWarmup(*to, old_pool->topology, old_pool->by_index, {});
      if (id_ == 0) {  // once, not once per worker
        MCRING_LOG(Notice, "route '%s' of '%s' moved from pool '%s' to '%s': warm-up for %u ms",
                   route.name.c_str(), runtime.name.c_str(), old_pool->name.c_str(),
                   to->name.c_str(), to->config().warmup_window_ms);
      }
    }
  }
}

// A window opened by a route's move reads the old pool's servers, which that pool owns: once
// the old pool is removed or its server list changes, the window ends.
void Worker::closeStaleRouteWarmups() {
  for (auto& [name, runtime] : pools_) {
    if (!runtime->warmup || runtime->warmup->previous->config.name == name) {
      continue;
    }
    auto source = pools_.find(runtime->warmup->previous->config.name);
    if (source == pools_.end() || source->second->removed ||
        source->second->by_index != runtime->warmup->previous_by_index) {
      closeWarmup(*runtime);
    }
  }
}

void Worker::configureHotKeys(PoolRuntime& runtime) {
  const config::PoolConfig& cfg = runtime.config();
  if (!cfg.hot_keys) {
    if (runtime.hot_keys && hot_key_board_ != nullptr) {
      hot_key_board_->withdraw(id_, runtime.name);
    }
    runtime.hot_keys.reset();
    return;
  }
  if (!runtime.hot_keys || runtime.hot_keys->capacity() != cfg.hot_key_capacity) {
    runtime.hot_keys = std::make_unique<stats::HotKeySketch>(cfg.hot_key_capacity);
    runtime.hot_keys_since_ms = common::wallClockMs();
  }
}

void Worker::scheduleHotKeyRoll() {
  if (hot_key_roll_->pending() || shutting_down_) {
    return;
  }
  constexpr int64_t w = stats::HotKeyBoard::kWindowMs;
  const int64_t now = common::wallClockMs();
  // Every worker rolls on the same wall-clock boundaries, so their windows line up. libevent's
  // timers run on the monotonic clock and can fire a little before the wall clock's boundary:
  // the next boundary is then a few ms away, and a window that short would report a noisy rate
  // (a 5 ms window was seen), so such a roll waits for the boundary after it.
  int64_t delay = w - now % w;
  if (delay < w / 4) {
    delay += w;
  }
  hot_key_roll_->start(static_cast<uint64_t>(delay));
}

void Worker::rollHotKeys() {
  const int64_t now = common::wallClockMs();
  bool any = false;
  for (auto& [name, runtime] : pools_) {
    stats::HotKeySketch* sketch = runtime->hot_keys.get();
    if (sketch == nullptr) {
      continue;
    }
    any = true;
    if (hot_key_board_ != nullptr && now > runtime->hot_keys_since_ms) {
      stats::HotKeyWindow w;
      w.start_ms = runtime->hot_keys_since_ms;
      w.end_ms = now;
      w.total = sketch->total();
      w.floor = sketch->floor();
      w.memory_bytes = sketch->memoryBytes();
      w.top = sketch->top(sketch->capacity());
      hot_key_board_->publish(id_, name, std::move(w));
    }
    sketch->clear();
    runtime->hot_keys_since_ms = now;
  }
  if (any) {
    scheduleHotKeyRoll();
  }
}

void Worker::scheduleIdleSweep() {
  uint64_t smallest = 0;
  for (const auto& pool_topo : topology_->pools) {
    for (const uint64_t t : {uint64_t{pool_topo->config.client_idle_timeout_ms},
                             uint64_t{pool_topo->config.client_request_timeout_ms}}) {
      if (t != 0 && (smallest == 0 || t < smallest)) {
        smallest = t;
      }
    }
  }
  const uint64_t period = smallest == 0 ? 0 : std::clamp<uint64_t>(smallest / 8, 10, 1000);
  if (period == idle_sweep_ms_) {
    return;
  }
  idle_sweep_ms_ = period;
  idle_sweep_->stop();
  if (period != 0) {
    idle_sweep_->start(period, true);
  }
}

void Worker::sweepIdleClients() {
  const uint64_t now_ms = common::coarseMonotonicNs() / 1000000;
  // Closing retires the session (it leaves sessions_): walk a copy.
  for (ClientSession* s : std::vector<ClientSession*>(sessions_.begin(), sessions_.end())) {
    if (!s->closeIfIdle(now_ms)) {
      s->closeIfRequestStalled(now_ms);
    }
  }
}

void Worker::openWarmup(PoolRuntime& runtime, std::shared_ptr<const config::PoolTopology> previous,
                        std::vector<BackendServer*> previous_by_index,
                        std::vector<std::unique_ptr<BackendServer>> removed) {
  auto window = std::make_unique<WarmupWindow>();
  window->id = next_warmup_id_++;
  window->previous = std::move(previous);
  window->previous_by_index = std::move(previous_by_index);
  window->retained = std::move(removed);
  // The timer posts the close: a Timer must not be destroyed from inside its own callback.
  window->timer = std::make_unique<net::Timer>(*loop_, [this, rt = &runtime, id = window->id] {
    loop_->post([this, rt, id] {
      if (rt->warmup && rt->warmup->id == id) {
        closeWarmup(*rt);
      }
    });
  });
  window->timer->start(runtime.config().warmup_window_ms);
  runtime.warmup = std::move(window);
  stats::bump(counters_.warmup_windows_open);
}

// The previous placement is released; servers kept only for the window drain and go.
void Worker::closeWarmup(PoolRuntime& runtime) {
  if (!runtime.warmup) {
    return;
  }
  for (auto& server : runtime.warmup->retained) {
    drain(std::move(server));
  }
  runtime.warmup.reset();
  stats::drop(counters_.warmup_windows_open);
  reapDraining();
}

void Worker::drain(std::unique_ptr<BackendServer> server) {
  server->markDraining();
  draining_.push_back(std::move(server));
}

void Worker::reapDraining() {
  for (size_t i = 0; i < draining_.size();) {
    if (draining_[i]->idle()) {
      // Its link's connections close with the link's last server. Destroying it from inside one of
      // its own connection's callbacks is not safe: defer.
      loop_->post([server = draining_[i].release()] { delete server; });
      draining_[i] = std::move(draining_.back());
      draining_.pop_back();
    } else {
      ++i;
    }
  }
}

}  // namespace mcring::core
