// Per-second gets, hits and misses in a 1024-second ring, from cumulative counters.
#include "proxy/stats/miss_timeline.h"

#include <algorithm>

namespace mcring::stats {
namespace {

// The i-th (1-based) of n near-equal integer parts of total; the parts sum to total exactly.
uint64_t share(uint64_t total, uint64_t n, uint64_t i) {
  return total / n + (i <= total % n ? 1 : 0);
}

}  // namespace

void MissTimeline::sample(int64_t second, const MissCounters& totals) {
  std::lock_guard lock(mutex_);
  if (!started_ || totals.gets < previous_.gets || totals.hits < previous_.hits ||
      totals.misses < previous_.misses) {
    started_ = true;
    previous_ = totals;
    last_second_ = second;
    return;
  }
  if (second < last_second_) {
    return;
  }
  const MissCounters delta{totals.gets - previous_.gets, totals.hits - previous_.hits,
                           totals.misses - previous_.misses};
  previous_ = totals;
  if (second == last_second_) {
    if (count_ > 0) {
      MissPoint& p = ring_[(next_ + kCapacity - 1) % kCapacity];
      p.gets += delta.gets;
      p.hits += delta.hits;
      p.misses += delta.misses;
    }
    // Without a point for this second (the first sample set the totals in it), the counts
    // belong to the second before the series starts: nothing to add them to.
    return;
  }
  const auto gap = static_cast<uint64_t>(second - last_second_);
  last_second_ = second;
  if (gap > kCapacity) {
    next_ = 0;
    count_ = 0;
    return;
  }
  for (uint64_t i = 1; i <= gap; ++i) {
    pushLocked({second - static_cast<int64_t>(gap - i), share(delta.gets, gap, i),
                share(delta.hits, gap, i), share(delta.misses, gap, i)});
  }
}

void MissTimeline::pushLocked(const MissPoint& p) {
  ring_[next_] = p;
  next_ = (next_ + 1) % kCapacity;
  count_ = std::min(count_ + 1, kCapacity);
}

std::vector<MissPoint> MissTimeline::series(size_t max_points) const {
  std::lock_guard lock(mutex_);
  const size_t n = std::min({max_points, count_, kCapacity});
  std::vector<MissPoint> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(ring_[(next_ + kCapacity - n + i) % kCapacity]);
  }
  return out;
}

size_t MissTimeline::size() const {
  std::lock_guard lock(mutex_);
  return count_;
}

void MissTimeline::clear() {
  std::lock_guard lock(mutex_);
  next_ = 0;
  count_ = 0;
  started_ = false;
}

}  // namespace mcring::stats
