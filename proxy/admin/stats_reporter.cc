// StatsReporter: memcached-style STAT lines from the worker counter table.
#include "proxy/admin/stats_reporter.h"

#include <openssl/evp.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

#include "mcring_version.h"
#include "proxy/admin/hot_key_watch.h"
#include "proxy/admin/membership_monitor.h"
#include "proxy/backend/backend_poller.h"

namespace mcring::core {

StatsReporter::StatsReporter() : start_time_(static_cast<uint64_t>(time(nullptr))) {}

uint64_t StatsReporter::uptime() const {
  return static_cast<uint64_t>(time(nullptr)) - start_time_;
}

uint64_t StatsReporter::sum(std::atomic<uint64_t> stats::WorkerCounters::*field) const {
  uint64_t total = 0;
  for (const auto* w : workers_) {
    total += (w->*field).load(std::memory_order_relaxed);
  }
  return total;
}

bool StatsReporter::render(std::string_view args, std::string* out) const {
  while (!args.empty() && args.back() == ' ') {
    args.remove_suffix(1);
  }
  if (args == "reloads") {
    renderReloads(out);
    return true;
  }
  if (args == "backends") {
    renderBackends(out);
    return true;
  }
  if (args == "events") {
    renderEvents(out);
    return true;
  }
  if (args == "hotkeys") {
    renderHotKeys(out);
    return true;
  }
  if (args == "routes") {
    renderRoutes(out);
    return true;
  }
  out->assign("ERROR\r\n");
  return false;
}

void StatsReporter::renderOwn(std::vector<std::pair<std::string, std::string>>* out) const {
  char line[160];
  auto stat = [&](const char* name, const std::string& value) { out->emplace_back(name, value); };
  uint64_t now = static_cast<uint64_t>(time(nullptr));
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  stat("pid", std::to_string(getpid()));
  stat("uptime", std::to_string(now - start_time_));
  stat("time", std::to_string(now));
  stat("mcring_version", MCRING_VERSION);
  stat("pointer_size", std::to_string(sizeof(void*) * 8));
  std::snprintf(line, sizeof(line), "%ld.%06ld", static_cast<long>(ru.ru_utime.tv_sec),
                static_cast<long>(ru.ru_utime.tv_usec));
  stat("rusage_user", line);
  std::snprintf(line, sizeof(line), "%ld.%06ld", static_cast<long>(ru.ru_stime.tv_sec),
                static_cast<long>(ru.ru_stime.tv_usec));
  stat("rusage_system", line);
  stat("threads", std::to_string(workers_.size()));
#define MCRING_X(name, kind, help) stat(#name, std::to_string(sum(&stats::WorkerCounters::name)));
  MCRING_WORKER_COUNTERS(MCRING_X)
#undef MCRING_X
  stat("rejected_connections", std::to_string(rejectedConnections()));
  stat("accept_errors", std::to_string(acceptErrors()));
  stat("admin_connections_shed", std::to_string(adminConnectionsShed()));
  stat("admin_request_timeouts", std::to_string(adminRequestTimeouts()));
  stat("admin_requests_refused", std::to_string(adminRequestsRefused()));
  stat("config_generation", std::to_string(generation_.load(std::memory_order_relaxed)));
  if (auto topo = topology()) {
    // Each pool's ring identity (config/topology_hash.h): equal on proxies that place alike.
    for (const auto& pool : topo->pools) {
      if (!pool->topology_hash.empty()) {
        out->emplace_back("pool:" + pool->config.name + ":topology_hash", pool->topology_hash);
      }
    }
  }
  if (reloads_ != nullptr) {
    stat("reloads", std::to_string(reloads_->attempts()));
    stat("reload_failures", std::to_string(reloads_->failures()));
    std::string last = reloads_->lastError();
    if (!last.empty()) {
      // One token, as every value of memcached's `stats`: exporters split STAT lines on spaces
      // and reject a line of more than three (`stats reloads` and /reloads have the text).
      for (char& c : last) {
        if (c == ' ' || c == '\r' || c == '\n' || c == '\t') {
          c = '_';
        }
      }
      stat("reload_last_error", last);
    }
  }
}

std::vector<PoolReport> StatsReporter::backendReport() const {
  std::shared_ptr<const config::Topology> topology;
  std::set<std::pair<std::string, std::string>> ejected;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    topology = topology_;
    ejected = ejected_;
  }
  if (!topology) {
    return {};
  }
  std::map<std::pair<std::string, std::string>, BackendItems> items;
  if (poller_ != nullptr) {
    items = poller_->snapshot();
  }
  return buildBackendReport(*topology, backend_lists_, items, ejected);
}

std::vector<RouteRow> StatsReporter::routeReport() const {
  std::shared_ptr<const config::Topology> topology = this->topology();
  if (!topology) {
    return {};
  }
  return buildRouteReport(*topology, routeStats());
}

// `stats routes`: one block per route of the topology in force (route_report.h).
void StatsReporter::renderRoutes(std::string* out) const {
  appendRouteStatLines(routeReport(), out);
}

// `stats backends`: one block per backend, `STAT <pool>:<server>:<field> <value>`, then the
// pool's imbalance (max/mean) lines.
void StatsReporter::renderBackends(std::string* out) const {
  char buf[64];
  auto line = [&](const std::string& prefix, const char* field, const std::string& value) {
    out->append("STAT " + prefix + field + " " + value + "\r\n");
  };
  auto num = [&](double v) {
    std::snprintf(buf, sizeof(buf), "%.4f", v);
    return std::string(buf);
  };
  for (const PoolReport& pool : backendReport()) {
    for (const BackendRow& b : pool.backends) {
      std::string p = pool.pool + ":" + b.totals.identity + ":";
      line(p, "name", b.totals.name);
      line(p, "in_topology", b.in_topology ? "1" : "0");
      line(p, "ejected", b.ejected ? "1" : "0");
      line(p, "ownership", num(b.ownership));
#define MCRING_X(field, kind, help) line(p, #field, std::to_string(b.totals.field));
      MCRING_BACKEND_COUNTERS(MCRING_X)
#undef MCRING_X
      line(p, "distinct_keys", std::to_string(static_cast<uint64_t>(b.totals.distinct_keys)));
      line(p, "latency_p50_us", std::to_string(b.p50));
      line(p, "latency_p90_us", std::to_string(b.p90));
      line(p, "latency_p99_us", std::to_string(b.p99));
      line(p, "latency_p999_us", std::to_string(b.p999));
      line(p, "curr_items", std::to_string(b.items.curr_items));
      line(p, "bytes", std::to_string(b.items.bytes));
      line(p, "evictions", std::to_string(b.items.evictions));
      line(p, "items_updated", std::to_string(b.items.updated));
    }
    std::string p = pool.pool + ":imbalance:";
    line(p, "requests", num(pool.imbalance.requests));
    line(p, "distinct_keys", num(pool.imbalance.distinct_keys));
    line(p, "ownership", num(pool.imbalance.ownership));
    line(p, "curr_items", num(pool.imbalance.items));
  }
  out->append("END\r\n");
}

// `stats events`: one line per membership event with prediction, measurement and verdict.
void StatsReporter::renderEvents(std::string* out) const {
  if (monitor_ != nullptr) {
    char buf[512];
    for (const MembershipEvent& e : monitor_->events()) {
      std::snprintf(buf, sizeof(buf),
                    "STAT event:%llu time=%lld kind=%s pool=%s servers=%zu->%zu "
                    "predicted_moved=%.4f modula_moved=%.4f method=%s baseline_miss=%.4f "
                    "peak_miss=%.4f spike=%d recovered=%d recovery_s=%lld extra_misses=%.0f "
                    "judged=%d warmup_ms=%u ideal_moved=%.4f excess_move=%d",
                    static_cast<unsigned long long>(e.id), static_cast<long long>(e.time),
                    e.kind.c_str(), e.pool.c_str(), e.servers_before, e.servers_after,
                    e.predicted_moved, e.modula_moved, e.method.c_str(), e.measured.baseline,
                    e.measured.peak, e.measured.spike ? 1 : 0, e.measured.recovered ? 1 : 0,
                    static_cast<long long>(e.measured.recovery_seconds), e.measured.extra_misses,
                    e.judged ? 1 : 0, e.warmup_window_ms, e.ideal_moved, e.warning.empty() ? 0 : 1);
      out->append(buf);
      out->append("\r\n");
    }
  }
  out->append("END\r\n");
}

// `stats hotkeys`: what GET /hotkeys shows, per pool one summary line, then one line per key
// (a spread key's line ends with spread=<phase> copies=.. filled=.. reads=.. fills=..),
// hottest first:
//   STAT hotkeys:<pool> enabled=1 window_start_ms=.. window_end_ms=.. request_rate=..
//        load_imbalance=.. memory_bytes=.. memory_bound=..
//   STAT hotkey:<pool>:<rank> key=<key> (key_b64=<base64> if it holds spaces, control or
//        non-ASCII bytes) rate=<req/s> share=<0..1> error=<req/s> count=..
//        backends=<host:port,...>
namespace {

// " key=<key>", or " key_b64=<base64>" for a key with bytes a STAT line cannot carry as they are
// (a binary or meta-base64 client's key may hold spaces, CR, LF: "x\r\nEND\r\n" would end the
// reply early and forge lines for the reader's next request).
std::string hotKeyField(const std::string& key) {
  if (HotKeyWatch::showsAsIs(key)) {
    return " key=" + key;
  }
  std::string b64(4 * ((key.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(b64.data()),
                          reinterpret_cast<const unsigned char*>(key.data()),
                          static_cast<int>(key.size()));
  b64.resize(static_cast<size_t>(n));
  return " key_b64=" + b64;
}

}  // namespace

void StatsReporter::renderHotKeys(std::string* out) const {
  if (hot_keys_ != nullptr) {
    char buf[256];
    for (const PoolHotKeys& p : hot_keys_->report()) {
      std::snprintf(buf, sizeof(buf),
                    " enabled=%d window_start_ms=%lld window_end_ms=%lld request_rate=%.1f "
                    "load_imbalance=%.3f memory_bytes=%zu memory_bound=%zu\r\n",
                    p.enabled ? 1 : 0, static_cast<long long>(p.window_start_ms),
                    static_cast<long long>(p.window_end_ms), p.request_rate, p.load_imbalance,
                    p.memory_bytes, p.memory_bound);
      out->append("STAT hotkeys:" + p.pool + buf);
      size_t rank = 0;
      for (const HotKeyRow& k : p.keys) {
        std::snprintf(buf, sizeof(buf),
                      " rate=%.1f share=%.4f error=%.1f count=%llu backends=", k.rate, k.share,
                      k.error, static_cast<unsigned long long>(k.count));
        out->append("STAT hotkey:" + p.pool + ":" + std::to_string(++rank) + hotKeyField(k.key) +
                    buf);
        for (size_t i = 0; i < k.backends.size(); ++i) {
          out->append(i == 0 ? "" : ",");
          out->append(k.backends[i]);
        }
        if (k.spread) {
          // spread=<phase> copies=a,b,.. filled=1,0,.. (per copy) reads=n,n,..
          const HotKeySpread& sp = k.spread_state;
          std::string copies, filled, reads;
          for (size_t i = 0; i < sp.copies.size(); ++i) {
            copies += (i == 0 ? "" : ",") + sp.copies[i];
            filled += std::string(i == 0 ? "" : ",") + (sp.filled[i] ? "1" : "0");
            reads += (i == 0 ? "" : ",") + std::to_string(sp.reads[i]);
          }
          out->append(" spread=" + sp.phase + " copies=" + copies + " filled=" + filled +
                      " reads=" + reads + " fills=" + std::to_string(sp.fills) +
                      " fills_abandoned=" + std::to_string(sp.fills_abandoned));
        }
        out->append("\r\n");
      }
    }
  }
  out->append("END\r\n");
}

// `stats reloads`: one STAT line per recent attempt, oldest first:
//   STAT reload:<id> time=<unix> source=<s> result=<r> generation=<g> diff="..." error="..."
void StatsReporter::renderReloads(std::string* out) const {
  if (reloads_ != nullptr) {
    for (const ReloadRecord& r : reloads_->recent()) {
      out->append("STAT reload:" + std::to_string(r.id) + " time=" + std::to_string(r.time) +
                  " source=" + r.source + " result=" + reloadResultName(r.result) +
                  " generation=" + std::to_string(r.generation));
      if (!r.diff.empty()) {
        out->append(" diff=\"" + r.diff + "\"");
      }
      if (!r.error.empty()) {
        out->append(" error=\"" + r.error + "\"");
      }
      out->append("\r\n");
    }
  }
  out->append("END\r\n");
}

}  // namespace mcring::core
