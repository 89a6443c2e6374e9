// HotKeyWatch: merged hot keys with their servers, backend rates, hot-key events.
#include "proxy/admin/hot_key_watch.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "proxy/admin/hot_spread_plan.h"
#include "proxy/common/clock.h"
#include "proxy/common/log.h"
#include "proxy/stats/hyperloglog.h"

namespace mcring::core {

namespace {

uint64_t keyedRequests(const stats::BackendStats& b) {
  return b.get_keys.load(std::memory_order_relaxed) + b.stores.load(std::memory_order_relaxed) +
         b.deletes.load(std::memory_order_relaxed) +
         b.other_commands.load(std::memory_order_relaxed);
}

std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", share * 100);
  return buf;
}

void describeSpread(const SpreadEntry& e, const config::PoolConfig& cfg, HotKeySpread* out) {
  out->phase = e.phase.load() == SpreadPhase::Spreading ? "spreading" : "collapsing";
  const uint32_t filled = e.readable(common::monotonicNs() / 1000000);
  for (uint32_t i = 0; i < e.copies.size(); ++i) {
    out->copies.push_back(e.copies[i] < cfg.servers.size() ? cfg.servers[e.copies[i]].identity()
                                                           : std::string("?"));
    out->filled.push_back((filled & (1u << i)) != 0);
    out->reads.push_back(e.reads[i].load(std::memory_order_relaxed));
  }
  out->fills = e.fills.load();
  out->fills_abandoned = e.fills_abandoned.load();
  out->writes = e.writes_started.load();
}

}  // namespace

std::shared_ptr<const SpreadSet> HotKeyWatch::spreadSet(const std::string& pool) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = spread_.find(pool);
  return it == spread_.end() ? nullptr : it->second;
}

// Each pool's hot set (checkEvents) becomes its next spread set, published to every worker.
void HotKeyWatch::planSpreads(const config::Topology& topology) {
  std::vector<std::pair<std::string, std::shared_ptr<const SpreadSet>>> out;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& pool : topology.pools) {
      const std::string& name = pool->config.name;
      auto cur = spread_.find(name);
      std::set<std::string> none;
      auto hot = hot_.find(name);
      std::shared_ptr<SpreadSet> next =
          planSpread(pool, hot == hot_.end() ? none : hot->second,
                     cur == spread_.end() ? nullptr : cur->second.get(), workers_);
      if (next) {
        spread_[name] = next;
        out.emplace_back(name, std::move(next));
      }
    }
    for (auto it = spread_.begin(); it != spread_.end();) {
      it = topology.findPool(it->first) == nullptr ? spread_.erase(it) : std::next(it);
    }
  }
  if (publish_spread_) {
    for (auto& [name, set] : out) {
      publish_spread_(name, std::move(set));
    }
  }
}

HotKeyWatch::HotKeyWatch(net::EventLoop& loop, const stats::HotKeyBoard& board, int workers,
                         std::vector<const stats::BackendStatsList*> lists, TopologyFn topology)
    : board_(board),
      workers_(workers > 0 ? workers : 1),
      lists_(std::move(lists)),
      topology_(std::move(topology)) {
  timer_ = std::make_unique<net::Timer>(loop, [this] { sampleSecond(); });
  timer_->start(1000, /*periodic=*/true);
}

std::string HotKeyWatch::hashedKey(std::string_view key) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "xxh3:%016" PRIx64, stats::HyperLogLog::hashKey(key));
  return buf;
}

std::vector<PoolHotKeys> HotKeyWatch::report(size_t limit) const {
  std::shared_ptr<const config::Topology> topology = topology_();
  std::map<std::pair<std::string, std::string>, double> rates;
  std::map<std::string, std::shared_ptr<const SpreadSet>> spread;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    rates = rates_;
    spread = spread_;
  }
  std::vector<PoolHotKeys> out;
  if (!topology) {
    return out;
  }
  const int64_t now = common::wallClockMs();
  for (const auto& pool : topology->pools) {
    const config::PoolConfig& cfg = pool->config;
    PoolHotKeys p;
    p.pool = cfg.name;
    p.enabled = cfg.hot_keys;
    // Distinct servers, in config order (a server listed twice counts once).
    std::vector<std::string> identities;
    for (const auto& s : cfg.servers) {
      std::string id = s.identity();
      if (std::find(identities.begin(), identities.end(), id) == identities.end()) {
        identities.push_back(std::move(id));
      }
    }
    double max_rate = 0;
    double sum_rate = 0;
    for (const std::string& id : identities) {
      auto it = rates.find({cfg.name, id});
      double r = it == rates.end() ? 0 : it->second;
      p.backend_rates.emplace_back(id, r);
      max_rate = std::max(max_rate, r);
      sum_rate += r;
    }
    if (sum_rate > 0) {
      p.load_imbalance = max_rate / (sum_rate / static_cast<double>(identities.size()));
    }
    if (auto it = spread.find(cfg.name); it != spread.end() && it->second->topology == pool) {
      for (const auto& e : it->second->entries) {
        HotKeySpread view;
        describeSpread(*e, cfg, &view);
        p.spread.emplace_back(e->key, std::move(view));
      }
    }
    if (cfg.hot_keys) {
      p.memory_bound =
          static_cast<size_t>(workers_) * stats::HotKeySketch::memoryFor(cfg.hot_key_capacity);
      stats::MergedHotKeys m = board_.merged(cfg.name, now, limit);
      p.window_start_ms = m.start_ms;
      p.window_end_ms = m.end_ms;
      p.request_rate = m.request_rate;
      p.memory_bytes = m.memory_bytes;
      for (stats::MergedHotKey& k : m.keys) {
        HotKeyRow row;
        row.count = k.count;
        row.rate = k.rate;
        row.share = k.share;
        row.error = k.error;
        if (pool->router && !cfg.servers.empty()) {
          uint32_t i = pool->router->route(k.key);
          if (i < cfg.servers.size()) {
            row.backends.push_back(cfg.servers[i].identity());
          }
        }
        if (auto it = spread.find(cfg.name); it != spread.end() && it->second->topology == pool) {
          if (const std::shared_ptr<SpreadEntry>* e = it->second->find(k.key)) {
            row.spread = true;
            describeSpread(**e, cfg, &row.spread_state);
          }
        }
        row.key = std::move(k.key);
        p.keys.push_back(std::move(row));
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<HotKeyEvent> HotKeyWatch::events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_;
}

uint64_t HotKeyWatch::eventCount() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_event_id_ - 1;
}

void HotKeyWatch::sampleSecond() {
  const uint64_t now_ns = common::monotonicNs();
  std::map<std::pair<std::string, std::string>, uint64_t> totals;
  for (const stats::BackendStatsList* list : lists_) {
    for (const auto& b : list->snapshot()) {
      totals[{b->pool, b->identity}] += keyedRequests(*b);
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (last_sample_ns_ != 0 && now_ns > last_sample_ns_) {
      const double seconds = static_cast<double>(now_ns - last_sample_ns_) / 1e9;
      rates_.clear();
      for (const auto& [id, n] : totals) {
        auto it = last_requests_.find(id);
        // A backend's stats can go (removed by a reload) and come back from zero.
        uint64_t before = it == last_requests_.end() || it->second > n ? 0 : it->second;
        rates_[id] = static_cast<double>(n - before) / seconds;
      }
    }
    last_requests_ = std::move(totals);
    last_sample_ns_ = now_ns;
  }
  std::shared_ptr<const config::Topology> topology = topology_();
  if (!topology) {
    return;
  }
  std::vector<PoolHotKeys> pools = report(HotKeyWatch::kListed);
  for (const PoolHotKeys& p : pools) {
    if (const config::PoolTopology* pool = topology->findPool(p.pool)) {
      checkEvents(*pool, p);
    }
  }
  planSpreads(*topology);
}

// A key turns hot when its share reaches hot_key_event_percent and its rate hot_key_min_rate, and
// cools when either falls below half of that (hysteresis, so a key hovering at the threshold is
// not an event every second). The minimum rate keeps an idle pool's keys out: at a few requests a
// second, a key is a large share of nothing.
void HotKeyWatch::checkEvents(const config::PoolTopology& pool, const PoolHotKeys& report) {
  const config::PoolConfig& cfg = pool.config;
  const double hot = static_cast<double>(cfg.hot_key_event_percent) / 100.0;
  const double min_rate = static_cast<double>(cfg.hot_key_min_rate);
  std::lock_guard<std::mutex> lock(mutex_);
  std::set<std::string>& current = hot_[cfg.name];
  if (!cfg.hot_keys || cfg.hot_key_event_percent == 0) {
    current.clear();
    return;
  }
  auto shown = [&](const std::string& key) {
    return cfg.hot_key_metrics == config::HotKeyMetrics::Plain ? common::escapeForLog(key)
                                                               : hashedKey(key);
  };
  auto record = [&](const char* kind, const std::string& key, double share, double rate,
                    std::vector<std::string> backends) {
    HotKeyEvent e;
    e.id = next_event_id_++;
    e.time_ms = common::wallClockMs();
    e.kind = kind;
    e.pool = cfg.name;
    e.key = shown(key);
    e.share = share;
    e.rate = rate;
    e.backends = std::move(backends);
    std::string where = e.backends.empty() ? std::string("-") : e.backends.front();
    // The log line's key as log_keys says, whatever hot_key_metrics shows in /metrics: one
    // setting decides what the logs hold.
    const std::string logged = cfg.log_keys == config::LogKeys::None    ? std::string("-")
                               : cfg.log_keys == config::LogKeys::Plain ? common::escapeForLog(key)
                                                                        : hashedKey(key);
    MCRING_LOG(Notice, "hot key %s: pool '%s' key %s takes %s of requests (%.0f/s) on %s", kind,
               cfg.name.c_str(), logged.c_str(), percent(share).c_str(), rate, where.c_str());
    events_.push_back(std::move(e));
    if (events_.size() > kKeepEvents) {
      events_.erase(events_.begin());
    }
  };
  std::set<std::string> still;
  for (const HotKeyRow& k : report.keys) {
    if (current.count(k.key) != 0) {
      if (k.share >= hot / 2 && k.rate >= min_rate / 2) {
        still.insert(k.key);
      } else {
        record("cooled", k.key, k.share, k.rate, k.backends);
      }
    } else if (k.share >= hot && k.rate >= min_rate) {
      record("hot", k.key, k.share, k.rate, k.backends);
      still.insert(k.key);
    }
  }
  for (const std::string& key : current) {
    if (still.count(key) == 0 && std::none_of(report.keys.begin(), report.keys.end(),
                                              [&](const HotKeyRow& k) { return k.key == key; })) {
      record("cooled", key, 0, 0, {});
    }
  }
  current = std::move(still);
}

}  // namespace mcring::core
