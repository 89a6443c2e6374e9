// HotKeyBoard: where workers publish what their hot-key sketches counted, and where readers
// (the admin endpoint, `stats hotkeys`, the hot-key watch) merge it into one view per pool.
//
// Each worker counts the keys of each pool in its own HotKeySketch over windows of
// kWindowMs, aligned to the wall clock's seconds so that all workers' windows line up, and at
// the end of each window publishes a copy of the window's top keys here and starts afresh.
// Readers merge the latest window of every worker: a key's rate is the sum over workers of its
// count divided by that worker's window length. A tumbling window rather than a decayed one:
// a rate that is exactly "requests in the last second" can be checked against a load, and a key
// that cools is gone one window later.
//
// Any thread. A mutex guards the published windows; a worker takes it once per pool per window,
// never on the request path.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "proxy/stats/hot_key_sketch.h"

namespace mcring::stats {

// One worker's counts for one pool over one window.
struct HotKeyWindow {
  int64_t start_ms = 0;  // unix ms, wall clock
  int64_t end_ms = 0;
  uint64_t total = 0;  // keyed requests recorded (every key of a multi-get counts)
  uint64_t floor = 0;  // bound on the count of any key not in `top`
  size_t memory_bytes = 0;
  std::vector<HotKeySketch::Entry> top;  // highest count first
};

struct MergedHotKey {
  std::string key;
  uint64_t count = 0;  // over every worker's window
  double rate = 0;     // requests per second
  double share = 0;    // of the pool's keyed requests, 0..1
  double error = 0;    // the true rate lies within rate ± error (Space-Saving's bounds)
};

struct MergedHotKeys {
  int64_t start_ms = 0;  // the latest window (earliest start and latest end over workers)
  int64_t end_ms = 0;
  double request_rate = 0;         // the pool's keyed requests per second
  size_t memory_bytes = 0;         // all workers' sketches for the pool
  int workers = 0;                 // that published a current window
  std::vector<MergedHotKey> keys;  // highest rate first
};

class HotKeyBoard {
 public:
  static constexpr int64_t kWindowMs = 1000;

  void publish(int worker, const std::string& pool, HotKeyWindow window);
  // A pool that left the configuration (or turned detection off) in one worker.
  void withdraw(int worker, const std::string& pool);
  // The merged latest windows of `pool`, at most `limit` keys. Windows that ended more than two
  // window lengths before `now_ms` are stale (their worker stopped) and left out. Only keys the
  // sketches tell apart from the rest are listed: a key whose rate, less its error, is at most
  // the floor (what any key no sketch lists may have) could be any of the keys near the floor;
  // on a uniform stream over more keys than the sketch monitors, that is every key it holds.
  MergedHotKeys merged(const std::string& pool, int64_t now_ms, size_t limit) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, HotKeyWindow> windows_;  // (pool, worker)
};

}  // namespace mcring::stats
