// MembershipMonitor: per-second sampling, event prediction and measurement, verdict lines.
#include "proxy/admin/membership_monitor.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "config/change_plan.h"
#include "proxy/common/clock.h"
#include "proxy/common/log.h"

namespace mcring::core {
namespace {

std::vector<std::string> identities(const config::PoolTopology& p) {
  std::vector<std::string> ids;
  for (const auto& s : p.config.servers) {
    ids.push_back(s.identity());
  }
  return ids;
}

std::unique_ptr<const routing::Router> modulaOf(const config::PoolTopology& p) {
  std::vector<routing::ServerSpec> specs;
  for (const auto& s : p.config.servers) {
    specs.push_back(s.spec);
  }
  routing::RouterOptions o = p.config.routing;
  o.distribution = routing::Distribution::Modula;
  std::string error;
  return routing::Router::build(specs, o, &error);
}

std::string pct(double f) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", f * 100.0);
  return buf;
}

}  // namespace

MembershipMonitor::MembershipMonitor(net::EventLoop& loop,
                                     std::vector<const stats::BackendStatsList*> lists)
    : lists_(std::move(lists)) {
  timer_ = std::make_unique<net::Timer>(loop, [this] { sampleSecond(); });
  timer_->start(1000, /*periodic=*/true);
}

int64_t MembershipMonitor::nowSecond() const {
  return static_cast<int64_t>(common::monotonicNs() / 1000000000ULL);
}

void MembershipMonitor::sampleSecond() {
  int64_t second = nowSecond();
  std::map<std::string, stats::MissCounters> pools;
  std::vector<stats::BackendTotals> totals = stats::sumBackends(lists_);
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& t : totals) {
    // A miss answered by warm-up is a hit for the client.
    uint64_t warmed = std::min(t.warmup_hits, t.get_misses);
    stats::MissCounters c{t.get_keys, t.get_hits + warmed, t.get_misses - warmed};
    auto& tl = backend_timelines_[{t.pool, t.identity}];
    if (!tl) {
      tl = std::make_unique<stats::MissTimeline>();
    }
    tl->sample(second, c);
    auto& p = pools[t.pool];
    p.gets += c.gets;
    p.hits += c.hits;
    p.misses += c.misses;
  }
  for (const auto& [pool, c] : pools) {
    auto& tl = pool_timelines_[pool];
    if (!tl) {
      tl = std::make_unique<stats::MissTimeline>();
    }
    tl->sample(second, c);
  }
  for (auto& e : events_) {
    if (!e.judged) {
      judge(e);
    }
  }
}

// Measures an event against its pool's timeline; logs the verdict once it is final.
void MembershipMonitor::judge(MembershipEvent& e) {
  auto it = pool_timelines_.find(e.pool);
  if (it == pool_timelines_.end()) {
    return;
  }
  std::vector<stats::MissPoint> series = it->second->series();
  e.measured = stats::analyzeMissSpike(series, e.change_second, spike_options_);
  int64_t age = nowSecond() - e.change_second;
  bool final_now = (e.measured.spike && e.measured.recovered) || (!e.measured.spike && age >= 60) ||
                   age >= spike_options_.horizon_seconds;
  std::string servers = std::to_string(e.servers_before) + " -> " + std::to_string(e.servers_after);
  std::string change;
  if (!e.added.empty()) {
    change += "+" + std::to_string(e.added.size()) + " server" + (e.added.size() > 1 ? "s" : "");
  }
  if (!e.removed.empty()) {
    change += std::string(change.empty() ? "" : " ") + "-" + std::to_string(e.removed.size()) +
              " server" + (e.removed.size() > 1 ? "s" : "");
  }
  if (change.empty()) {
    change = "reweight/rename";
  }
  std::string v = "event " + std::to_string(e.id) + " " + e.kind + ": pool '" + e.pool + "' " +
                  change + " (" + servers + "): predicted " + pct(e.predicted_moved) +
                  " of keys moved (modula would move " + pct(e.modula_moved) + "); ";
  if (e.warmup_window_ms > 0) {
    v += "warm-up " + std::to_string(e.warmup_window_ms) + " ms; ";
  }
  if (!e.measured.baseline_valid) {
    v += "no baseline (too little traffic before the change)";
  } else if (e.measured.spike) {
    v += "miss ratio " + pct(e.measured.baseline) + " -> peak " + pct(e.measured.peak);
    v += e.measured.recovered
             ? ", recovered in " + std::to_string(e.measured.recovery_seconds) + " s"
             : ", not recovered yet";
  } else {
    v +=
        "miss ratio " + pct(e.measured.baseline) + ", no spike (peak " + pct(e.measured.peak) + ")";
  }
  e.verdict = v;
  if (final_now) {
    e.judged = true;
    MCRING_LOG(Notice, "%s", v.c_str());
  }
}

void MembershipMonitor::onTopologyChange(const config::Topology& before,
                                         const config::Topology& after, const std::string& kind) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& p : after.pools) {
    const config::PoolTopology* old = before.findPool(p->config.name);
    if (old == nullptr || old->router == nullptr || p->router == nullptr) {
      continue;  // new, or a pool with routes (no servers of its own) before or after
    }
    std::vector<std::string> before_ids = identities(*old);
    std::vector<std::string> after_ids = identities(*p);
    bool same = before_ids == after_ids;
    for (size_t i = 0; same && i < old->config.servers.size(); ++i) {
      same = old->config.servers[i].spec.weight == p->config.servers[i].spec.weight &&
             old->config.servers[i].spec.name == p->config.servers[i].spec.name;
    }
    if (same && old->config.routing.distribution == p->config.routing.distribution &&
        old->config.routing.hash == p->config.routing.hash) {
      continue;
    }
    MembershipEvent e;
    e.id = next_id_++;
    e.time = static_cast<int64_t>(::time(nullptr));
    e.change_second = nowSecond();
    e.kind = kind;
    e.pool = p->config.name;
    e.servers_before = before_ids.size();
    e.servers_after = after_ids.size();
    e.warmup_window_ms = p->config.warmup_window_ms;
    for (const auto& id : after_ids) {
      if (std::find(before_ids.begin(), before_ids.end(), id) == before_ids.end()) {
        e.added.push_back(id);
      }
    }
    for (const auto& id : before_ids) {
      if (std::find(after_ids.begin(), after_ids.end(), id) == after_ids.end()) {
        e.removed.push_back(id);
      }
    }
    routing::MigrationPlan plan =
        routing::planMigration(*old->router, before_ids, *p->router, after_ids);
    e.method = std::string(routing::migrationMethodName(plan.method));
    e.predicted_moved = plan.moved;
    e.ideal_moved = config::idealMovedShare(old->config.servers, p->config.servers);
    e.warning = config::excessMoveWarning(e.predicted_moved, e.ideal_moved);
    e.cells = plan.cells();
    e.before_ids = plan.before;
    e.after_ids = plan.after;
    auto mb = modulaOf(*old);
    auto ma = modulaOf(*p);
    if (mb && ma) {
      e.modula_moved = routing::planMigration(*mb, before_ids, *ma, after_ids).moved;
    }
    std::string warmup = e.warmup_window_ms == 0
                             ? std::string()
                             : "; warm-up window " + std::to_string(e.warmup_window_ms) + " ms";
    MCRING_LOG(Notice,
               "event %llu %s: pool '%s' %zu -> %zu servers: predicted %s of keys "
               "moved (%s; modula would move %s)%s",
               static_cast<unsigned long long>(e.id), e.kind.c_str(), e.pool.c_str(),
               e.servers_before, e.servers_after, pct(e.predicted_moved).c_str(), e.method.c_str(),
               pct(e.modula_moved).c_str(), warmup.c_str());
    if (!e.warning.empty()) {
      MCRING_LOG(Warn, "event %llu: pool '%s': %s", static_cast<unsigned long long>(e.id),
                 e.pool.c_str(), e.warning.c_str());
    }
    events_.push_back(std::move(e));
    if (events_.size() > kKeepEvents) {
      events_.erase(events_.begin());
    }
  }
}

std::vector<MembershipEvent> MembershipMonitor::events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_;
}

std::vector<stats::MissPoint> MembershipMonitor::poolSeries(const std::string& pool) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = pool_timelines_.find(pool);
  return it == pool_timelines_.end() ? std::vector<stats::MissPoint>{} : it->second->series();
}

std::vector<stats::MissPoint> MembershipMonitor::backendSeries(const std::string& pool,
                                                               const std::string& identity) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = backend_timelines_.find({pool, identity});
  return it == backend_timelines_.end() ? std::vector<stats::MissPoint>{} : it->second->series();
}

}  // namespace mcring::core
