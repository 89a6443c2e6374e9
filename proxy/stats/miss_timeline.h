// Per-second gets, hits and misses for the last 1024 seconds (17 minutes), in fixed memory.
//
// Fed once a second by a timer that sums the workers' cumulative counters (cmd_get, get_hits,
// get_misses) and calls sample(); the timeline keeps the per-second differences in a ring.
// Threading: every method takes an internal mutex, so the sampling timer and a reader on another
// thread (admin endpoint, `mcring plan` reports) may call it concurrently. It is touched once a
// second and on demand, never on the request path.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace mcring::stats {

// One second of retrieval traffic.
struct MissPoint {
  int64_t second = 0;   // which second, on the clock the caller samples with
  uint64_t gets = 0;    // keys requested (cmd_get)
  uint64_t hits = 0;    // keys found (get_hits)
  uint64_t misses = 0;  // keys not found (get_misses)

  // Lookups answered in this second. gets are counted when a request arrives and hits/misses
  // when its reply does, so hits + misses (not gets) is the denominator of the miss ratio.
  uint64_t lookups() const { return hits + misses; }
  // misses / (hits + misses); 0 for a second with no answered lookup.
  double missRatio() const {
    return lookups() == 0 ? 0.0 : static_cast<double>(misses) / static_cast<double>(lookups());
  }
};

// Cumulative totals since the proxy started, summed over workers.
struct MissCounters {
  uint64_t gets = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
};

class MissTimeline {
 public:
  static constexpr size_t kCapacity = 1024;  // seconds kept

  // Records totals - (previous totals) as second `second`. Meant to be called once per second
  // with a monotonic second count; the irregular cases:
  // - the first call only sets the starting totals;
  // - the same second again adds to that second's point;
  // - a skipped stretch (second > last + 1, timer late) spreads the difference evenly over the
  //   skipped seconds, since when in the stretch it happened is unknown; a stretch longer than
  //   the ring clears the ring;
  // - an earlier second (clock stepped back) is ignored, keeping the previous totals, so its
  //   counts land in the next accepted sample;
  // - any total lower than before (counters reset) restarts from these totals, recording nothing.
  void sample(int64_t second, const MissCounters& totals);

  // The last `max_points` seconds recorded (at most kCapacity), oldest first, one point per
  // second with no gaps.
  std::vector<MissPoint> series(size_t max_points = kCapacity) const;

  size_t size() const;
  void clear();

 private:
  void pushLocked(const MissPoint& p);

  mutable std::mutex mutex_;
  std::array<MissPoint, kCapacity> ring_{};  // guarded by mutex_
  size_t next_ = 0;                          // ring_ index of the next point to write
  size_t count_ = 0;                         // points held, <= kCapacity
  bool started_ = false;                     // previous_ and last_second_ are set
  MissCounters previous_;
  int64_t last_second_ = 0;
};

}  // namespace mcring::stats
