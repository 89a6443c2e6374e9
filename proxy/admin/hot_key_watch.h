// HotKeyWatch: the pools' hot keys as operators read them (`GET /hotkeys`, `stats hotkeys`,
// /metrics), the per-backend request rates and their imbalance, and the events when a key turns
// hot or cools.
//
// The workers' windows are merged from the HotKeyBoard on every read (cheap: a few hundred
// entries per pool). Once a second, on the main thread, the watch samples each backend's keyed
// requests (summed over workers) into rates and checks every pool's merged keys against its
// hot_key_event_percent. Any thread reads; a mutex guards what the sampler writes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "config/topology.h"
#include "proxy/backend/hot_spread.h"
#include "proxy/net/event_loop.h"
#include "proxy/stats/backend_stats.h"
#include "proxy/stats/hot_key_board.h"

namespace mcring::core {

// A spread key's state (backend/hot_spread.h), as /hotkeys shows it.
struct HotKeySpread {
  std::string phase;                // "spreading" or "collapsing"
  std::vector<std::string> copies;  // host:port, the key's own server first
  std::vector<bool> filled;         // per copy: readable (holds the primary's value)
  std::vector<uint64_t> reads;      // per copy: plain reads it served
  uint64_t fills = 0;
  uint64_t fills_abandoned = 0;
  uint64_t writes = 0;  // writes of the key while spread (every worker)
};

struct HotKeyRow {
  std::string key;
  uint64_t count = 0;                 // in the window, over every worker
  double rate = 0;                    // requests per second
  double share = 0;                   // of the pool's keyed requests
  double error = 0;                   // the true rate is within rate ± error
  std::vector<std::string> backends;  // host:port of the servers the key goes to
  bool spread = false;                // hot_key_spread: the key is spread (spread_state says how)
  HotKeySpread spread_state;
};

struct PoolHotKeys {
  std::string pool;
  bool enabled = false;  // hot_keys
  int64_t window_start_ms = 0;
  int64_t window_end_ms = 0;
  double request_rate = 0;  // keyed requests per second, the window's
  size_t memory_bytes = 0;  // the workers' sketches for this pool
  size_t memory_bound = 0;  // what hot_key_capacity allows them
  // max/mean of the backends' keyed-request rates over the last second (1: even; 0: idle).
  double load_imbalance = 0;
  std::vector<std::pair<std::string, double>> backend_rates;  // host:port, requests per second
  std::vector<HotKeyRow> keys;                                // hottest first
  // hot_key_spread: every key of the spread set in force, listed or not (a key that cooled is
  // in it until every worker reads it from its own server again).
  std::vector<std::pair<std::string, HotKeySpread>> spread;
};

struct HotKeyEvent {
  uint64_t id = 0;
  int64_t time_ms = 0;  // unix ms
  std::string kind;     // "hot": crossed hot_key_event_percent; "cooled": below half of it
  std::string pool;
  // As hot_key_metrics shows keys: hashed unless `plain`; with `plain`, bytes other than
  // printable ASCII (and space, backslash) as \xNN (common::escapeForLog), as in the log line.
  std::string key;
  double share = 0;
  double rate = 0;
  std::vector<std::string> backends;
};

class HotKeyWatch {
 public:
  static constexpr size_t kListed = 20;     // keys per pool in /hotkeys and `stats hotkeys`
  static constexpr size_t kMetricKeys = 5;  // in /metrics, with hot_key_metrics on
  static constexpr size_t kKeepEvents = 100;

  // `topology`: the snapshot in force, from any thread (StatsReporter::topology).
  using TopologyFn = std::function<std::shared_ptr<const config::Topology>()>;
  HotKeyWatch(net::EventLoop& loop, const stats::HotKeyBoard& board, int workers,
              std::vector<const stats::BackendStatsList*> lists, TopologyFn topology);

  // Any thread.
  std::vector<PoolHotKeys> report(size_t limit = kListed) const;
  std::vector<HotKeyEvent> events() const;
  uint64_t eventCount() const;

  // Hot-key spread: where each pool's new spread set goes (the proxy posts it to every worker).
  // Set before the first second passes.
  using SpreadPublisher =
      std::function<void(const std::string& pool, std::shared_ptr<const SpreadSet> set)>;
  void setSpreadPublisher(SpreadPublisher fn) { publish_spread_ = std::move(fn); }
  // The pool's spread set in force (null: none), any thread.
  std::shared_ptr<const SpreadSet> spreadSet(const std::string& pool) const;

  // A key as hot_key_metrics `hashed` (and the logs, unless `plain`) show it: "xxh3:" and the
  // key's 64-bit XXH3 in hex.
  static std::string hashedKey(std::string_view key);
  // Whether a key can be shown as it is in a text view (a STAT line, a Prometheus label): not
  // empty, printable ASCII without spaces, and none of `escaped` (the format's quote
  // characters). Keys from binary or base64 meta clients may hold any byte.
  static bool showsAsIs(std::string_view key, std::string_view escaped = {}) {
    bool plain = !key.empty();
    for (unsigned char c : key) {
      plain = plain && c > 0x20 && c < 0x7f && escaped.find(static_cast<char>(c)) == escaped.npos;
    }
    return plain;
  }

 private:
  void sampleSecond();
  void checkEvents(const config::PoolTopology& pool, const PoolHotKeys& report);
  void planSpreads(const config::Topology& topology);

  const stats::HotKeyBoard& board_;
  int workers_;
  std::vector<const stats::BackendStatsList*> lists_;
  TopologyFn topology_;
  std::unique_ptr<net::Timer> timer_;

  mutable std::mutex mutex_;
  // Per (pool, host:port): keyed requests at the last sample, and the rate between the last two.
  std::map<std::pair<std::string, std::string>, uint64_t> last_requests_;
  std::map<std::pair<std::string, std::string>, double> rates_;
  uint64_t last_sample_ns_ = 0;
  std::map<std::string, std::set<std::string>> hot_;  // pool -> keys above its event share
  std::vector<HotKeyEvent> events_;
  std::map<std::string, std::shared_ptr<const SpreadSet>> spread_;  // pool -> set in force
  SpreadPublisher publish_spread_;
  uint64_t next_event_id_ = 1;
};

}  // namespace mcring::core
